"""A compaction's checkpoint (migration 0012): asked for by the PreCompact hook, written by the
session's worker once it has taken every event queued before it, shown by SessionStart(compact).

On the hook path: standard library only.
"""

from __future__ import annotations

import sqlite3

from claude_mem.store.db import now_ms

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

    from claude_mem.store.rows import Checkpoint

FIELDS = ("request", "completed", "decided", "failing", "next_steps")


def request(conn: sqlite3.Connection, session_id: str, trigger: str) -> int:
    """Ask for a checkpoint of everything queued so far (call inside a transaction, after
    `ensure_session`). A checkpoint still pending is moved up to now rather than doubled."""
    upto = conn.execute("SELECT COALESCE(MAX(id), 0) FROM observation_queue WHERE session_id = ?",
                        (session_id,)).fetchone()[0]
    number = conn.execute("SELECT prompt_counter FROM sdk_sessions WHERE claude_session_id = ?",
                          (session_id,)).fetchone()[0]
    pending = conn.execute("SELECT id FROM checkpoints WHERE session_id = ? AND status = 'pending'",
                           (session_id,)).fetchone()
    if pending:
        conn.execute("UPDATE checkpoints SET upto_queue_id = ?, prompt_number = ?, trigger = ? WHERE id = ?",
                     (upto, number, trigger, pending[0]))
        return int(pending[0])
    cur = conn.execute("INSERT INTO checkpoints (session_id, trigger, upto_queue_id, prompt_number, created_at_epoch)"
                       " VALUES (?, ?, ?, ?, ?)", (session_id, trigger, upto, number, now_ms()))
    return int(cur.lastrowid or 0)


def pending(conn: sqlite3.Connection, session_id: str) -> Checkpoint | None:
    """The checkpoint the session's worker has still to write (the worker's: the records' module
    is imported here, not by the hooks)."""
    from claude_mem.store.rows import Checkpoint, columns

    row = conn.execute(f"SELECT {columns(Checkpoint)} FROM checkpoints WHERE session_id = ? AND status = 'pending'"
                       " ORDER BY id LIMIT 1", (session_id,)).fetchone()
    return None if row is None else Checkpoint.from_row(row)


def write(conn: sqlite3.Connection, checkpoint_id: int, fields: dict[str, str], source: str) -> None:
    """Store what the checkpoint says (call inside a transaction)."""
    values = [str(fields.get(name) or "") for name in FIELDS]
    conn.execute(f"UPDATE checkpoints SET {', '.join(f'{name} = ?' for name in FIELDS)}, source = ?,"
                 " status = 'written', written_at_epoch = ? WHERE id = ?", (*values, source, now_ms(), checkpoint_id))


def latest(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    """The session's newest written checkpoint: what SessionStart(compact) shows (the hook path,
    hence a dict of the columns it shows, not a record)."""
    row = conn.execute(f"SELECT id, {', '.join(FIELDS)}, source, written_at_epoch FROM checkpoints"
                       " WHERE session_id = ? AND status = 'written' ORDER BY id DESC LIMIT 1", (session_id,)).fetchone()
    if row is None:
        return None
    return dict(zip(("id", *FIELDS, "source", "written_at_epoch"), row, strict=True))
