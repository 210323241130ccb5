"""What search, its views and the index read of memory rows: rows by id (`Kind.row_sql`), the ids
among some that pass a search's filters, a turn's rows, a session's rows, sessions' latest
summaries. The keyword side's FTS5 statements are store/fts.py's.

`where` is what `reads.filter_clauses` made of a search's filters for one kind: (clauses on the
row as `t`, their parameters).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from claude_mem.store.db import chunks
from claude_mem.store.reads import KIND, TABLES

Where = tuple[list[str], list[Any]]
CHUNK = 500  # ids per IN (...): under SQLite's variable limit with room for the filters' parameters


def _and(clauses: list[str]) -> str:
    return "".join(f" AND {c}" for c in clauses)


def by_id(conn: sqlite3.Connection, kind: str, ids: Sequence[int]) -> list[dict[str, Any]]:
    """What recall reads of these rows (`Kind.row_sql`: text, files, type, project, turn, date),
    those still stored, as dicts (made from plain tuples: a search reads a few hundred, and
    `dict(sqlite3.Row)` took 2.5 x as long)."""
    rows: list[dict[str, Any]] = []
    cursor = conn.cursor()
    cursor.row_factory = None
    for chunk in chunks(list(ids), CHUNK):
        found = cursor.execute(KIND[kind].row_sql().format(marks=",".join("?" * len(chunk))), list(chunk)).fetchall()
        columns = [d[0] for d in cursor.description]
        rows += [dict(zip(columns, row, strict=True)) for row in found]
    return rows


def whole(conn: sqlite3.Connection, kind: str, ids: Sequence[int]) -> list[sqlite3.Row]:
    """Every column of these rows."""
    rows: list[sqlite3.Row] = []
    for chunk in chunks(list(ids), CHUNK):
        rows += conn.execute(f"SELECT * FROM {TABLES[kind]} WHERE id IN ({','.join('?' * len(chunk))})", list(chunk)).fetchall()
    return rows


def passing(conn: sqlite3.Connection, kind: str, ids: Iterable[int], where: Where, *, hint: str = "") -> list[int]:
    """Those of `ids` whose rows pass `where`, in sorted batches of ids (`hint`: as for `Kind.source`)."""
    clauses, params = where
    found: list[int] = []
    for chunk in chunks(sorted(set(ids)), CHUNK):
        sql = f"SELECT t.id FROM {KIND[kind].source('t', hint)} WHERE t.id IN ({','.join('?' * len(chunk))})" + _and(clauses)
        found += [int(r[0]) for r in conn.execute(sql, [*chunk, *params])]
    return found


def matching(conn: sqlite3.Connection, kind: str, where: Where) -> list[int]:
    """The ids of every row of `kind` passing `where`."""
    clauses, params = where
    sql = f"SELECT t.id FROM {KIND[kind].source()}" + (" WHERE " + " AND ".join(clauses) if clauses else "")
    return [r[0] for r in conn.execute(sql, params)]


def text_rows(conn: sqlite3.Connection, kind: str, where: Where, limit: int) -> list[dict[str, Any]]:
    """At most `limit` rows passing `where`, with the columns that name their documents (id and text)."""
    clauses, params = where
    columns = ", ".join(f"t.{c}" for c in ("id", *KIND[kind].text_columns))
    sql = (f"SELECT {columns} FROM {KIND[kind].source()}" + (" WHERE " + " AND ".join(clauses) if clauses else "")
           + " LIMIT ?")
    return [dict(r) for r in conn.execute(sql, [*params, limit])]


def prompt_neighbours(conn: sqlite3.Connection, ids: Sequence[int], where: Where) -> list[tuple[int, int]]:
    """(prompt, neighbour) for each prompt just before or after one of these in its session that passes `where`."""
    clauses, params = where
    sql = ("SELECT p.id, t.id FROM user_prompts p JOIN user_prompts t ON t.session_id = p.session_id"
           " AND t.prompt_number IN (p.prompt_number - 1, p.prompt_number + 1)"
           f"{KIND['prompt'].session_join()} WHERE p.id IN ({','.join('?' * len(ids))})" + _and(clauses))
    return [(int(a), int(b)) for a, b in conn.execute(sql, [*ids, *params])]


def turn_observations(conn: sqlite3.Connection, session_id: str, prompt_number: int, where: Where) -> list[int]:
    """The ids of a turn's observations that pass `where`, in the order they were stored."""
    clauses, params = where
    sql = (f"SELECT t.id FROM {KIND['observation'].source()} WHERE t.session_id = ? AND t.prompt_number = ?"
           + _and(clauses) + " ORDER BY t.id")
    return [int(r[0]) for r in conn.execute(sql, [session_id, prompt_number, *params])]


def holds_one_prompt_alone(conn: sqlite3.Connection, session_id: str) -> bool:
    """The session has one prompt, and no observation or summary yet."""
    return conn.execute(
        "SELECT (SELECT count(*) FROM user_prompts WHERE session_id = ?) = 1"
        " AND NOT EXISTS (SELECT 1 FROM observations WHERE session_id = ?)"
        " AND NOT EXISTS (SELECT 1 FROM session_summaries WHERE session_id = ?)", (session_id, session_id, session_id)).fetchone()[0] == 1


def session_of(conn: sqlite3.Connection, kind: str, row_id: int) -> str | None:
    """The session a row belongs to; None when there is no such row."""
    found = conn.execute(f"SELECT session_id FROM {TABLES[kind]} WHERE id = ?", (row_id,)).fetchone()
    return None if found is None else str(found[0])


def session_rows(conn: sqlite3.Connection, session_id: str) -> tuple[str | None, dict[str, list[sqlite3.Row]]]:
    """The session's project (None for a session never recorded), and its rows of every kind."""
    project = conn.execute("SELECT project FROM sdk_sessions WHERE claude_session_id = ?", (session_id,)).fetchone()
    rows = {kind: conn.execute(f"SELECT * FROM {table} WHERE session_id = ?", (session_id,)).fetchall()
            for kind, table in TABLES.items()}
    return (project[0] if project else None), rows


def latest_summaries(conn: sqlite3.Connection, project: str | None, limit: int) -> list[dict[str, Any]]:
    """Per session (of `project`, or of all), its most recent summary with `turns` (how many it
    has) and `observation_count`, newest sessions first."""
    where = "WHERE s.project = ?" if project else ""
    sql = (f"SELECT s.*, (SELECT COUNT(*) FROM session_summaries c WHERE c.session_id = s.session_id) AS turns,"
           f" (SELECT COUNT(*) FROM observations o WHERE o.session_id = s.session_id) AS observation_count"
           f" FROM session_summaries s {where} {'AND' if where else 'WHERE'} s.id = (SELECT l.id FROM session_summaries l"
           " WHERE l.session_id = s.session_id ORDER BY l.created_at_epoch DESC, l.id DESC LIMIT 1)"
           " ORDER BY s.created_at_epoch DESC, s.id DESC LIMIT ?")
    return [dict(r) for r in conn.execute(sql, [project, limit] if project else [limit])]
