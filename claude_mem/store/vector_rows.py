"""The statements of the `vectors` and `vector_spaces` tables (migration 0016): rows of (kind,
row id, part, space, bytes). What the bytes are (float16 unit vectors) and how keys are named
is index/vectors.py's; this module stores and reads them as given."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from claude_mem.store.db import chunks

CHUNK = 500  # ids per IN (...): under SQLite's variable limit with room for the other parameters


def space_id(conn: sqlite3.Connection, space: str, *, create: bool = False) -> int | None:
    """The number of the space named `space` (made when `create`), None when there is none."""
    if create:
        conn.execute("INSERT OR IGNORE INTO vector_spaces (name) VALUES (?)", (space,))
    found = conn.execute("SELECT id FROM vector_spaces WHERE name = ?", (space,)).fetchone()
    return int(found[0]) if found else None


def put(conn: sqlite3.Connection, space: str, rows: list[tuple[str, int, str, bytes]]) -> None:
    """Store these (kind, row id, part, vector bytes) in `space`, replacing any of the same key."""
    if not rows:
        return
    number = space_id(conn, space, create=True)
    conn.executemany("INSERT OR REPLACE INTO vectors (kind, row_id, part, space, vector) VALUES (?, ?, ?, ?, ?)",
                     [(kind, row_id, part, number, vector) for kind, row_id, part, vector in rows])


def delete(conn: sqlite3.Connection, kind: str, row_ids: Iterable[int]) -> None:
    """Drop every vector of these rows, in any space."""
    for chunk in chunks(sorted({int(i) for i in row_ids}), CHUNK):
        conn.execute(f"DELETE FROM vectors WHERE kind = ? AND row_id IN ({','.join('?' * len(chunk))})", [kind, *chunk])


def of_rows(conn: sqlite3.Connection, space: str, kind: str, row_ids: Iterable[int],
            parts: list[str] | None = None) -> list[tuple[int, str, bytes]]:
    """(row id, part, vector bytes) of these rows in `space`, or of these `parts` of them."""
    number = space_id(conn, space)
    if number is None:
        return []
    only = parts or []
    rows: list[tuple[int, str, bytes]] = []
    for chunk in chunks(sorted({int(i) for i in row_ids}), CHUNK):
        sql = (f"SELECT row_id, part, vector FROM vectors WHERE kind = ? AND row_id IN ({','.join('?' * len(chunk))})"
               " AND space = ?" + (f" AND part IN ({','.join('?' * len(only))})" if only else ""))
        rows += conn.execute(sql, [kind, *chunk, number, *only]).fetchall()
    return rows
