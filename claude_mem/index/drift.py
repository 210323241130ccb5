"""How far the semantic index is from SQLite, per kind (for `status`, `doctor` and the viewer):
rows without documents, documents of rows SQLite no longer has, and rows indexed without their
vectors kept in SQLite (index/vectors.py; the next catch-up fills them)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any, Protocol

from claude_mem.identity import Installation
from claude_mem.index.documents import parse_doc_id, split_doc_id
from claude_mem.store import index_state
from claude_mem.store.reads import KINDS


class Measured(Protocol):
    """What the report reads of the index (semantic_index.Index, which calls it)."""

    url: str
    local_projects: frozenset[str]

    @property
    def installation(self) -> Installation: ...
    @property
    def location(self) -> str: ...
    def id_pages(self, where: dict[str, Any] | None, what: str = ...) -> Iterator[list[str]]: ...
    def owns(self, owner: str | None) -> bool: ...
    def count(self) -> int: ...


def drift_report(index: Measured, conn: sqlite3.Connection) -> dict[str, Any]:
    """This installation's rows in SQLite against rows with documents in Chroma, per kind:
    `missing` are rows without documents, `stale` are documents of rows SQLite no longer has,
    `unfilled` rows indexed without their vectors in SQLite.
    On a server, also `others`: documents of other installations there."""
    # One pass over the ids alone (they name kind and row): 0.8 s at 120k documents, against
    # 9.7 s reading metadata. On a server, teammates' are left out by the query.
    chroma_ids: dict[str, set[int]] = {kind: set() for kind in KINDS}
    mine = 0
    for page in index.id_pages({"installation": index.installation.id} if index.url else None):
        for doc_id in page:
            parsed = parse_doc_id(doc_id)
            if parsed is not None and index.owns(split_doc_id(doc_id)[1]):
                chroma_ids[parsed[0]].add(parsed[1])
                mine += 1
    report: dict[str, Any] = {}
    in_sync = True
    for kind in KINDS:
        sqlite_ids = index_state.row_ids(conn, kind)
        # A row with no text has no documents by design, and one of a project setting local_projects
        # keeps off a server has none there: neither is "missing".
        empty = index_state.rows_without_documents(conn, kind) | index_state.rows_of_projects(conn, kind, index.local_projects)
        missing = len(sqlite_ids - chroma_ids[kind] - empty)
        stale = len(chroma_ids[kind] - sqlite_ids)
        unfilled = index_state.unfilled_count(conn, kind)
        in_sync = in_sync and not missing and not stale and not unfilled
        report[kind] = {"sqlite": len(sqlite_ids), "indexed": len(chroma_ids[kind]), "missing": missing, "stale": stale,
                        "unfilled": unfilled}
    report["in_sync"] = in_sync
    report["location"] = index.location
    report["installation"] = {"id": index.installation.id, "name": index.installation.name}
    if index.url:
        report["shared"] = {"documents_sent": mine, "others": max(0, index.count() - mine),
                            "local_projects": sorted(index.local_projects)}
    return report

