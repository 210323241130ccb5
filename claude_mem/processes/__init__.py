"""Our processes: the locks that say one is alive, and starting one detached. Standard library
only: hooks probe the worker and service locks (psutil costs ~25 ms to import) and start workers
and the service. Which running processes are ours, and stopping them, is census.py (psutil).

A live worker or memory service holds an exclusive flock on a file of its own for its whole
life: the kernel drops it when the process dies, even on kill -9, so a lock never goes stale and
says "alive" without a pid file to trust. Probing one (`lock_held`) takes a shared lock for
microseconds.

A detached start runs `python -m claude_mem ARGS` in a process session of its own, no stdin, its
output appended to a log file, working in the data folder; nothing waits for the child. A hook
spawns with os.posix_spawn, without subprocess.
"""

from __future__ import annotations

import os
import sys

if sys.platform != "win32":
    import fcntl
else:  # pragma: no cover - claude-mem targets POSIX; Windows falls back to pid files
    fcntl = None

# Set by the hook dispatcher (hooks.py): a hook has no thread of its own and exits within
# milliseconds, so nothing sees its working folder move while it spawns, and the init process
# reaps its children. Every other process starts them through subprocess and reaps them itself.
HOOK_PROCESS = False


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


def unheld_locks(folder: str) -> list[str]:
    """The lock files in `folder` nobody holds. Harmless (a lock cannot outlive its process), but clutter."""
    import glob  # fnmatch and re with it: off the hook path

    stale = []
    for path in glob.glob(os.path.join(folder, "*.lock")):
        fd = os.open(path, os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            stale.append(path)
        finally:
            os.close(fd)
    return stale

def spawn_detached(data_dir: str, log_file: str, args: list[str], env: dict[str, str] | None = None) -> int:
    """Start `python -m claude_mem ARGS` detached, its output appended to `log_file`, working in
    `data_dir`. Returns the child's pid."""
    os.makedirs(os.path.dirname(log_file), mode=0o700, exist_ok=True)
    log_fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    argv = [sys.executable, "-m", "claude_mem", *args]
    try:
        if HOOK_PROCESS and hasattr(os, "posix_spawn"):
            return _posix_spawn(data_dir, log_fd, argv, env)
        return _popen(data_dir, log_fd, argv, env)
    finally:
        os.close(log_fd)


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
