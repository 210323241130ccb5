"""The event queue: what hooks put in, and how its rows move as workers take them.

A row moves pending -> processing (claimed by one worker) -> done (through "stored", still
processing, while the index takes its memories: `mark_stored`), or back to pending: deferred
while the model is unreachable (no attempt counted), or with a backoff after a failure of its own,
and to skipped after too many of those. A worker that dies leaves its rows in processing; the next
worker for the session takes them back (`release_processing`), and `due_sessions` lets whatever
runs next notice rows that no worker is left to take. The rows read back whole, as records, are
store/queue_rows.py's (off the hook path).

On the hook path: standard library only.
"""

from __future__ import annotations

import json
import sqlite3
from enum import StrEnum

from claude_mem.store.db import now_iso, now_ms

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any


class QueueStatus(StrEnum):
    """Where a queued event stands: `observation_queue.status`, the values its CHECK allows
    (migration 0001). Defined here, not in kinds.py, so the hooks load nothing more to queue."""

    PENDING = "pending"        # waiting for a worker, or for its backoff
    PROCESSING = "processing"  # claimed by one worker
    DONE = "done"              # stored (by the model or the heuristic synthesizer)
    SKIPPED = "skipped"        # given up after max_attempts failed attempts (`claude-mem retry`)


# Written into statements as literals, as they were before the enumeration: the same SQL text,
# so the same plans (`due_sessions` names its index).
WAITING_SQL = f"('{QueueStatus.PENDING}', '{QueueStatus.PROCESSING}')"  # rows still to do

# The prompt an event belongs to: the one Claude Code names by prompt_id when we recorded it
# (a re-delivered or late event keeps its own turn), else the session's current prompt.
PROMPT_NUMBER_SQL = (
    "COALESCE((SELECT prompt_number FROM user_prompts WHERE session_id = :sid AND prompt_id = :pid),"
    " (SELECT prompt_counter FROM sdk_sessions WHERE claude_session_id = :sid))"
)


def enqueue_tool(conn: sqlite3.Connection, session_id: str, *, tool_name: str, tool_input: str,
                 tool_response: str, tool_use_id: str | None, is_error: bool,
                 duration_ms: int | None, agent_id: str | None, cwd: str | None,
                 prompt_id: str | None = None) -> int | None:
    """Queue one tool event under its prompt; None if this tool_use_id is already queued.
    Call inside a transaction, after `ensure_session`."""
    now = now_ms()
    cur = conn.execute(
        "INSERT INTO observation_queue (session_id, kind, tool_name, tool_input, tool_response,"
        " tool_use_id, is_error, duration_ms, agent_id, cwd, prompt_number, created_at,"
        " created_at_epoch, updated_at_epoch)"
        " VALUES (:sid, 'tool', :tool_name, :tool_input, :tool_response, :tool_use_id, :is_error,"
        f" :duration_ms, :agent_id, :cwd, {PROMPT_NUMBER_SQL}, :created_at, :now, :now)"
        # Only uniqueness conflicts are ignored: OR IGNORE would also swallow NOT NULL/CHECK.
        " ON CONFLICT DO NOTHING",
        {"sid": session_id, "pid": prompt_id, "tool_name": tool_name, "tool_input": tool_input,
         "tool_response": tool_response, "tool_use_id": tool_use_id, "is_error": int(is_error),
         "duration_ms": duration_ms, "agent_id": agent_id, "cwd": cwd, "created_at": now_iso(now), "now": now},
    )
    return cur.lastrowid if cur.rowcount else None


def enqueue_finalize(conn: sqlite3.Connection, session_id: str, *,
                     last_assistant_message: str | None, cwd: str | None,
                     prompt_id: str | None = None) -> int | None:
    """Queue the end-of-turn marker for its prompt (once per prompt)."""
    now = now_ms()
    body = json.dumps({"last_assistant_message": last_assistant_message or ""}, ensure_ascii=False)
    cur = conn.execute(
        "INSERT INTO observation_queue (session_id, kind, tool_response, cwd, prompt_number,"
        " created_at, created_at_epoch, updated_at_epoch)"
        f" VALUES (:sid, 'finalize', :body, :cwd, {PROMPT_NUMBER_SQL}, :created_at, :now, :now)"
        " ON CONFLICT DO NOTHING",
        {"sid": session_id, "pid": prompt_id, "body": body, "cwd": cwd, "created_at": now_iso(now), "now": now},
    )
    return cur.lastrowid if cur.rowcount else None


