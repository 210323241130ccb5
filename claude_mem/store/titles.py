"""Observations by their titles: what a session already holds (the worker's echo check, a
checkpoint without a model), what other sessions hold under a request's words (shown to the
observer: worker/recalled.py), and the titles of given ids (the CLI's tables).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from claude_mem.store import withheld


@dataclass(frozen=True)
class Titled:
    """An observation as a title names it."""

    id: int
    title: str
    created_at_epoch: int


def of_session(conn: sqlite3.Connection, session_id: str, type_: str) -> list[tuple[str, str]]:
    """(title, facts as stored: a JSON list) of the session's observations of one type."""
    return [(r[0], r[1]) for r in conn.execute("SELECT title, facts FROM observations WHERE session_id = ? AND type = ?",
                                               (session_id, type_))]


def newest_of_session(conn: sqlite3.Connection, session_id: str, limit: int) -> list[tuple[str, str]]:
    """(type, title) of the session's newest observations the write guard did not withhold, newest first."""
    return [(r[0], r[1]) for r in conn.execute(
        f"SELECT type, title FROM observations t WHERE session_id = ? AND {withheld.shown('t')} ORDER BY id DESC LIMIT ?",
        (session_id, limit))]


def matching(conn: sqlite3.Connection, project: str, match: str, *, other_than_session: str, limit: int) -> list[Titled]:
    """The project's observations of other sessions the FTS5 query `match` finds (best first),
    none the write guard withheld."""
    return [Titled(r[0], r[1], r[2]) for r in conn.execute(
        "SELECT o.id, o.title, o.created_at_epoch FROM observations_fts JOIN observations o ON o.id = observations_fts.rowid"
        f" WHERE observations_fts MATCH ? AND o.project = ? AND o.session_id != ? AND {withheld.shown('o')}"
        " ORDER BY bm25(observations_fts) LIMIT ?", (match, project, other_than_session, limit))]


def by_id(conn: sqlite3.Connection, ids: list[int]) -> dict[int, str]:
    """The titles of the observations `ids` (those that exist)."""
    if not ids:
        return {}
    return dict(conn.execute(f"SELECT id, title FROM observations WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall())
