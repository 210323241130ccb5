"""Read-only summaries of the store for people: counts, sessions with their sizes, a session's
timeline (as records: store/rows.py), the latest problems. Used by `claude-mem status`, `sessions`
and `show`, and the viewer's session page.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from typing import Any

from claude_mem.store import outages
from claude_mem.store.memory_rows import with_marks
from claude_mem.store.queue import QueueStatus
from claude_mem.store.reads import TABLES, like_escape
from claude_mem.store.rows import MarkedObservation, Prompt, Session, StoredObservation, StoredSummary, as_dict, columns

COUNTED = {"sessions": "sdk_sessions", "prompts": "user_prompts", "observations": "observations",
           "summaries": "session_summaries", "raw_replies": "raw_replies"}


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    return {name: conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] for name, table in COUNTED.items()}


def indexable_rows(conn: sqlite3.Connection) -> int:
    """Rows the semantic index holds documents for: observations, summaries, prompts."""
    c = counts(conn)
    return c["observations"] + c["summaries"] + c["prompts"]


def unindexed_rows(conn: sqlite3.Connection) -> int:
    """Rows SQLite has and the semantic index does not (yet): the memory service's lag."""
    return sum(conn.execute(
        f"SELECT COUNT(*) FROM {TABLES[kind]} t LEFT JOIN index_state s ON s.kind = ? AND s.row_id = t.id"
        " WHERE s.row_id IS NULL", (kind,)).fetchone()[0] for kind in ("observation", "summary", "prompt"))


def database_bytes(path: str) -> int:
    """The database with its write-ahead log: what it takes on disk."""
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p))


def session_scope(*, project: str | None = None, session_id: str | None = None, since_ms: int | None = None,
                  until_ms: int | None = None) -> tuple[str, list[Any]]:
    """A WHERE clause (never empty, so callers can add `AND ...`) over `sdk_sessions s`: the
    sessions of a project, one session, those active since / started before a time."""
    clauses, params = ["1"], []
    for sql, value in (("s.project = ?", project), ("s.claude_session_id = ?", session_id),
                       ("s.updated_at_epoch >= ?", since_ms), ("s.started_at_epoch < ?", until_ms)):
        if value is not None and value != "":
            clauses.append(sql)
            params.append(value)
    return " WHERE " + " AND ".join(clauses), params


def count_sessions(conn: sqlite3.Connection, **scope: Any) -> int:
    where, params = session_scope(**scope)
    return conn.execute(f"SELECT COUNT(*) FROM sdk_sessions s{where}", params).fetchone()[0]


def list_sessions(conn: sqlite3.Connection, *, project: str | None = None, since_ms: int | None = None,
                  until_ms: int | None = None, limit: int | None = None) -> list[dict[str, Any]]:
    """Sessions, newest first, each with how many observations and summaries it holds."""
    where, params = session_scope(project=project, since_ms=since_ms, until_ms=until_ms)
    sql = ("SELECT s.*, (SELECT COUNT(*) FROM observations o WHERE o.session_id = s.claude_session_id) AS observations,"
           " (SELECT COUNT(*) FROM session_summaries m WHERE m.session_id = s.claude_session_id) AS summaries"
           f" FROM sdk_sessions s{where} ORDER BY s.started_at_epoch DESC, s.id DESC")
    if limit:
        sql += f" LIMIT {int(limit)}"
    return [dict(r) for r in conn.execute(sql, params)]


def find_sessions(conn: sqlite3.Connection, text: str) -> list[str]:
    """Session ids equal to `text`, or else starting with it (people copy the first characters)."""
    exact = conn.execute("SELECT claude_session_id FROM sdk_sessions WHERE claude_session_id = ?", (text,)).fetchone()
    if exact:
        return [exact[0]]
    pattern = like_escape(text) + "%"
    return [r[0] for r in conn.execute(
        "SELECT claude_session_id FROM sdk_sessions WHERE claude_session_id LIKE ? ESCAPE '\\' ORDER BY started_at_epoch LIMIT 10",
        (pattern,))]


@dataclass(frozen=True, slots=True)
class Timeline:
    """A session with its prompts, observations (with what the marks say of them) and summaries,
    each list in the order they happened (by prompt number, then time)."""

    session: Session
    prompts: list[Prompt]
    observations: list[MarkedObservation]
    summaries: list[StoredSummary]

    def as_dict(self) -> dict[str, Any]:
        """For JSON (`show --json`): each record as its row's columns, an observation's marks after them."""
        return {"session": as_dict(self.session), "prompts": [as_dict(p) for p in self.prompts],
                "observations": [o.as_dict() for o in self.observations], "summaries": [as_dict(m) for m in self.summaries]}


def session_timeline(conn: sqlite3.Connection, session_id: str) -> Timeline | None:
    row = conn.execute(f"SELECT {columns(Session)} FROM sdk_sessions WHERE claude_session_id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    observations = [StoredObservation.from_row(r) for r in conn.execute(
        f"SELECT {columns(StoredObservation)} FROM observations WHERE session_id = ?"
        " ORDER BY prompt_number, created_at_epoch, id", (session_id,))]
    return Timeline(
        session=Session.from_row(row),
        prompts=[Prompt.from_row(r) for r in conn.execute(
            f"SELECT {columns(Prompt)} FROM user_prompts WHERE session_id = ? ORDER BY prompt_number, id", (session_id,))],
        observations=with_marks(conn, observations),
        summaries=[StoredSummary.from_row(r) for r in conn.execute(
            f"SELECT {columns(StoredSummary)} FROM session_summaries WHERE session_id = ? ORDER BY prompt_number, id",
            (session_id,))],
    )


# The record each kind of memory row is read as.
RECORDS: dict[str, type[StoredObservation | StoredSummary | Prompt]] = {
    "observation": StoredObservation, "summary": StoredSummary, "prompt": Prompt}


def get_row(conn: sqlite3.Connection, kind: str, row_id: int) -> StoredObservation | StoredSummary | Prompt | None:
    """The memory row of this kind ("observation", "summary", "prompt") and id, or None."""
    record = RECORDS[kind]
    row = conn.execute(f"SELECT {columns(record)} FROM {TABLES[kind]} WHERE id = ?", (row_id,)).fetchone()
    return record.from_row(row) if row else None


def model_outages(conn: sqlite3.Connection, limit: int = 5) -> list[dict[str, Any]]:
    """Sessions whose observer cannot reach the model, latest first, with their waiting events."""
    return outages.current(conn, limit)


def skipped_events(conn: sqlite3.Connection) -> dict[str, Any]:
    """How many events were given up (synthesizer=model) and the latest reason."""
    count = conn.execute(f"SELECT COUNT(*) FROM observation_queue WHERE status = '{QueueStatus.SKIPPED}'").fetchone()[0]
    last = conn.execute(f"SELECT session_id, last_error FROM observation_queue WHERE status = '{QueueStatus.SKIPPED}'"
                        " ORDER BY updated_at_epoch DESC, id DESC LIMIT 1").fetchone() if count else None
    return {"count": count, "last_error": last[1] if last else None, "session_id": last[0] if last else None}


def last_queue_error(conn: sqlite3.Connection) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT id, session_id, status, last_error, updated_at_epoch FROM observation_queue"
        " WHERE last_error IS NOT NULL ORDER BY updated_at_epoch DESC, id DESC LIMIT 1").fetchone()
    return dict(row) if row else None