def set_guard_notes(conn: sqlite3.Connection, notes: dict[int, str]) -> None:
    """What the write guard found in each event's output ('' for nothing), by queue row id
    (migration 0019). Call inside a transaction."""
    conn.executemany("UPDATE observation_queue SET guard_note = ? WHERE id = ?", [(note, row_id) for row_id, note in notes.items()])


def counts_by_status(conn: sqlite3.Connection, session_id: str | None = None) -> dict[str, int]:
    sql = "SELECT status, COUNT(*) FROM observation_queue"
    params: tuple = ()
    if session_id:
        sql += " WHERE session_id = ?"
        params = (session_id,)
    counts = {s.value: 0 for s in QueueStatus}
    for status, n in conn.execute(sql + " GROUP BY status", params):
        counts[status] = n
    return counts


# --- the worker's side -------------------------------------------------------------------------

def release_processing(conn: sqlite3.Connection, session_id: str) -> int:
    """Give back rows a dead worker left in processing; returns how many go back to pending. Only
    the holder of the session's worker lock calls this, so no live worker can own them. Rows whose
    memories it had committed (`mark_stored`: it died waiting for the index) end done instead:
    run again they would be stored twice."""
    now = now_ms()
    conn.execute(
        f"UPDATE observation_queue SET status = '{QueueStatus.DONE}', claimed_by = NULL, updated_at_epoch = ?"
        f" WHERE session_id = ? AND status = '{QueueStatus.PROCESSING}' AND processed_by IS NOT NULL", (now, session_id))
    cur = conn.execute(
        f"UPDATE observation_queue SET status = '{QueueStatus.PENDING}', claimed_by = NULL, updated_at_epoch = ?"
        f" WHERE session_id = ? AND status = '{QueueStatus.PROCESSING}'",
        (now, session_id),
    )
    return cur.rowcount


def repeated_reads(conn: sqlite3.Connection, session_id: str, ids: list[int], *, subagents_seen: bool) -> set[int]:
    """Of the rows `ids`, the Reads whose result is the one the session's last read of the same
    file (and lines) gave: the file is as it was, and its content was shown already.
    (`subagents_seen`: a subagent's own reads count as shown; with fold_subagents they were not.)"""
    if not ids:
        return set()
    marks = ",".join("?" * len(ids))
    seen = "" if subagents_seen else " AND p.agent_id IS NULL"
    return {r[0] for r in conn.execute(
        f"SELECT e.id FROM observation_queue e WHERE e.id IN ({marks}) AND e.session_id = ? AND e.tool_name = 'Read'"
        " AND e.is_error = 0 AND e.tool_response = (SELECT p.tool_response FROM observation_queue p"
        " WHERE p.session_id = e.session_id AND p.id < e.id"
        f" AND p.kind = 'tool' AND p.tool_name = 'Read' AND p.is_error = 0 AND p.tool_input = e.tool_input{seen}"
        " ORDER BY p.id DESC LIMIT 1)", (*ids, session_id))}


def claim(conn: sqlite3.Connection, ids: list[int], worker_id: str) -> None:
    marks = ",".join("?" * len(ids))
    conn.execute(
        f"UPDATE observation_queue SET status = '{QueueStatus.PROCESSING}', claimed_by = ?, processed_by = NULL,"
        f" updated_at_epoch = ? WHERE id IN ({marks}) AND status = '{QueueStatus.PENDING}'",
        (worker_id, now_ms(), *ids),
    )


def mark_done(conn: sqlite3.Connection, ids: list[int], processed_by: str, given_up: str | None = None) -> None:
    """`given_up`: the reason of the last of a row's failed attempts, when it ends done without
    the model (that attempt is counted)."""
    _settle(conn, ids, QueueStatus.DONE, processed_by, given_up)


def mark_stored(conn: sqlite3.Connection, ids: list[int], processed_by: str, given_up: str | None = None) -> None:
    """As mark_done, for rows whose memories are committed with this but not yet in the semantic
    index: they stay processing, their worker's, until it holds them (`finish_stored`). So a
    drained queue means recall finds everything, by meaning too (issue 51)."""
    _settle(conn, ids, QueueStatus.PROCESSING, processed_by, given_up)


