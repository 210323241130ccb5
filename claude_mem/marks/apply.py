"""Running the marking rules (rules.py) over stored observations: when the worker stores one, on
`claude-mem import` before it returns, once over a database that holds observations from before
marks existed (in slices, see `sweep_step`), and on demand (`claude-mem marks apply`).

Observations are taken oldest first, each compared with what candidates.py finds, so a chain of
updates is marked link by link (A by B, then B by C). Long runs commit in small chunks: hooks and
workers wait on the write lock, and none should wait long.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from claude_mem.marks.candidates import Claims, candidates
from claude_mem.marks.rules import Mark, marks_for
from claude_mem.store import marking, marks
from claude_mem.store.db import savepoint, transaction

CHUNK = 25  # observations a long run marks per transaction (a few milliseconds each)


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


@dataclass
class Run:
    """One pass of the rules. A dry run writes nothing: it remembers its marks itself, so that
    later observations see them as a real run would."""

    dry: bool = False
    claims: Claims = field(default_factory=Claims)
    superseded: set[int] = field(default_factory=set)
    superseding: set[int] = field(default_factory=set)

    def one(self, conn: sqlite3.Connection, row: dict) -> list[Mark]:
        """The rules for one stored observation; its marks recorded (unless dry) and returned."""
        supersedes = row["id"] in self.superseding or marks.supersedes_any(conn, row["id"])
        made = []
        for mark in marks_for(self.claims(row), candidates(conn, row, self.claims, self.superseded), supersedes_already=supersedes):
            fresh = not marks.marked(conn, mark.old_id, mark.new_id) if self.dry else marks.add(
                conn, mark.old_id, mark.new_id, mark.relation, "rule", rule=mark.rule, reason=mark.reason)
            if fresh:
                made.append(mark)
                self.superseded.update([mark.old_id] if mark.relation != "conflicts" else [])
                self.superseding.update([mark.new_id] if mark.relation == "supersedes" else [])
        return made


def _oldest_first(conn: sqlite3.Connection, ids: list[int]) -> list[dict]:
    return sorted(marking.rows(conn, list(ids)), key=lambda r: (r["created_at_epoch"], r["id"]))


def mark_stored(conn: sqlite3.Connection, ids: list[int]) -> list[Mark]:
    """The rules for observations just stored, oldest first (inside the caller's transaction)."""
    run = Run()
    return [m for row in _oldest_first(conn, ids) for m in run.one(conn, row)]


def mark_stored_guarded(conn: sqlite3.Connection, ids: list[int], log: Callable[[str], None]) -> list[Mark]:
    """`mark_stored` for the worker, inside its storing transaction: a rule that fails (a bug, a
    row it cannot read) costs its marks, logged, never the observations being stored."""
    if not ids:
        return []
    try:
        with savepoint(conn, "marks"):
            return mark_stored(conn, ids)
    except (sqlite3.Error, ValueError, KeyError, TypeError) as exc:
        log(f"marking rules failed on observations {ids[:5]}: {type(exc).__name__}: {exc}")
        return []


def mark_all(conn: sqlite3.Connection, *, project: str | None = None, after_id: int = 0, dry_run: bool = False) -> Applied:
    """The rules over every observation (of `project`; with an id above `after_id`: what an import
    just added, ids never being reused), oldest first, committed a chunk at a time; a dry run
    writes nothing and still says what would be marked."""
    applied = Applied()
    run = Run(dry=dry_run)
    ids = marking.oldest_first(conn, project=project, after_id=after_id)
    for start in range(0, len(ids), CHUNK):
        if dry_run:
            applied.marks += [m for row in _oldest_first(conn, ids[start:start + CHUNK]) for m in run.one(conn, row)]
        else:
            with transaction(conn):
                applied.marks += [m for row in _oldest_first(conn, ids[start:start + CHUNK]) for m in run.one(conn, row)]
        applied.checked += len(ids[start:start + CHUNK])
    if not dry_run and not project and not after_id:
        with transaction(conn):
            marking.sweep_finished(conn)
    return applied


def sweep_step(conn: sqlite3.Connection, budget_s: float = 2.0, chunk: int = CHUNK) -> int:
    """Run the rules over the next observations stored before marks existed, for about
    `budget_s`, one committed chunk at a time (a kill loses at most a chunk, done again later).
    Returns how many were checked."""
    checked = 0
    run = Run()
    deadline = time.monotonic() + budget_s
    while time.monotonic() < deadline:
        with transaction(conn):
            place = marking.sweep(conn)
            if place is None or place.done:
                break
            ids = marking.sweep_ids(conn, place, chunk)
            for row in _oldest_first(conn, ids):
                run.one(conn, row)
            checked += len(ids)
            marking.sweep_through(conn, ids[-1] if ids else place.upto_id)
    return checked


def mark_added(conn: sqlite3.Connection, after_id: int) -> list[Mark]:
    """The rules over the observations an import just added (ids above `after_id`)."""
    return mark_all(conn, after_id=after_id).marks
