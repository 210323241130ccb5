"""Rows in the order they were stored, across sessions: what the viewer's feed and its stream
read (the rows after a cursor, the newest prompts with their project), and the projects by when
they were last active.

Ids only grow as rows commit (one writer at a time) and are never reused, even after a forget
(migration 0004), which is what makes the newest id of each table a cursor.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from claude_mem.store.rows import StoredObservation, StoredSummary, columns


def newest_ids(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """The newest observation, summary and prompt ids (0 for none)."""
    row = conn.execute("SELECT (SELECT MAX(id) FROM observations), (SELECT MAX(id) FROM session_summaries),"
                       " (SELECT MAX(id) FROM user_prompts)").fetchone()
    return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)


def observations_after(conn: sqlite3.Connection, after: int, limit: int) -> list[StoredObservation]:
    return [StoredObservation.from_row(r) for r in conn.execute(
        f"SELECT {columns(StoredObservation)} FROM observations WHERE id > ? ORDER BY id LIMIT ?", (after, limit))]


def summaries_after(conn: sqlite3.Connection, after: int, limit: int) -> list[StoredSummary]:
    return [StoredSummary.from_row(r) for r in conn.execute(
        f"SELECT {columns(StoredSummary)} FROM session_summaries WHERE id > ? ORDER BY id LIMIT ?", (after, limit))]


def prompts_after(conn: sqlite3.Connection, *, after: int = 0, project: str | None = None, limit: int,
                  newest_first: bool = False) -> list[dict[str, Any]]:
    """Prompts of every session (records.list_prompts lists one session's), each with its project."""
    sql = ("SELECT p.id, p.session_id, p.prompt_number, p.prompt_text, p.created_at, p.created_at_epoch, s.project"
           " FROM user_prompts p JOIN sdk_sessions s ON s.claude_session_id = p.session_id WHERE p.id > ?")
    params: list[Any] = [after]
    if project:
        sql += " AND s.project = ?"
        params.append(project)
    sql += f" ORDER BY p.id {'DESC' if newest_first else 'ASC'} LIMIT ?"
    return [dict(r) for r in conn.execute(sql, [*params, limit])]


def projects(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    """Projects with their session count (`sessions`) and last activity (`last_epoch`), most recently active first."""
    return [dict(r) for r in conn.execute(
        "SELECT project, COUNT(*) AS sessions, MAX(updated_at_epoch) AS last_epoch FROM sdk_sessions"
        " GROUP BY project ORDER BY last_epoch DESC, project")]


def recent_projects(conn: sqlite3.Connection, limit: int = 10) -> list[str]:
    """The projects most recently active, newest first."""
    return [r[0] for r in conn.execute(
        "SELECT project FROM sdk_sessions GROUP BY project ORDER BY MAX(updated_at_epoch) DESC LIMIT ?", (limit,))]