def _settle(conn: sqlite3.Connection, ids: list[int], status: QueueStatus, processed_by: str, given_up: str | None) -> None:
    marks = ",".join("?" * len(ids))
    claimed = "NULL" if status == QueueStatus.DONE else "claimed_by"
    conn.execute(
        f"UPDATE observation_queue SET status = ?, claimed_by = {claimed}, last_error = ?, attempts = attempts + ?,"
        f" processed_by = ?, updated_at_epoch = ? WHERE id IN ({marks})",
        (status.value, given_up[:500] if given_up else None, 1 if given_up else 0, processed_by, now_ms(), *ids),
    )


def finish_stored(conn: sqlite3.Connection, ids: list[int]) -> None:
    marks = ",".join("?" * len(ids))
    conn.execute(
        f"UPDATE observation_queue SET status = '{QueueStatus.DONE}', claimed_by = NULL, updated_at_epoch = ?"
        f" WHERE id IN ({marks}) AND status = '{QueueStatus.PROCESSING}' AND processed_by IS NOT NULL", (now_ms(), *ids))


def mark_failed(conn: sqlite3.Connection, ids: list[int], error: str, *, max_attempts: int,
                backoff_s: float) -> int:
    """Count a failed attempt: back to pending after a backoff, or skipped (with the reason)
    once max_attempts is reached. Returns how many rows were skipped."""
    marks = ",".join("?" * len(ids))
    now = now_ms()
    conn.execute(
        f"UPDATE observation_queue SET attempts = attempts + 1, last_error = ?, claimed_by = NULL,"
        f" status = CASE WHEN attempts + 1 >= ? THEN '{QueueStatus.SKIPPED}' ELSE '{QueueStatus.PENDING}' END,"
        f" next_attempt_epoch = ?, updated_at_epoch = ? WHERE id IN ({marks})",
        (error[:500], max_attempts, now + int(backoff_s * 1000), now, *ids),
    )
    return conn.execute(f"SELECT COUNT(*) FROM observation_queue WHERE id IN ({marks}) AND status = '{QueueStatus.SKIPPED}'",
                        ids).fetchone()[0]


def defer(conn: sqlite3.Connection, ids: list[int], error: str, due_ms: int) -> None:
    """Back to pending until `due_ms` without counting an attempt: the model was unreachable,
    which says nothing about these events."""
    marks = ",".join("?" * len(ids))
    conn.execute(
        f"UPDATE observation_queue SET status = '{QueueStatus.PENDING}', claimed_by = NULL, last_error = ?,"
        f" next_attempt_epoch = ?, updated_at_epoch = ? WHERE id IN ({marks})",
        (error[:500], due_ms, now_ms(), *ids),
    )


def release(conn: sqlite3.Connection, ids: list[int]) -> None:
    """Hand rows back untouched (a worker stopping mid-batch); rows whose memories are stored stay
    so (mark_stored): observed again they would be stored twice."""
    marks = ",".join("?" * len(ids))
    conn.execute(
        f"UPDATE observation_queue SET status = '{QueueStatus.PENDING}', claimed_by = NULL, updated_at_epoch = ?"
        f" WHERE id IN ({marks}) AND status = '{QueueStatus.PROCESSING}' AND processed_by IS NULL",
        (now_ms(), *ids),
    )


def retry_skipped(conn: sqlite3.Connection, *, session_id: str | None = None, ids: list[int] | None = None) -> list[str]:
    """Re-queue skipped rows; returns the sessions touched (they need a worker)."""
    clauses = [f"status = '{QueueStatus.SKIPPED}'"]
    params: list[Any] = []
    if session_id:
        clauses.append("session_id = ?")
        params.append(session_id)
    if ids:
        clauses.append(f"id IN ({','.join('?' * len(ids))})")
        params.extend(ids)
    where = " AND ".join(clauses)
    sessions = [r[0] for r in conn.execute(f"SELECT DISTINCT session_id FROM observation_queue WHERE {where}", params)]
    conn.execute(
        f"UPDATE observation_queue SET status = '{QueueStatus.PENDING}', attempts = 0, next_attempt_epoch = 0,"
        f" last_error = NULL, updated_at_epoch = ? WHERE {where}",
        (now_ms(), *params),
    )
    return sessions


