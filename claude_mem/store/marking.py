"""What the marking rules (claude_mem/marks/) read, and where their sweep over an older database
stands (`mark_sweep`, migration 0015): the observations a run goes over, oldest first, and the
candidates a rule compares an observation with (its project's decisions, its title's words).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Sweep:
    """The sweep's place: observations with ids up to `through_id` have been through the rules,
    those up to `upto_id` (the newest when marks came) are to be."""

    through_id: int
    upto_id: int

    @property
    def done(self) -> bool:
        return self.through_id >= self.upto_id


def oldest_first(conn: sqlite3.Connection, *, project: str | None = None, after_id: int = 0) -> list[int]:
    """The ids of every observation (of `project`) above `after_id`, oldest first."""
    where, params = ("WHERE id > ? AND project = ?", [after_id, project]) if project else ("WHERE id > ?", [after_id])
    return [r[0] for r in conn.execute(f"SELECT id FROM observations {where} ORDER BY created_at_epoch, id", params)]


def last_id(conn: sqlite3.Connection) -> int:
    """The newest observation id (ids are never reused: what an import adds comes after it)."""
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM observations").fetchone()[0])


def sweep(conn: sqlite3.Connection) -> Sweep | None:
    row = conn.execute("SELECT through_id, upto_id FROM mark_sweep WHERE id = 1").fetchone()
    return Sweep(row[0], row[1]) if row is not None else None


def sweep_ids(conn: sqlite3.Connection, place: Sweep, limit: int) -> list[int]:
    """The next observations the sweep has to go through, in id order."""
    return [r[0] for r in conn.execute("SELECT id FROM observations WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
                                       (place.through_id, place.upto_id, limit))]


def sweep_through(conn: sqlite3.Connection, through_id: int) -> None:
    conn.execute("UPDATE mark_sweep SET through_id = ? WHERE id = 1", (through_id,))


def sweep_finished(conn: sqlite3.Connection) -> None:
    """Every observation has been through the rules: no sweep is left to do."""
    conn.execute("UPDATE mark_sweep SET through_id = upto_id WHERE id = 1")


def rows(conn: sqlite3.Connection, ids: list[int]) -> list[dict[str, Any]]:
    """The observations `ids`, each with its session's folder (`session_cwd`: what its relative paths are read from)."""
    if not ids:
        return []
    return [dict(r) for r in conn.execute(
        "SELECT o.*, s.cwd AS session_cwd FROM observations o LEFT JOIN sdk_sessions s ON s.claude_session_id = o.session_id"
        f" WHERE o.id IN ({','.join('?' * len(ids))})", ids)]


def newest_decisions(conn: sqlite3.Connection, project: str, limit: int) -> list[int]:
    """The ids of the project's newest decisions."""
    return [r[0] for r in conn.execute("SELECT id FROM observations WHERE project = ? AND type = 'decision'"
                                       f" ORDER BY id DESC LIMIT {int(limit)}", (project,))]


def newest_matching(conn: sqlite3.Connection, project: str, match: str, limit: int) -> list[int]:
    """The ids of the project's newest observations the FTS5 query `match` finds."""
    return [r[0] for r in conn.execute(
        "SELECT o.id FROM observations_fts JOIN observations o ON o.id = observations_fts.rowid"
        " WHERE observations_fts MATCH ? AND o.project = ?"
        f" ORDER BY observations_fts.rowid DESC LIMIT {int(limit)}", (match, project))]


def earlier_of_project(conn: sqlite3.Connection, old_id: int, new_id: int) -> bool:
    """Whether `old_id` is an observation of `new_id`'s project recorded before it (what a mark
    from `new_id` to it needs)."""
    row = conn.execute(
        "SELECT o.project = n.project AND (o.created_at_epoch, o.id) < (n.created_at_epoch, n.id)"
        " FROM observations o, observations n WHERE o.id = ? AND n.id = ?", (old_id, new_id)).fetchone()
    return row is not None and bool(row[0])
