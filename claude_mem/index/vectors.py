"""The vectors of indexed rows, kept in SQLite beside Chroma's (migration 0016).

    write(conn, kind, row_ids, vectors)   read(conn, space, keys)   of_rows(conn, space, kind, ids)

Search reads a candidate's vectors here by row (a few hundred a query: ~10x cheaper than
Chroma's get by id), and an observation's facts have their vectors here only (documents.
vector_texts). A row's vectors are written with its index_state row, in the caller's transaction,
and are read only while that row names the collection asked for (`space`, Index.space): after
a switch of model, the rows not yet indexed again into the new collection have none.
Stored as float16: 768 bytes for MiniLM's 384 dimensions, and a cosine within ~1e-3 of float32's."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from claude_mem.index.documents import split_doc_id
from claude_mem.store.db import chunks
from claude_mem.store.reads import KIND_OF_PREFIX, REF_PREFIX

if TYPE_CHECKING:
    import numpy as np

CHUNK = 500  # ids per IN (...): under SQLite's variable limit with room for the other parameters


def key_parts(key: str) -> tuple[str, int, str] | None:
    """("observation", 12, "fact:0") of `obs:12:fact:0`; None for anything else (a teammate's
    full id, a kind this version does not know)."""
    name, owner = split_doc_id(key)
    if owner is not None:
        return None
    prefix, _, rest = name.partition(":")
    number, _, part = rest.partition(":")
    kind = KIND_OF_PREFIX.get(prefix)
    return (kind, int(number), part) if kind and number.isascii() and number.isdigit() else None


def key_of(kind: str, row_id: int, part: str) -> str:
    return f"{REF_PREFIX[kind]}:{row_id}" + (f":{part}" if part else "")


def write(conn: sqlite3.Connection, kind: str, row_ids: Iterable[int], vectors: Mapping[str, Any],
          alive: Iterable[int] | None = None) -> None:
    """Replace the vectors of these rows by `vectors` (key -> unit vector; those of other rows, or
    of rows not `alive` (forgotten meanwhile), are left out). Call inside the transaction that
    writes their index_state rows."""
    import numpy as np

    ids = sorted({int(i) for i in row_ids})
    wanted = set(ids) if alive is None else set(ids) & {int(i) for i in alive}
    for chunk in chunks(ids, CHUNK):
        conn.execute(f"DELETE FROM vectors WHERE kind = ? AND row_id IN ({','.join('?' * len(chunk))})", [kind, *chunk])
    rows = []
    for key, vector in vectors.items():
        parts = key_parts(key)
        if parts is not None and parts[0] == kind and parts[1] in wanted:
            rows.append((kind, parts[1], parts[2], np.asarray(vector, dtype=np.float16).tobytes()))
    conn.executemany("INSERT OR REPLACE INTO vectors (kind, row_id, part, vector) VALUES (?, ?, ?, ?)", rows)


def _select(count: int) -> str:
    return ("SELECT v.row_id, v.part, v.vector FROM vectors v JOIN index_state s ON s.kind = v.kind AND s.row_id = v.row_id"
            f" WHERE v.kind = ? AND v.row_id IN ({','.join('?' * count)}) AND s.collection_id = ?")


def of_rows(conn: sqlite3.Connection, space: str, kind: str, row_ids: Iterable[int]) -> dict[str, np.ndarray]:
    """Every vector of these rows (an observation's facts too), by key, as float32."""
    import numpy as np

    out: dict[str, np.ndarray] = {}
    for chunk in chunks(sorted({int(i) for i in row_ids}), CHUNK):
        for row_id, part, blob in conn.execute(_select(len(chunk)), [kind, *chunk, space]):
            out[key_of(kind, row_id, part)] = np.frombuffer(blob, dtype=np.float16).astype(np.float32)
    return out


def read(conn: sqlite3.Connection, space: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
    """The vectors of these document keys that are kept here (others are left out: a teammate's,
    a row not yet filled), as float32."""
    by_kind: dict[str, set[int]] = {}
    wanted: set[str] = set()
    for key in keys:
        parts = key_parts(key)
        if parts is not None:
            by_kind.setdefault(parts[0], set()).add(parts[1])
            wanted.add(key)
    out: dict[str, np.ndarray] = {}
    for kind, ids in by_kind.items():
        out.update((k, v) for k, v in of_rows(conn, space, kind, ids).items() if k in wanted)
    return out
