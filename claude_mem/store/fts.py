"""The FTS5 statements of search's keyword side (recall/keyword.py: BM25 within a row budget, the
filters applied in the same statement). What a match expression is made of is text/terms.py's
(`fts_match`); the choice of words is the caller's. The prompt push's own keyword statements are
in store/push_reads.py, which the hook loads alone."""

from __future__ import annotations

import sqlite3
from typing import Any

from claude_mem.store.reads import KIND


def largest_rowid(conn: sqlite3.Connection, kind: str) -> int:
    """The largest rowid of `kind`'s FTS table (0 when empty): how much it has grown since a count."""
    return int(conn.execute(f"SELECT max(rowid) FROM {KIND[kind].fts}").fetchone()[0] or 0)


def count_matches(conn: sqlite3.Connection, kind: str, match: str, limit: int) -> int:
    """Rows of `kind` matching, counted up to `limit`."""
    table = KIND[kind].fts
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"
    return int(conn.execute(sql, (match, limit)).fetchone()[0])


def best_matches(conn: sqlite3.Connection, kind: str, match: str, where: tuple[list[str], list[Any]],
                 pool: int) -> list[tuple[int, float]]:
    """(id, -BM25) of the `pool` best rows of `kind` matching and passing `where` (reads.filter_clauses
    with the row as `t`), best first."""
    described = KIND[kind]
    fts = described.fts
    clauses, params = where
    if not clauses:
        # Nothing to check in the row: the keyword index alone (its rowid is the row's id). The
        # join costs ~1 us for each matching row, all of them ranked (a third of the statement).
        sql = f"SELECT rowid, -bm25({fts}) AS score FROM {fts} WHERE {fts} MATCH ? ORDER BY score DESC LIMIT ?"
        return [(int(row_id), float(score)) for row_id, score in conn.execute(sql, [match, pool])]
    sql = (f"SELECT t.id, -bm25({fts}) AS score FROM {fts} JOIN {described.table} t ON t.id = {fts}.rowid"
           f"{described.session_join()} WHERE {fts} MATCH ?" + "".join(f" AND {c}" for c in clauses)
           + " ORDER BY score DESC LIMIT ?")
    return [(int(row_id), float(score)) for row_id, score in conn.execute(sql, [match, *params, pool])]


def database_file(conn: sqlite3.Connection) -> str:
    """The main database's file ("" in memory)."""
    return str(conn.execute("PRAGMA database_list").fetchone()[2] or "")

