"""What one search works on: its filters, said as SQL for every kind of row, and its candidates
(rows with what each side of the search scored them), loaded in batches."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from claude_mem.store import recall_rows
from claude_mem.store.reads import KINDS, filter_clauses

if TYPE_CHECKING:
    from claude_mem.recall.teammates import RemoteRow


@dataclass
class Candidate:
    """A row either side of the search found (or a turn brought in), and what it scored."""

    kind: str
    id: int
    bm25: float = 0.0
    cosine: float | None = None  # around the pool's centre (semantic.py): for ranking
    raw_cosine: float | None = None  # plain: for the relevance floor (MIN_COSINE)
    doc_id: str = ""  # the best matching document (vector side)
    row: dict[str, Any] = field(default_factory=dict)
    remote: RemoteRow | None = None  # a teammate's memory: its row is made from its documents
    neighbour_bm25: float = 0.0  # the best BM25 of the prompts before and after this one (prompts only)


@dataclass(frozen=True)
class Filters:
    """What a search is narrowed to; every side applies all of it, inside its own query."""

    project: str | None
    type_: str | None
    session_id: str | None
    since_ms: int | None
    until_ms: int | None
    file: str | None


def has_filters(f: Filters) -> bool:
    return bool(f.project or f.type_ or f.session_id or f.file) or f.since_ms is not None or f.until_ms is not None


def sql_filters(kind: str, f: Filters, alias: str) -> tuple[list[str], list[Any]] | None:
    """WHERE clauses for one kind, or None when the filters exclude the kind entirely."""
    return filter_clauses(kind, alias=alias, project=f.project, type_=f.type_, session_id=f.session_id,
                          since_ms=f.since_ms, until_ms=f.until_ms, file=f.file)


def load_rows(conn: sqlite3.Connection, candidates: dict[tuple[str, int], Candidate]) -> None:
    """Read the rows of the candidates that have none yet (`recall_rows.by_id`, 500 ids a query)."""
    missing: dict[str, list[int]] = {}
    for c in candidates.values():  # one pass: a search calls this several times over hundreds of candidates
        if not c.row:
            missing.setdefault(c.kind, []).append(c.id)
    for kind in KINDS:
        for row in recall_rows.by_id(conn, kind, missing.get(kind, [])):
            candidates[(kind, int(row["id"]))].row = row
