"""Rows no worker is left to take: a session's due events with no live worker (its worker was
killed, stopped, or exited idle while its events waited out an outage's backoff, and its own
session may never send another hook). Whatever runs next — any hook of this data dir but
SessionStart's (the digest stays light, and the first prompt's hook follows), `status`, the
viewer, `doctor --fix` — calls `revive`, which starts their workers.

On the hook path: standard library only, and cheap: one index-only range scan, then a lock probe
per candidate session.
"""

from __future__ import annotations

import os
import sqlite3
import time

from claude_mem.settings import Config
from claude_mem.store import queue
from claude_mem.store.db import now_ms
from claude_mem.worker import spawn

# A row younger than this may belong to a worker a hook has just spawned and that has not taken
# its lock yet (starting Python and the worker takes ~1 s): not stranded.
GRACE_MS = 5000
MAX_SESSIONS = 4  # per call; the next caller picks up more
# Hooks look at most this often (a stat of a marker file otherwise): the scan grows with the
# due rows of live sessions (~1 ms per 1,000 here), and stranded rows can wait a few seconds.
HOOK_EVERY_S = 5.0
MARKER = ".stranded-checked"


def stranded_sessions(conn: sqlite3.Connection, workers_dir: str, *, grace_ms: int = GRACE_MS,
                      limit: int = MAX_SESSIONS) -> list[str]:
    """Sessions with due rows, no live worker, and a row left untouched for `grace_ms`."""
    now = now_ms()
    return [sid for sid in queue.due_sessions(conn, now, limit)
            if not spawn.worker_alive(workers_dir, sid) and queue.untouched_since(conn, sid, now - grace_ms)]


def revive(config: Config, conn: sqlite3.Connection, exclude: str | None = None, *, throttle: bool = False) -> list[str]:
    """Start a worker for each stranded session but `exclude` (a session the caller starts a
    worker for anyway), unless worker_autostart is off; returns the sessions it started one for.
    `throttle` (hooks): skip the look when any process looked less than HOOK_EVERY_S ago."""
    if not config.worker_autostart or (throttle and not _due_for_a_look(config.workers_dir)):
        return []
    started = []
    for sid in stranded_sessions(conn, config.workers_dir):
        if sid == exclude:
            continue
        if spawn.ensure_worker(config.data_dir, config.workers_dir, config.logs_dir, sid, config.max_workers) is not None:
            started.append(sid)
    return started


def _due_for_a_look(workers_dir: str) -> bool:
    marker = os.path.join(workers_dir, MARKER)
    try:
        if time.time() - os.stat(marker).st_mtime < HOOK_EVERY_S:
            return False
        os.utime(marker)
    except FileNotFoundError:
        try:
            os.makedirs(workers_dir, mode=0o700, exist_ok=True)
            os.close(os.open(marker, os.O_WRONLY | os.O_CREAT, 0o600))
        except OSError:
            pass
    except OSError:
        pass
    return True


def start_workers(config: Config, sessions: list[str]) -> list[str]:
    """Start a worker for each session (unless one runs, or every slot is taken: it then waits its
    turn); with worker_autostart off, none: returns what to tell the user instead."""
    if not config.worker_autostart:
        return [f"worker_autostart is off: run `claude-mem worker --session ID` for {', '.join(sessions)}"]
    for sid in sessions:
        spawn.ensure_worker(config.data_dir, config.workers_dir, config.logs_dir, sid, config.max_workers)
    return []
