"""How far the semantic index is from SQLite, per kind (for `status`, `doctor` and the viewer):
rows without documents, documents of rows SQLite no longer has, and rows indexed without their
vectors kept in SQLite (index/vectors.py; the next catch-up fills them)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any, Protocol

from claude_mem.identity import Installation
from claude_mem.index.documents import parse_doc_id, split_doc_id
from claude_mem.store.reads import JSON_LIST_COLUMNS, KIND, KINDS, TABLES


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
        sqlite_ids = {r[0] for r in conn.execute(f"SELECT id FROM {TABLES[kind]}")}
        empty = rows_without_documents(conn, kind) | rows_kept_local(conn, kind, index.local_projects)
        missing = len(sqlite_ids - chroma_ids[kind] - empty)
        stale = len(chroma_ids[kind] - sqlite_ids)
        unfilled = conn.execute("SELECT COUNT(*) FROM index_state s JOIN " + TABLES[kind] + " t ON t.id = s.row_id"
                                " WHERE s.kind = ? AND s.vectors = 0", (kind,)).fetchone()[0]
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


def rows_without_documents(conn: sqlite3.Connection, kind: str) -> set[int]:
    # A row with no text has no documents by design; it is not "missing". Blank means what
    # document_texts means (Python's strip): SQL's trim() strips spaces only.
    conn.create_function("blank", 1, lambda text: not isinstance(text, str) or not text.strip(), deterministic=True)
    blanks = [f"NOT EXISTS (SELECT 1 FROM json_each({c}) WHERE NOT blank(value))" if c in JSON_LIST_COLUMNS
              else f"blank({c})" for c in KIND[kind].text_columns]
    return {r[0] for r in conn.execute(f"SELECT id FROM {TABLES[kind]} WHERE " + " AND ".join(blanks))}


def rows_kept_local(conn: sqlite3.Connection, kind: str, projects: frozenset[str]) -> set[int]:
    """Rows of projects that setting local_projects keeps off a server: not missing there."""
    if not projects:
        return set()
    marks = ",".join("?" * len(projects))
    sql = f"SELECT t.id FROM {KIND[kind].source()} WHERE {KIND[kind].project_column()} IN ({marks})"
    return {r[0] for r in conn.execute(sql, sorted(projects))}
