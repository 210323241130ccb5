"""Starting one detached worker per session, and knowing whether one is alive.

A live worker holds an exclusive flock on `<data dir>/workers/<session>.lock` for its whole
life (claude_mem/processes); hooks probe it. The worker itself is the single-instance guard: it
exits at once if it cannot take the lock, so two racing hooks that both spawn still leave exactly
one worker. `<session>.json` beside the lock records pid and process create time for
`claude-mem workers` (`list_workers` checks them with psutil, off the hook path). A worker also
holds one of `max_workers` slot locks.

On the hook path: standard library only.
"""

from __future__ import annotations

import os

from claude_mem.processes import lock_held, spawn_detached, take_lock

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

    from claude_mem.settings import Config


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


def acquire_lock(workers_dir: str, session_id: str, wait_s: float = 1.0) -> int | None:
    """Take the session's worker lock; returns the fd to keep open, or None if another worker holds it."""
    return take_lock(lock_path(workers_dir, session_id), wait_s)


# --- the cap on concurrent workers ----------------------------------------------------------
# A worker holds one of `max_workers` slot locks for its life (workers/slots/N.lock): the
# sixteenth Claude Code window must not mean sixteen workers and sixteen observer CLIs. A session
# beyond the cap waits in the durable queue; an exiting worker starts the oldest waiting one
# (hand_off), and an idle one gives its slot up to it (slot_wanted).

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


def slot_wanted(conn: sqlite3.Connection, workers_dir: str, max_workers: int, session_id: str) -> bool:
    """Another session has due events and no worker while every slot is taken: an idle worker
    then gives its slot up instead of idling in it."""
    from claude_mem.store import queue
    from claude_mem.store.db import now_ms

    if slots_in_use(workers_dir, max_workers) < max_workers:
        return False
    return any(sid != session_id and not worker_alive(workers_dir, sid)
               for sid in (w["session_id"] for w in queue.waiting_sessions(conn, due_by=now_ms())))


def hand_off(config: Config, session_id: str) -> None:
    """A worker exiting with its slot free starts the session that has waited longest,
    `session_id` first: events that came after its last look found its lock held and started
    no worker."""
    import sqlite3

    from claude_mem.store import queue
    from claude_mem.store.db import connect, now_ms

    if not config.worker_autostart:
        return
    try:
        conn = connect(config.db_path)
        try:
            waiting = [w["session_id"] for w in queue.waiting_sessions(conn, due_by=now_ms())]
        finally:
            conn.close()
    except sqlite3.Error:
        return
    for sid in sorted(waiting, key=lambda sid: sid != session_id):
        if ensure_worker(config.data_dir, config.workers_dir, config.logs_dir, sid, config.max_workers) is not None:
            return


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


class WorkerInfo:
    """A worker as its info file records it, and whether that process still runs."""

    __slots__ = ("session_id", "pid", "create_time", "started_at_epoch", "synthesizer", "alive", "info_file")

    def __init__(self, session_id: str, pid: int, create_time: float, started_at_epoch: int, synthesizer: str | None,
                 alive: bool, info_file: str) -> None:
        self.session_id = session_id
        self.pid = pid
        self.create_time = create_time
        self.started_at_epoch = started_at_epoch
        self.synthesizer = synthesizer
        self.alive = alive
        self.info_file = info_file

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if k != "info_file"}


def list_workers(workers_dir: str) -> list[WorkerInfo]:
    """Every worker with an info file; `alive` when its process (pid and create time) holds its lock."""
    import glob  # fnmatch and re with it: never on the hook path, nor psutil
    import json

    from claude_mem.processes.census import same_process

    found = []
    for path in sorted(glob.glob(os.path.join(workers_dir, "*.json"))):
        try:
            with open(path, encoding="utf-8") as fh:
                info = json.load(fh)
            session_id, pid, create_time = info["session_id"], int(info["pid"]), float(info["create_time"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        alive = same_process(pid, create_time) and worker_alive(workers_dir, session_id)
        found.append(WorkerInfo(session_id, pid, create_time, int(info.get("started_at_epoch") or 0),
                                info.get("synthesizer"), alive, path))
    return found
