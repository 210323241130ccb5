"""Events the database could not take, kept to be stored later (records.apply_event stores them).

The spool is `<data dir>/spool/`: one JSON file per event the database could not take (locked
past the busy timeout, read-only, full). The next hook, worker or `doctor --fix` stores them,
oldest first (`drain_spool`), so nothing is lost that could have been kept.

Standard library only: the hooks import this.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time

from claude_mem.logs import log_line
from claude_mem.store.records import apply_event

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

    from claude_mem.settings import Config


def spool_event(config: Config, record: dict[str, Any]) -> str:
    from claude_mem.jsonfile import write_json_atomic  # spooling is rare: the prompt hook drains, and need not load it

    os.makedirs(config.spool_dir, mode=0o700, exist_ok=True)
    path = os.path.join(config.spool_dir, f"{time.time_ns()}-{os.getpid()}.json")
    write_json_atomic(path, record)  # its temporary file does not end in .json: `spooled` skips it
    return path


def spooled(config: Config) -> list[str]:
    """The spooled events' file names, oldest first (not the lock, half-written files or bad/)."""
    try:
        return sorted(n for n in os.listdir(config.spool_dir) if n.endswith(".json") and not n.startswith("."))
    except OSError:
        return []


def drain_spool(config: Config, conn: sqlite3.Connection) -> int:
    """Replay spooled events into the database, oldest first; returns how many were stored.
    One process drains at a time (a flock on spool/.lock; the others leave it to that one), so
    an event is not stored twice. A file that cannot be read or stored is moved aside to
    spool/bad/, not deleted. Database errors (locked, read-only, full) propagate: the files
    not yet stored stay for the next drain."""
    names = spooled(config)
    if not names:
        return 0
    lock_fd = _lock_spool(config)
    if lock_fd is None:
        return 0
    stored = 0
    try:
        for name in names:
            path = os.path.join(config.spool_dir, name)
            try:
                with open(path, encoding="utf-8") as fh:
                    record = json.load(fh)
                if not isinstance(record, dict) or "session_id" not in record or "type" not in record:
                    raise ValueError("not a spooled event")
                apply_event(conn, record)
            except FileNotFoundError:
                continue  # another process drained it
            except (OSError, ValueError, KeyError, TypeError, sqlite3.IntegrityError) as exc:
                _set_aside(config, name, exc)
                continue
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
            stored += 1
    finally:
        os.close(lock_fd)
    return stored


def _lock_spool(config: Config) -> int | None:
    """An fd holding the spool's drain lock, or None when another process holds it (or the
    spool cannot be written, so its files could not be removed once stored)."""
    try:
        fd = os.open(os.path.join(config.spool_dir, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no lock
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def _set_aside(config: Config, name: str, exc: Exception) -> None:
    bad = os.path.join(config.spool_dir, "bad")
    try:
        os.makedirs(bad, mode=0o700, exist_ok=True)
        os.replace(os.path.join(config.spool_dir, name), os.path.join(bad, name))
    except OSError:
        pass
    log_line(config.logs_dir, "spool", f"error: {name} set aside ({type(exc).__name__}: {exc})")
