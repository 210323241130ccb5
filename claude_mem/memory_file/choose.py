"""What goes into the memory file: the project's current memories sorted into kinds, ranked by
salience, short-lived kinds faded with age, each kind given its share of the line budget.

The kinds and their shares follow seed 001 (architecture + pattern 50, decision 25, gotcha 20,
progress 30, context 15 lines of ~150): what stays true (decisions, gotchas and their fixes, how
things work) never fades; progress fades over 7 days and a session's context over 30, hidden
below 0.3 of their weight. The current side of a knowledge update (an observation that
superseded another: a port, a tool, a decision changed) is knowledge, whatever its type and age.

Age is counted from the project's newest memory, not from the wall clock: the file then depends
on what is stored alone, so running it again with nothing new gives the same bytes (no churn in
`git status`), and a project left alone for a month keeps its last progress in view.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from claude_mem.store import project_memory
from claude_mem.store.marks import repeats, superseding_ids
from claude_mem.store.rows import StoredObservation, StoredSummary

DAY_MS = 86_400_000
HIDDEN_BELOW = 0.3  # seed 001: a faded memory under this weight leaves the file (still searchable)


@dataclass(frozen=True)
class KindSpec:
    key: str
    heading: str
    share: int  # of the line budget, relative to the others (seed 001's lines out of 140)
    fade_days: float | None  # None: knowledge, never fades


KINDS = (
    KindSpec("decisions", "Decisions", 25, None),
    KindSpec("gotchas", "Gotchas and fixes", 20, None),
    KindSpec("knowledge", "How things work", 50, None),
    KindSpec("progress", "Recent progress", 30, 7.0),
    KindSpec("context", "Recent sessions", 15, 30.0),
)


@dataclass
class Entry:
    text: str
    epoch_ms: int
    row_id: int
    salience: float


@dataclass
class Chosen:
    """One kind's entries (best first) and the lines it may take, heading included."""

    spec: KindSpec
    entries: list[Entry] = field(default_factory=list)
    lines: int = 0

    @property
    def wanted(self) -> int:
        return 1 + len(self.entries) if self.entries else 0


def kind_of(row: StoredObservation, superseding: set[int]) -> str:
    """Which kind an observation belongs to. The heuristic synthesizer's reads, listings, edits
    and reruns say what was done, not how things are: progress, unless a failure was fixed."""
    kind = row.type
    if kind == "bugfix":
        return "gotchas"
    if row.source == "heuristic":
        return "progress"
    if kind == "decision":
        return "decisions"
    if kind == "discovery" or row.id in superseding:
        return "knowledge"
    return "progress"  # feature, change, refactor


def weight(spec: KindSpec, age_ms: int) -> float:
    if spec.fade_days is None:
        return 1.0
    return max(0.0, 1.0 - age_ms / (spec.fade_days * DAY_MS))


def observation_entries(conn: sqlite3.Connection, project: str) -> tuple[list[StoredObservation], set[int]]:
    """The project's current observations (none the write guard withheld), and those of them that
    superseded another."""
    return project_memory.current_observations(conn, project), superseding_ids(conn, project)


def latest_summaries(conn: sqlite3.Connection, project: str, limit: int = 50) -> list[StoredSummary]:
    """The newest summary of each of the project's latest sessions."""
    return project_memory.latest_summaries(conn, project, limit)


def summary_text(s: StoredSummary) -> str:
    request = " ".join(s.request.split())
    done = " ".join((s.completed or s.learned).split())
    return f"{request} → {done}" if request and done else (request or done)


def choose(conn: sqlite3.Connection, project: str, total_lines: int) -> list[Chosen]:
    """Each kind with its entries (faded ones gone, best first) and its lines of `total_lines`."""
    rows, superseding = observation_entries(conn, project)
    summaries = latest_summaries(conn, project)
    stamps = [r.created_at_epoch for r in rows] + [s.created_at_epoch for s in summaries]
    if not stamps:
        return []
    newest = max(stamps)
    copies = repeats(conn, [r.id for r in rows])
    chosen = {spec.key: Chosen(spec) for spec in KINDS}
    for row in rows:
        spec = chosen[kind_of(row, superseding)].spec
        w = weight(spec, newest - row.created_at_epoch)
        if w < HIDDEN_BELOW or not row.title.strip():
            continue
        # A claim recorded again and again matters more (seed 001's access count, from what is stored).
        seen = copies.get(row.id, (1, 0))[0]
        chosen[spec.key].entries.append(Entry(row.title, row.created_at_epoch, row.id, w * (1 + min(seen - 1, 4) / 4)))
    context = chosen["context"]
    for s in summaries:
        w = weight(context.spec, newest - s.created_at_epoch)
        text = summary_text(s)
        if w >= HIDDEN_BELOW and text:
            context.entries.append(Entry(text, s.created_at_epoch, s.id, w))
    for c in chosen.values():
        # Best first; among equals the newer; the id settles the rest (a stable order).
        c.entries.sort(key=lambda e: (-round(e.salience, 6), -e.epoch_ms, -e.row_id))
    kinds = [chosen[spec.key] for spec in KINDS]
    share_lines(kinds, total_lines)
    return [c for c in kinds if c.lines]


def share_lines(kinds: list[Chosen], total: int) -> None:
    """Each kind gets its share of `total`, at most what it wants; what a kind leaves unused goes
    to the kinds that want more, in the order of KINDS (seed 001: unused budget redistributed)."""
    wanting = [c for c in kinds if c.wanted]
    shares = sum(c.spec.share for c in wanting)
    for c in wanting:
        c.lines = min(c.wanted, total * c.spec.share // shares) if shares else 0
    spare = total - sum(c.lines for c in wanting)
    for c in wanting:
        more = min(spare, c.wanted - c.lines)
        c.lines += more
        spare -= more
    for c in wanting:
        if c.lines < min(3, c.wanted):  # a heading with no room for an entry and its "more" line says nothing
            c.lines = 0
