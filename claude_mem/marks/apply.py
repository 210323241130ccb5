"""Running the marking rules (rules.py) over stored observations: when the worker stores one, on
`claude-mem import` before it returns, once over a database that holds observations from before
links existed (in slices, see `sweep_step`), and on demand (`claude-mem marks apply`).

Each observation is compared with its project's older observations that are still current and
may be about the same thing: those naming one of its files (the `observation_files` index) and
those whose titles share its words (FTS5), a bounded set found through indexes. Observations are
taken oldest first, so a chain of updates is marked link by link (A by B, then B by C).
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from claude_mem.marks.claims import Claim, claim
from claude_mem.marks.rules import Mark, marks_for
from claude_mem.push.terms import fts_match, query_terms
from claude_mem.store import links
from claude_mem.store.db import transaction

FILE_CANDIDATES = 100  # the newest observations naming a file of the same base name
WORD_CANDIDATES = 30  # the best title matches
TITLE_TERMS = 16


@dataclass
class Applied:
    """What a run of the rules marked (or, in a dry run, would mark)."""

    checked: int = 0
    marks: list[Mark] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for m in self.marks:
            found[m.rule] = found.get(m.rule, 0) + 1
        return found


def _rows(conn: sqlite3.Connection, ids: list[int]) -> list[dict]:
    if not ids:
        return []
    return [dict(r) for r in conn.execute(f"SELECT * FROM observations WHERE id IN ({','.join('?' * len(ids))})", ids)]


def candidates(conn: sqlite3.Connection, row: dict) -> list[Claim]:
    """The project's current observations recorded before `row` that may be about the same thing."""
    new = claim(row)
    ids: set[int] = set()
    names = sorted({os.path.basename(p) for p in new.files if os.path.basename(p)})
    if names:
        ids.update(r[0] for r in conn.execute(
            f"SELECT DISTINCT f.observation_id FROM observation_files f JOIN observations o ON o.id = f.observation_id"
            f" WHERE f.name IN ({','.join('?' * len(names))}) AND o.project = ? AND o.id != ?"
            f" ORDER BY f.observation_id DESC LIMIT {FILE_CANDIDATES}", [*names, new.project, new.id]))
    terms = query_terms(new.title)[:TITLE_TERMS]
    if terms:
        ids.update(r[0] for r in conn.execute(
            "SELECT o.id FROM observations_fts JOIN observations o ON o.id = observations_fts.rowid"
            " WHERE observations_fts MATCH ? AND o.project = ? AND o.id != ?"
            f" ORDER BY bm25(observations_fts) LIMIT {WORD_CANDIDATES}", (f"title : ({fts_match(terms)})", new.project, new.id)))
    if not ids:
        return []
    older = [r for r in _rows(conn, sorted(ids))
             if (r["created_at_epoch"], r["id"]) < (row["created_at_epoch"], row["id"])]
    gone = links.superseded_ids(conn, [r["id"] for r in older])
    return [claim(r) for r in older if r["id"] not in gone]


def mark_one(conn: sqlite3.Connection, row: dict) -> list[Mark]:
    """Run the rules for one stored observation and record the marks (inside the caller's
    transaction); returns the marks made."""
    replaces = conn.execute("SELECT 1 FROM memory_links WHERE new_id = ? AND relation = 'supersedes' LIMIT 1",
                            (row["id"],)).fetchone() is not None
    made = []
    for mark in marks_for(claim(row), candidates(conn, row), replaces_already=replaces):
        if links.add(conn, mark.old_id, mark.new_id, mark.relation, "rule", rule=mark.rule, reason=mark.reason):
            made.append(mark)
    return made


def mark_stored(conn: sqlite3.Connection, ids: list[int]) -> list[Mark]:
    """The rules for observations just stored, oldest first (inside the caller's transaction)."""
    made: list[Mark] = []
    for row in sorted(_rows(conn, list(ids)), key=lambda r: (r["created_at_epoch"], r["id"])):
        made += mark_one(conn, row)
    return made


def mark_stored_guarded(conn: sqlite3.Connection, ids: list[int], log: Callable[[str], None]) -> list[Mark]:
    """`mark_stored` for the worker, inside its storing transaction: a rule that fails (a bug, a
    row it cannot read) costs its marks, logged, never the observations being stored."""
    if not ids:
        return []
    conn.execute("SAVEPOINT marks")
    try:
        made = mark_stored(conn, ids)
    except (sqlite3.Error, ValueError, KeyError, TypeError) as exc:
        conn.execute("ROLLBACK TO marks")
        log(f"marking rules failed on observations {ids[:5]}: {type(exc).__name__}: {exc}")
        made = []
    conn.execute("RELEASE marks")
    return made


def mark_all(conn: sqlite3.Connection, *, project: str | None = None, since_id: int = 0, dry_run: bool = False) -> Applied:
    """The rules over every observation (of `project`; with an id above `since_id`), oldest first,
    in one transaction: rolled back with `dry_run`, which still says what would be marked."""
    applied = Applied()
    where, params = "WHERE id > ?", [since_id]
    if project:
        where += " AND project = ?"
        params.append(project)
    conn.execute("BEGIN IMMEDIATE")
    try:
        ids = [r[0] for r in conn.execute(f"SELECT id FROM observations {where} ORDER BY created_at_epoch, id", params)]
        for start in range(0, len(ids), 500):
            for row in sorted(_rows(conn, ids[start:start + 500]), key=lambda r: (r["created_at_epoch"], r["id"])):
                applied.checked += 1
                applied.marks += mark_one(conn, row)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("ROLLBACK" if dry_run else "COMMIT")
    return applied


def sweep_pending(conn: sqlite3.Connection) -> int:
    """How many observations stored before links existed still wait for the rules."""
    row = conn.execute("SELECT through_id, upto_id FROM link_sweep WHERE id = 1").fetchone()
    if row is None or row[0] >= row[1]:
        return 0
    return int(conn.execute("SELECT count(*) FROM observations WHERE id > ? AND id <= ?", (row[0], row[1])).fetchone()[0])


def sweep_step(conn: sqlite3.Connection, budget_s: float = 2.0, chunk: int = 200) -> int:
    """Run the rules over the next observations stored before links existed, for about
    `budget_s`, one committed chunk at a time (a kill loses at most a chunk, done again later).
    Returns how many were checked."""
    checked = 0
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        with transaction(conn):
            state = conn.execute("SELECT through_id, upto_id FROM link_sweep WHERE id = 1").fetchone()
            if state is None or state[0] >= state[1]:
                break
            ids = [r[0] for r in conn.execute("SELECT id FROM observations WHERE id > ? AND id <= ? ORDER BY id LIMIT ?",
                                              (state[0], state[1], chunk))]
            for row in sorted(_rows(conn, ids), key=lambda r: (r["created_at_epoch"], r["id"])):
                mark_one(conn, row)
            checked += len(ids)
            conn.execute("UPDATE link_sweep SET through_id = ? WHERE id = 1", (ids[-1] if ids else state[1],))
    return checked


def last_id(conn: sqlite3.Connection) -> int:
    """The newest observation id (ids are never reused: what an import adds comes after it)."""
    return int(conn.execute("SELECT coalesce(max(id), 0) FROM observations").fetchone()[0])


def mark_added(conn: sqlite3.Connection, after_id: int) -> list[Mark]:
    """The rules over the observations an import just added (ids above `after_id`), in one transaction."""
    with transaction(conn):
        ids = [r[0] for r in conn.execute("SELECT id FROM observations WHERE id > ?", (after_id,))]
        return mark_stored(conn, ids)
