"""The event queue's rows read back whole, as `QueuedEvent` records: the worker's batches and
turns, and `claude-mem queue`. (What hooks put in, and how a row's status moves: store/queue.py.)

Off the hook path, apart from queue.py: the records' module costs a hook ~7 ms to import.
"""

from __future__ import annotations

import sqlite3

from claude_mem.store.queue import QueueStatus
from claude_mem.store.rows import QueuedEvent, columns

COLUMNS = columns(QueuedEvent)  # in the record's order: `claude-mem queue --json` lists them so


def _records(cursor: sqlite3.Cursor) -> list[QueuedEvent]:
    return [QueuedEvent.from_row(r) for r in cursor]


def list_rows(conn: sqlite3.Connection, *, session_id: str | None = None,
              status: QueueStatus | None = None, limit: int | None = None) -> list[QueuedEvent]:
    clauses, params = [], []
    if session_id:
        clauses.append("session_id = ?")
        params.append(session_id)
    if status:
        clauses.append("status = ?")
        params.append(status.value)
    sql = f"SELECT {COLUMNS} FROM observation_queue"
    if clauses:
        sql += " WHERE " + " AND ".join(clauses)
    sql += " ORDER BY id"
    if limit:
        sql += f" LIMIT {int(limit)}"
    return _records(conn.execute(sql, params))


def turn_tool_rows(conn: sqlite3.Connection, session_id: str, prompt_number: int) -> list[QueuedEvent]:
    """The tool events of one turn, in order (the write guard's context: worker/guarding.py)."""
    return _records(conn.execute(
        f"SELECT {COLUMNS} FROM observation_queue WHERE session_id = ? AND prompt_number = ? AND kind = 'tool' ORDER BY id",
        (session_id, prompt_number)))


def next_pending(conn: sqlite3.Connection, session_id: str, limit: int = 64) -> list[QueuedEvent]:
    """The session's pending rows in order. Rows are taken strictly in order (a row waiting
    for its backoff holds back later ones) so a turn's summary never overtakes its events."""
    return _records(conn.execute(
        f"SELECT {COLUMNS} FROM observation_queue WHERE session_id = ? AND status = '{QueueStatus.PENDING}'"
        " ORDER BY id LIMIT ?", (session_id, limit)))


def pending_from(conn: sqlite3.Connection, session_id: str, first_id: int, limit: int) -> list[QueuedEvent]:
    """The session's pending rows from `first_id` on, in order (the heuristic's turn: worker/turns.py)."""
    return _records(conn.execute(
        f"SELECT {COLUMNS} FROM observation_queue WHERE session_id = ? AND status = '{QueueStatus.PENDING}' AND id >= ?"
        " ORDER BY id LIMIT ?", (session_id, first_id, limit)))
