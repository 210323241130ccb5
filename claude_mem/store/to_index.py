"""Which rows the memory service's indexer (service/indexer.py) has still to give the semantic
index: those above the newest id it has seen, and those whose documents are stale (an edit rewrote
them, migration 0018; a forget could not reach the index).
"""

from __future__ import annotations

import sqlite3

from claude_mem.store.reads import TABLES

# Through the partial index, which the planner would not pick by itself over the primary key.
STALE_ROWS = "SELECT row_id FROM index_state INDEXED BY index_state_stale WHERE kind = ? AND collection_id = ''"


def stale(conn: sqlite3.Connection, kind: str) -> list[int]:
    """The ids of the rows of `kind` whose documents are to be made again (or dropped, the row gone)."""
    return [r[0] for r in conn.execute(STALE_ROWS, (kind,))]


def newest_id(conn: sqlite3.Connection, kind: str) -> int:
    return int(conn.execute(f"SELECT COALESCE(MAX(id), 0) FROM {TABLES[kind]}").fetchone()[0])


def ids_above(conn: sqlite3.Connection, kind: str, above: int) -> list[int]:
    return [r[0] for r in conn.execute(f"SELECT id FROM {TABLES[kind]} WHERE id > ?", (above,))]
