"""The FTS5 statements: search's keyword side (recall/keyword.py: BM25 within a row budget, the
filters applied in the same statement) and the prompt push's keyword fallback (push/prompt.py).
What a match expression is made of is text/terms.py's (`fts_match`); the choice of words is the
callers'.

Standard library only: the prompt hook reads through here.
"""

from __future__ import annotations

import sqlite3

from claude_mem.store.reads import KIND
from claude_mem.store.withheld import shown

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any


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
    sql = (f"SELECT t.id, -bm25({fts}) AS score FROM {fts} JOIN {described.table} t ON t.id = {fts}.rowid"
           f"{described.session_join()} WHERE {fts} MATCH ?" + "".join(f" AND {c}" for c in clauses)
           + " ORDER BY score DESC LIMIT ?")
    return [(int(row_id), float(score)) for row_id, score in conn.execute(sql, [match, *params, pool])]


def database_file(conn: sqlite3.Connection) -> str:
    """The main database's file ("" in memory)."""
    return str(conn.execute("PRAGMA database_list").fetchone()[2] or "")


# What the prompt push shows of a keyword match (title, detail), other sessions' and given ones alone.
_PUSH_SQL = {
    "observation": "SELECT t.id, t.session_id, t.type, t.title, t.subtitle, t.narrative, t.facts, t.concepts,"
                   " t.created_at_epoch, -bm25(observations_fts) AS score FROM observations_fts"
                   " JOIN observations t ON t.id = observations_fts.rowid"
                   " WHERE observations_fts MATCH ? AND t.project = ? AND t.session_id != ?"
                   f" AND {shown('t')} ORDER BY score DESC LIMIT ?",
    "summary": "SELECT t.id, t.session_id, NULL AS type, t.request, t.investigated, t.learned, t.completed, t.next_steps,"
               " t.notes, t.created_at_epoch, -bm25(session_summaries_fts) AS score FROM session_summaries_fts"
               " JOIN session_summaries t ON t.id = session_summaries_fts.rowid"
               " WHERE session_summaries_fts MATCH ? AND t.project = ? AND t.session_id != ?"
               f" AND {shown('t')} ORDER BY score DESC LIMIT ?",
}
PUSH_KINDS = tuple(_PUSH_SQL)


def push_matches(conn: sqlite3.Connection, kind: str, match: str, project: str, session_id: str,
                 pool: int) -> list[sqlite3.Row]:
    """The `pool` best observations or summaries (`kind`) of `project` matching, none of this
    session's nor withheld, best first: their text columns, `type` (NULL for a summary) and `score`."""
    return conn.execute(_PUSH_SQL[kind], (match, project, session_id, pool)).fetchall()
