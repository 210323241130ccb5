"""What the hooks' pushes read (push/): whether a project has memory from other sessions, a
session's project, the rows that replaced superseded ones, a command's earlier failures and what
came of them, stated decisions (by session, by scope, with their scopes), and the prompt push's
keyword matches (FTS5: search's own keyword side is store/fts.py's).

Standard library only: the prompt and pre-tool hooks read through here.
"""

from __future__ import annotations

import sqlite3

from claude_mem.store.marks import not_superseded
from claude_mem.store.withheld import shown

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any


def _marks(items: list[Any]) -> str:
    return ",".join("?" * len(items))


def has_memory(conn: sqlite3.Connection, project: str, session_id: str) -> bool:
    """An observation or summary of `project` from another session than this one."""
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM observations WHERE project = ? AND session_id != ?)"
        " OR EXISTS (SELECT 1 FROM session_summaries WHERE project = ? AND session_id != ?)",
        (project, session_id, project, session_id)).fetchone()
    return bool(row[0])


def session_project(conn: sqlite3.Connection, session_id: str) -> str | None:
    """The project the session is filed under; None for a session never recorded."""
    row = conn.execute("SELECT project FROM sdk_sessions WHERE claude_session_id = ?", (session_id,)).fetchone()
    return str(row[0]) if row else None


def observation_heads(conn: sqlite3.Connection, ids: list[int], project: str, session_id: str) -> list[dict[str, Any]]:
    """id, session_id, type, title, subtitle and created_at_epoch of these observations, those of
    `project` from other sessions than this one, none withheld."""
    if not ids:
        return []
    return [dict(r) for r in conn.execute(
        f"SELECT id, session_id, type, title, subtitle, created_at_epoch FROM observations WHERE id IN ({_marks(ids)})"
        f" AND project = ? AND session_id != ? AND {shown('observations')}", [*ids, project, session_id])]


# --- the prompt push's keyword fallback (push/prompt.py) ----------------------------------------

# The columns the prompt push makes a match's line of (title, detail): other sessions' rows only, none withheld.
_PUSH_SQL = {
    "observation": "SELECT t.id, t.session_id, t.type, t.title, t.subtitle, t.narrative, t.facts, t.concepts,"
                   " t.created_at_epoch, -bm25(observations_fts) AS score FROM observations_fts"
                   " JOIN observations t ON t.id = observations_fts.rowid"
                   " WHERE observations_fts MATCH ? AND t.project = ? AND t.session_id != ?"
                   f" AND {shown('t')} ORDER BY score DESC LIMIT ?",
    "summary": "SELECT t.id, t.session_id, NULL AS type, t.request, t.investigated, t.learned, t.completed, t.next_steps,"
               " t.notes, t.created_at_epoch, -bm25(session_summaries_fts) AS score FROM session_summaries_fts"
               " JOIN session_summaries t ON t.id = session_summaries_fts.rowid"
               " WHERE session_summaries_fts MATCH ? AND t.project = ? AND t.session_id != ?"
               f" AND {shown('t')} ORDER BY score DESC LIMIT ?",
}
PUSH_KINDS = tuple(_PUSH_SQL)


def push_matches(conn: sqlite3.Connection, kind: str, match: str, project: str, session_id: str,
                 pool: int) -> list[sqlite3.Row]:
    """The `pool` best observations or summaries (`kind`) of `project` matching, none of this
    session's nor withheld, best first: their text columns, `type` (NULL for a summary) and `score`."""
    return conn.execute(_PUSH_SQL[kind], (match, project, session_id, pool)).fetchall()


# --- a command's failures (push/failures.py) ------------------------------------------------------

def failed_commands(conn: sqlite3.Connection, project: str, session_id: str, like: str, limit: int) -> list[sqlite3.Row]:
    """The latest failed Bash calls of `project`'s other sessions whose input matches the LIKE
    pattern `like` (escaped with \\), newest first, through the partial index of migration 0006:
    id, session_id, tool_input, tool_response, created_at_epoch, prompt_number, guard_note."""
    return conn.execute(
        "SELECT q.id, q.session_id, q.tool_input, q.tool_response, q.created_at_epoch, q.prompt_number, q.guard_note"
        " FROM observation_queue q INDEXED BY observation_queue_failures"
        " JOIN sdk_sessions s ON s.claude_session_id = q.session_id"
        " WHERE q.tool_name = 'Bash' AND q.is_error = 1 AND s.project = ? AND q.session_id != ?"
        " AND q.tool_input LIKE ? ESCAPE '\\' ORDER BY q.id DESC LIMIT ?",
        (project, session_id, like, limit)).fetchall()


