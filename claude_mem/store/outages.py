"""A session's model outage: since when its observer could not reach the model, how many tries
in a row failed, and the latest reason. Transient failures are recorded here instead of against
the events, which lose no attempt to an outage; the first good reply clears the record.

Standard library only.
"""

from __future__ import annotations

import enum
import sqlite3
from typing import Any

from claude_mem.store import queue
from claude_mem.store.db import now_ms


class Failure(enum.StrEnum):
    """Why the observer gave no usable reply (worker/faults.py says which ones are outages). Kept
    as the first word of `sdk_sessions.observer_error`; one enumeration, so a misspelt class is an
    AttributeError where it is written, not a silent retry forever where it is read."""

    AUTH = "auth"
    OVERLOADED = "overloaded"
    RATE_LIMIT = "rate_limit"
    TIMEOUT = "timeout"
    INVALID_REQUEST = "invalid_request"
    API_ERROR = "api_error"
    KILLED = "killed"
    START_FAILED = "start_failed"
    CANNOT_START = "cannot_start"
    CRASHED = "crashed"
    EMPTY = "empty"
    UNPARSEABLE = "unparseable"  # the worker's own: a reply that would not parse after a nudge
    OVER_BUDGET = "budget"  # the worker's own: today's observer_daily_tokens are spent


# The failure classes that waiting will not fix: no login, and a Claude CLI that cannot be run at
# all. Every other class is an outage.
NO_MODEL = frozenset({Failure.AUTH, Failure.CANNOT_START})


def record_failure(conn: sqlite3.Connection, session_id: str, message: str) -> tuple[int, int]:
    """Count one more failed try; returns (tries failed in a row, outage start in epoch ms)."""
    now = now_ms()
    row = conn.execute(
        "UPDATE sdk_sessions SET observer_error = ?, observer_error_at_epoch = ?,"
        " outage_since_epoch = COALESCE(outage_since_epoch, ?), outage_failures = outage_failures + 1"
        " WHERE claude_session_id = ? RETURNING outage_failures, outage_since_epoch",
        (message[:500], now, now, session_id)).fetchone()
    return (int(row[0]), int(row[1])) if row else (1, now)


def clear(conn: sqlite3.Connection, session_id: str) -> int | None:
    """End the session's outage; returns when it had started, or None when there was none."""
    row = conn.execute(
        "SELECT outage_since_epoch, observer_error FROM sdk_sessions WHERE claude_session_id = ?", (session_id,)).fetchone()
    if row is None or (row[0] is None and row[1] is None):
        return None
    conn.execute(
        "UPDATE sdk_sessions SET observer_error = NULL, outage_since_epoch = NULL, outage_failures = 0"
        " WHERE claude_session_id = ?", (session_id,))
    return row[0] or now_ms()


_COLUMNS = "claude_session_id, observer_error, observer_error_at_epoch, outage_since_epoch, outage_failures"


def current(conn: sqlite3.Connection, limit: int = 5) -> list[dict[str, Any]]:
    """Sessions whose observer cannot reach the model, latest failure first, each with how many
    of its events wait and when the next try is due."""
    return _with_waiting(conn, [dict(r) for r in conn.execute(
        f"SELECT {_COLUMNS} FROM sdk_sessions WHERE observer_error IS NOT NULL ORDER BY observer_error_at_epoch DESC LIMIT ?",
        (limit,))])


def for_session(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    rows = _with_waiting(conn, [dict(r) for r in conn.execute(
        f"SELECT {_COLUMNS} FROM sdk_sessions WHERE observer_error IS NOT NULL AND claude_session_id = ?", (session_id,))])
    return rows[0] if rows else None


def _with_waiting(conn: sqlite3.Connection, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    waiting = queue.waiting_by_session(conn, [r["claude_session_id"] for r in rows])
    for r in rows:
        r["outage_since_epoch"] = r["outage_since_epoch"] or r["observer_error_at_epoch"]
        r.update(waiting.get(r["claude_session_id"], {"waiting": 0, "next_try_epoch": None}))
    return rows


def describe(outage: dict[str, Any], when: Any) -> str:
    """One line for people: "model unreachable since 2026-11-22 14:02, 12 events waiting (overloaded: ...)",
    or "model cannot be used since ..." for a class waiting will not fix. `when` formats an epoch-ms time."""
    n = outage["waiting"]
    unusable = str(outage["observer_error"] or "").split(":", 1)[0] in NO_MODEL
    head = "model cannot be used" if unusable else "model unreachable"
    line = f"{head} since {when(outage['outage_since_epoch'])}, {n} event{'' if n == 1 else 's'} waiting"
    if n and outage.get("next_try_epoch"):
        line += f", next try {when(outage['next_try_epoch'])}"
    return f"{line} ({outage['observer_error']})"
