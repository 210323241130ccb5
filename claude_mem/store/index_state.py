"""The semantic index's bookkeeping in SQLite: `index_state` (which row is indexed, into which
collection and layout, with its vectors kept or not) and what the index reads of the memory
tables to keep up with them (ids, rows without text, rows kept off a server).

The index (index/semantic_index.py, index/legacy.py, index/drift.py) decides; the statements are
here. `collection_id` is the index's state key (`Index._state_key`: collection, installation,
layout); the bare collection id marks rows indexed before installation ids (index/legacy.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from claude_mem.store.reads import JSON_LIST_COLUMNS, KIND, TABLES


def row_ids(conn: sqlite3.Connection, kind: str) -> set[int]:
    """Every id of `kind`'s table."""
    return {r[0] for r in conn.execute(f"SELECT id FROM {TABLES[kind]}")}


def alive_ids(conn: sqlite3.Connection, kind: str, ids: Sequence[int]) -> set[int]:
    """Those of `ids` still in `kind`'s table (at most SQLite's parameter limit of them)."""
    marks = ",".join("?" * len(ids))
    return {r[0] for r in conn.execute(f"SELECT id FROM {TABLES[kind]} WHERE id IN ({marks})", list(ids))}


def has_collection(conn: sqlite3.Connection, collection_id: str) -> bool:
    """Some row is recorded under this state key."""
    return conn.execute("SELECT 1 FROM index_state WHERE collection_id = ? LIMIT 1", (collection_id,)).fetchone() is not None


def indexed_ids(conn: sqlite3.Connection, kind: str, collection_id: str) -> list[int]:
    """The rows of `kind` recorded under this state key."""
    return [r[0] for r in conn.execute("SELECT row_id FROM index_state WHERE kind = ? AND collection_id = ?",
                                       (kind, collection_id))]


def held_ids(conn: sqlite3.Connection, kind: str, keys: tuple[str, str], ids: Sequence[int]) -> list[int]:
    """Those of `ids` recorded under either state key, or under '' ("maybe still held", store/forget.py)."""
    marks = ",".join("?" * len(ids))
    return [r[0] for r in conn.execute(
        f"SELECT row_id FROM index_state WHERE kind = ? AND collection_id IN (?, ?, '') AND row_id IN ({marks})",
        [kind, *keys, *ids])]


def not_indexed(conn: sqlite3.Connection, kind: str, collection_id: str) -> list[int]:
    """The rows of `kind` not recorded under this state key, in id order."""
    return [r[0] for r in conn.execute(
        f"SELECT t.id FROM {TABLES[kind]} t LEFT JOIN index_state s ON s.kind = ? AND s.row_id = t.id"
        " WHERE s.row_id IS NULL OR s.collection_id != ? ORDER BY t.id", (kind, collection_id))]


def orphans(conn: sqlite3.Connection, kind: str) -> list[int]:
    """Rows recorded as indexed that `kind`'s table no longer holds."""
    return [r[0] for r in conn.execute(
        f"SELECT s.row_id FROM index_state s LEFT JOIN {TABLES[kind]} t ON t.id = s.row_id"
        " WHERE s.kind = ? AND t.id IS NULL", (kind,))]


def unfilled_ids(conn: sqlite3.Connection, kind: str, collection_id: str) -> list[int]:
    """Rows recorded under this key without their vectors in SQLite (before migration 0016), in id order."""
    return [r[0] for r in conn.execute(
        "SELECT row_id FROM index_state WHERE kind = ? AND collection_id = ? AND vectors = 0 ORDER BY row_id",
        (kind, collection_id))]


def unfilled_count(conn: sqlite3.Connection, kind: str) -> int:
    """Rows of `kind` still in SQLite, indexed without their vectors kept."""
    return int(conn.execute(f"SELECT COUNT(*) FROM index_state s JOIN {TABLES[kind]} t ON t.id = s.row_id"
                            " WHERE s.kind = ? AND s.vectors = 0", (kind,)).fetchone()[0])