def waiting_sessions(conn: sqlite3.Connection, *, due_by: int | None = None) -> list[dict[str, Any]]:
    """Sessions with pending events (due by `due_by`, when given), the one whose oldest event
    has waited longest first: its id, when that event came, how many wait."""
    due = "" if due_by is None else " AND next_attempt_epoch <= ?"
    return [{"session_id": sid, "waiting_since_epoch": since, "events": n} for sid, since, n in conn.execute(
        f"SELECT session_id, MIN(created_at_epoch), COUNT(*) FROM observation_queue WHERE status = '{QueueStatus.PENDING}'" + due
        + " GROUP BY session_id ORDER BY MIN(id)", () if due_by is None else (due_by,))]


def requeue_heuristic(conn: sqlite3.Connection, session_id: str) -> int:
    """Send the session's events the heuristic synthesizer handled to the model again; returns
    how many. Call inside a transaction, with memories.delete_heuristic."""
    return conn.execute(
        f"UPDATE observation_queue SET status = '{QueueStatus.PENDING}', attempts = 0, next_attempt_epoch = 0, processed_by = NULL,"
        " updated_at_epoch = ? WHERE session_id = ? AND processed_by = 'heuristic'", (now_ms(), session_id)).rowcount


def due_sessions(conn: sqlite3.Connection, now: int, limit: int = 4) -> list[str]:
    """Sessions with rows due for work (pending, or processing by a worker that may be dead):
    one index-only range scan of observation_queue_due, cheap enough for every hook."""
    return [r[0] for r in conn.execute(
        "SELECT DISTINCT session_id FROM observation_queue INDEXED BY observation_queue_due"
        f" WHERE status IN {WAITING_SQL} AND next_attempt_epoch <= ? LIMIT ?", (now, limit))]


def untouched_since(conn: sqlite3.Connection, session_id: str, before: int) -> bool:
    """True when the session's first waiting row has not changed since `before`: its worker is
    not merely starting up. (Two seeks of observation_queue_claim, however long the queue.)"""
    for status in (QueueStatus.PENDING, QueueStatus.PROCESSING):
        head = conn.execute("SELECT updated_at_epoch FROM observation_queue WHERE session_id = ? AND status = ?"
                            " ORDER BY id LIMIT 1", (session_id, status)).fetchone()
        if head is not None and head[0] < before:
            return True
    return False


def hold_session(conn: sqlite3.Connection, session_id: str, due_ms: int) -> None:
    """No pending row of the session is due before `due_ms` (the session waits for the model as
    a whole, so `due_sessions` does not count it)."""
    conn.execute(f"UPDATE observation_queue SET next_attempt_epoch = ? WHERE session_id = ? AND status = '{QueueStatus.PENDING}'"
                 " AND next_attempt_epoch < ?", (due_ms, session_id, due_ms))


def waiting_by_session(conn: sqlite3.Connection, session_ids: list[str]) -> dict[str, dict[str, int]]:
    """For each session: rows still to do, and when the first of them is due (epoch ms)."""
    if not session_ids:
        return {}
    marks = ",".join("?" * len(session_ids))
    # The first row in order is the one the session waits for (rows are taken strictly in order).
    return {r[0]: {"waiting": r[1], "next_try_epoch": r[2]} for r in conn.execute(
        "SELECT session_id, COUNT(*), (SELECT h.next_attempt_epoch FROM observation_queue h WHERE h.session_id = q.session_id"
        f"  AND h.status IN {WAITING_SQL} ORDER BY h.id LIMIT 1)"
        f" FROM observation_queue q WHERE session_id IN ({marks}) AND status IN {WAITING_SQL} GROUP BY session_id",
        session_ids)}


def queued_after_turn(conn: sqlite3.Connection, session_id: str, prompt_number: int, last_id: int) -> bool:
    """Whether anything was queued after the turn's last event (`last_id`): its Stop, or an event
    of a later prompt (a late event of an earlier prompt says nothing about this one)."""
    return conn.execute(
        "SELECT 1 FROM observation_queue WHERE session_id = ? AND id > ? AND (prompt_number > ? OR (kind != 'tool' AND prompt_number = ?))"
        " LIMIT 1", (session_id, last_id, prompt_number, prompt_number)).fetchone() is not None