class Fix:
    """A bugfix observation recorded after a failure: what the push names of it. A plain class:
    dataclasses cost the hook their import."""

    __slots__ = ("id", "title")

    def __init__(self, id: int, title: str) -> None:
        self.id = id
        self.title = title


def bugfix_after(conn: sqlite3.Connection, session_id: str, prompt_number: int, since_ms: int) -> Fix | None:
    """The first current, shown bugfix the session recorded from `since_ms` on, in that turn or the next."""
    row = conn.execute(
        "SELECT id, title FROM observations o WHERE session_id = ? AND type = 'bugfix' AND prompt_number BETWEEN ? AND ?"
        f" AND created_at_epoch >= ? AND {not_superseded('o')} AND {shown('o')}"
        " ORDER BY created_at_epoch, id LIMIT 1",
        (session_id, prompt_number, prompt_number + 1, since_ms)).fetchone()
    return None if row is None else Fix(int(row[0]), str(row[1] or ""))


def passed_commands(conn: sqlite3.Connection, session_id: str, after_id: int, like: str, limit: int) -> list[str]:
    """The inputs of the session's Bash calls that passed after queue row `after_id` and match `like`, in order."""
    return [r[0] for r in conn.execute(
        "SELECT tool_input FROM observation_queue WHERE session_id = ? AND id > ? AND tool_name = 'Bash'"
        " AND is_error = 0 AND tool_input LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?",
        (session_id, after_id, like, limit))]


# --- stated decisions (push/decisions.py, ask/decisions.py) ---------------------------------------

def _decisions(conn: sqlite3.Connection, project: str, where: str, params: list[str], current: bool) -> list[sqlite3.Row]:
    now = f" AND {not_superseded('o')}" if current else ""
    return conn.execute(
        "SELECT o.id, o.session_id, o.type, o.title, o.created_at_epoch FROM observations o WHERE o.type = 'decision'"
        f" AND o.project = ? AND {where}{now} AND {shown('o')} ORDER BY o.created_at_epoch DESC, o.id DESC",
        [project, *params]).fetchall()


def decisions_of_sessions(conn: sqlite3.Connection, project: str, session_ids: list[str]) -> list[sqlite3.Row]:
    """The shown decisions of `project` stated in these sessions, replaced ones too, newest first:
    id, session_id, type, title, created_at_epoch."""
    return _decisions(conn, project, f"o.session_id IN ({_marks(session_ids)})", session_ids, current=False)


def decisions_for_scopes(conn: sqlite3.Connection, project: str, scopes: list[str]) -> list[sqlite3.Row]:
    """The current, shown decisions of `project` stated for these scopes, newest first (columns as above)."""
    return _decisions(conn, project, f"o.scope IN ({_marks(scopes)})", scopes, current=True)


def known_scopes(conn: sqlite3.Connection, projects: Iterable[str]) -> list[str]:
    """The scopes the observations of these projects were stated for."""
    wanted = sorted(set(projects))
    if not wanted:
        return []
    return [r[0] for r in conn.execute(
        f"SELECT DISTINCT scope FROM observations WHERE scope != '' AND project IN ({_marks(wanted)})", wanted)]


def decision_rows(conn: sqlite3.Connection, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
    """id, session_id, project, type, title, subtitle, scope, created_at_epoch of these observations, none withheld, by id."""
    wanted = sorted({int(i) for i in ids})
    if not wanted:
        return {}
    return {int(r["id"]): dict(r) for r in conn.execute(
        "SELECT id, session_id, project, type, title, subtitle, scope, created_at_epoch FROM observations o"
        f" WHERE id IN ({_marks(wanted)}) AND {shown('o')}", wanted)}