def record_indexed(conn: sqlite3.Connection, kind: str, ids: Iterable[int], at_ms: int, collection_id: str) -> None:
    """These rows are indexed under this key, their vectors kept (inside the caller's transaction)."""
    conn.executemany(
        "INSERT INTO index_state (kind, row_id, indexed_at, collection_id, vectors) VALUES (?, ?, ?, ?, 1)"
        " ON CONFLICT (kind, row_id) DO UPDATE SET indexed_at = excluded.indexed_at,"
        " collection_id = excluded.collection_id, vectors = 1", [(kind, row_id, at_ms, collection_id) for row_id in ids])


def mark_filled(conn: sqlite3.Connection, kind: str, collection_id: str, ids: Sequence[int]) -> None:
    """These rows' vectors are kept now (inside the caller's transaction)."""
    conn.execute(f"UPDATE index_state SET vectors = 1 WHERE kind = ? AND collection_id = ?"
                 f" AND row_id IN ({','.join('?' * len(ids))})", [kind, collection_id, *ids])


def forget(conn: sqlite3.Connection, kind: str, ids: Iterable[int]) -> None:
    """These rows are indexed no more (inside the caller's transaction)."""
    conn.executemany("DELETE FROM index_state WHERE kind = ? AND row_id = ?", [(kind, i) for i in ids])


def rename(conn: sqlite3.Connection, old: str, new: str) -> None:
    """Every row recorded under `old` is recorded under `new` (inside the caller's transaction)."""
    conn.execute("UPDATE index_state SET collection_id = ? WHERE collection_id = ?", (new, old))


def rename_laid_out(conn: sqlite3.Connection, old: str, new: str) -> None:
    """The rows under `old` whose documents the new layout makes alike move to `new`: every
    summary and prompt, and the observations without a fact (inside the caller's transaction)."""
    conn.execute("UPDATE index_state SET collection_id = ? WHERE collection_id = ? AND (kind != 'observation' OR"
                 " row_id IN (SELECT id FROM observations WHERE NOT EXISTS (SELECT 1 FROM json_each("
                 "CASE WHEN json_valid(facts) THEN facts ELSE '[]' END) WHERE trim(value) != '')))", (new, old))


def clear(conn: sqlite3.Connection) -> None:
    """Nothing is indexed, no vector kept (inside the caller's transaction: a rebuild)."""
    conn.execute("DELETE FROM index_state")
    conn.execute("DELETE FROM vectors")


def rows_without_documents(conn: sqlite3.Connection, kind: str) -> set[int]:
    """Rows with no text, which have no documents by design. Blank means what document_texts
    means (Python's strip): SQL's trim() strips spaces only."""
    conn.create_function("blank", 1, lambda text: not isinstance(text, str) or not text.strip(), deterministic=True)
    blanks = [f"NOT EXISTS (SELECT 1 FROM json_each({c}) WHERE NOT blank(value))" if c in JSON_LIST_COLUMNS
              else f"blank({c})" for c in KIND[kind].text_columns]
    return {r[0] for r in conn.execute(f"SELECT id FROM {TABLES[kind]} WHERE " + " AND ".join(blanks))}


def rows_of_projects(conn: sqlite3.Connection, kind: str, projects: Iterable[str]) -> set[int]:
    """Rows of `kind` filed under these projects."""
    wanted = sorted(set(projects))
    if not wanted:
        return set()
    sql = f"SELECT t.id FROM {KIND[kind].source()} WHERE {KIND[kind].project_column()} IN ({','.join('?' * len(wanted))})"
    return {r[0] for r in conn.execute(sql, wanted)}


def newest_texts(conn: sqlite3.Connection, limit: int) -> list[str]:
    """The `limit` newest prompts, then the `limit` newest observations' title, subtitle and
    narrative: what the user writes, and what the observer wrote of it."""
    texts = [r[0] for r in conn.execute("SELECT prompt_text FROM user_prompts ORDER BY id DESC LIMIT ?", (limit,))]
    texts += [r[0] for r in conn.execute(
        "SELECT title || ' ' || subtitle || ' ' || narrative FROM observations ORDER BY id DESC LIMIT ?", (limit,))]
    return texts
