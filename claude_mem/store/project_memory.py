"""A project's memory as the memory file takes it (memory_file/choose.py, write.py): its current
observations and its sessions' latest summaries as records (store/rows.py), and where a session ran."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from claude_mem.store.marks import not_superseded
from claude_mem.store.rows import StoredObservation, StoredSummary, columns
from claude_mem.store.withheld import shown


def current_observations(conn: sqlite3.Connection, project: str) -> list[StoredObservation]:
    """The project's observations no mark supersedes and the write guard did not withhold, by id."""
    return [StoredObservation.from_row(r) for r in conn.execute(
        f"SELECT {columns(StoredObservation, 't')} FROM observations t WHERE t.project = ? AND {not_superseded('t')}"
        f" AND {shown('t')} ORDER BY t.id", (project,))]


def latest_summaries(conn: sqlite3.Connection, project: str, limit: int) -> list[StoredSummary]:
    """The newest summary of each of the project's `limit` latest sessions (none withheld), newest first."""
    return [StoredSummary.from_row(r) for r in conn.execute(
        f"SELECT {columns(StoredSummary, 't')} FROM session_summaries t WHERE t.project = ? AND t.id = (SELECT max(u.id)"
        f" FROM session_summaries u WHERE u.session_id = t.session_id) AND {shown('t')}"
        " ORDER BY t.created_at_epoch DESC, t.id DESC LIMIT ?", (project, limit))]


@dataclass(frozen=True)
class SessionPlace:
    """Where a session ran: its project, and the folder Claude Code ran in (None when unknown)."""

    project: str
    cwd: str | None


def session_place(conn: sqlite3.Connection, session_id: str) -> SessionPlace | None:
    """Where a session ran; None for a session never recorded."""
    row = conn.execute("SELECT project, cwd FROM sdk_sessions WHERE claude_session_id = ?", (session_id,)).fetchone()
    return None if row is None else SessionPlace(str(row[0]), row[1])
