"""Starting one detached worker per session, and knowing whether one is alive.

A live worker holds an exclusive flock on `<data dir>/workers/<session>.lock` for its whole
life; the kernel drops it when the process dies, even on kill -9, so a lock can never go
stale. Hooks probe it without psutil (~25 ms to import). The worker itself is the
single-instance guard: it exits at once if it cannot take the lock, so two racing hooks that
both spawn still leave exactly one worker. `<session>.json` beside the lock records pid and
process create time for `claude-mem workers` (psutil checks them there, off the hook path).

On the hook path: standard library only (a hook spawns with os.posix_spawn, without subprocess).
"""

from __future__ import annotations

import os
import sys

if sys.platform != "win32":
    import fcntl
else:  # pragma: no cover - claude-mem targets POSIX; Windows falls back to pid files
    fcntl = None


def session_key(session_id: str) -> str:
    """A file-name-safe key for a session id (ids come from outside)."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in session_id)[:64]
    if safe == session_id:
        return safe
    import hashlib  # only for odd ids: ~3 ms the hook path need not pay

    return f"{safe}-{hashlib.sha1(session_id.encode('utf-8', 'replace')).hexdigest()[:10]}"


def lock_path(workers_dir: str, session_id: str) -> str:
    return os.path.join(workers_dir, session_key(session_id) + ".lock")


def info_path(workers_dir: str, session_id: str) -> str:
    return os.path.join(workers_dir, session_key(session_id) + ".json")


def worker_alive(workers_dir: str, session_id: str) -> bool:
    """True while some process holds the session's worker lock."""
    return lock_held(lock_path(workers_dir, session_id))


def lock_held(path: str) -> bool:
    """True while some process holds an exclusive flock on `path` (probed with a shared one)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def take_lock(path: str, wait_s: float = 0.0) -> int | None:
    """Take an exclusive flock on `path`; returns the fd to keep open, or None if another process
    holds it after `wait_s` (retried briefly: a liveness probe holds it shared for microseconds)."""
    import time

    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


def acquire_lock(workers_dir: str, session_id: str, wait_s: float = 1.0) -> int | None:
    """Take the session's worker lock; returns the fd to keep open, or None if another worker holds it."""
    return take_lock(lock_path(workers_dir, session_id), wait_s)


# --- the cap on concurrent workers ----------------------------------------------------------
# A worker holds one of `max_workers` slot locks for its life (workers/slots/N.lock): the
# sixteenth Claude Code window must not mean sixteen workers and sixteen observer CLIs. A session
# beyond the cap waits in the durable queue; an exiting worker starts the oldest waiting one.

def slot_path(workers_dir: str, slot: int) -> str:
    return os.path.join(workers_dir, "slots", f"{slot}.lock")


def slots_in_use(workers_dir: str, max_workers: int) -> int:
    return sum(lock_held(slot_path(workers_dir, n)) for n in range(max_workers))


def take_slot(workers_dir: str, max_workers: int) -> int | None:
    """An fd holding a free worker slot, or None when all `max_workers` are taken."""
    for n in range(max_workers):
        fd = take_lock(slot_path(workers_dir, n))
        if fd is not None:
            return fd
    return None


def spawn_detached(data_dir: str, log_file: str, args: list[str], env: dict[str, str] | None = None) -> int:
    """Start `python -m claude_mem ARGS` detached: its own process session, no stdin, output
    appended to `log_file`, working in `data_dir`. Returns the child's pid."""
    os.makedirs(os.path.dirname(log_file), mode=0o700, exist_ok=True)
    log_fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    argv = [sys.executable, "-m", "claude_mem", *args]
    try:
        if HOOK_PROCESS and hasattr(os, "posix_spawn"):
            return _posix_spawn(data_dir, log_fd, argv, env)
        return _popen(data_dir, log_fd, argv, env)
    finally:
        os.close(log_fd)


# Set by the hook dispatcher (hooks.py): a hook has no thread of its own and exits within
# milliseconds, so nothing sees its working folder move while it spawns, and the init process
# reaps its children. Every other process starts them through subprocess and reaps them itself.
HOOK_PROCESS = False


def _posix_spawn(data_dir: str, log_fd: int, argv: list[str], env: dict[str, str] | None) -> int:
    """The hook's way: no `subprocess` to import and no pipe to wait on (~10 ms of the hook's
    ~30). posix_spawn has no working-folder action before Python 3.13, so the hook steps into
    `data_dir` for the spawn, and back where it was at once."""
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0), (os.POSIX_SPAWN_DUP2, log_fd, 1),
               (os.POSIX_SPAWN_DUP2, log_fd, 2)]
    here = os.open(".", os.O_RDONLY)
    try:
        os.chdir(data_dir)
        return os.posix_spawn(argv[0], argv, os.environ if env is None else env, file_actions=actions, setsid=True)
    finally:
        os.fchdir(here)
        os.close(here)


def _popen(data_dir: str, log_fd: int, argv: list[str], env: dict[str, str] | None) -> int:
    import subprocess

    kwargs: dict = {}
    if sys.platform == "win32":  # pragma: no cover
        kwargs["creationflags"] = subprocess.DETACHED_PROCESS | subprocess.CREATE_NO_WINDOW
    else:
        kwargs["start_new_session"] = True
    child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log_fd, stderr=log_fd, close_fds=True, cwd=data_dir,
                             env=env, **kwargs)
    # A long-lived spawner (the MCP server, the viewer, a worker) would keep a child that exits
    # before it as a zombie: a daemon thread reaps it. A hook exits first anyway.
    import threading

    threading.Thread(target=child.wait, name="reap-detached", daemon=True).start()
    return child.pid


def spawn_worker(data_dir: str, logs_dir: str, session_id: str, env: dict[str, str] | None = None) -> int:
    """Start `claude-mem worker --session ID` detached, its output in the session's log file."""
    log_file = os.path.join(logs_dir, f"worker-{session_key(session_id)}.log")
    env = {**os.environ, **(env or {}), "CLAUDE_MEM_DATA_DIR": data_dir}  # the folder asked about, whatever ours is
    return spawn_detached(data_dir, log_file, ["worker", "--session", session_id], env)


def ensure_worker(data_dir: str, workers_dir: str, logs_dir: str, session_id: str, max_workers: int = 4) -> int | None:
    """Spawn a worker for the session unless one is alive or every worker slot is taken (the
    session then waits; an exiting worker starts it). Returns the new pid, if any."""
    if worker_alive(workers_dir, session_id) or slots_in_use(workers_dir, max_workers) >= max_workers:
        return None
    return spawn_worker(data_dir, logs_dir, session_id)
