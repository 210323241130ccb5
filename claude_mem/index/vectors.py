"""The vectors of indexed rows, kept in SQLite beside Chroma's (migration 0016).

    write(conn, space, kind, row_ids, vectors)   delete(conn, kind, row_ids)
    read(conn, space, keys)   of_rows(conn, space, kind, ids)   matrix(conn, space, kind, ids)

Search reads a candidate's vectors here by row (a few hundred a query: 1.3 ms at 100k, against
5.2 ms for Chroma's get by id), and an observation's facts have their vectors here only (documents.
vector_texts). A row's vectors are written with its index_state row, in the caller's transaction,
for the collection it names (`space`, Index.space), and read for one: after a switch of model,
the rows not yet indexed again into the new collection have none.
Stored as float16: 768 bytes for MiniLM's 384 dimensions, and a cosine within ~1e-3 of float32's
(the statements: store/vector_rows.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from claude_mem.index.documents import parse_doc_id, split_doc_id
from claude_mem.store import vector_rows
from claude_mem.store.reads import REF_PREFIX

if TYPE_CHECKING:
    import numpy as np

def key_parts(key: str) -> tuple[str, int, str] | None:
    """("observation", 12, "fact:0") of `obs:12:fact:0`; None for anything else (a teammate's
    full id, a kind this version does not know)."""
    name, owner = split_doc_id(key)
    found = parse_doc_id(name) if owner is None else None
    return None if found is None else (*found, name.partition(":")[2].partition(":")[2])


def key_of(kind: str, row_id: int, part: str) -> str:
    return f"{REF_PREFIX[kind]}:{row_id}" + (f":{part}" if part else "")


def write(conn: sqlite3.Connection, space: str, kind: str, row_ids: Iterable[int], vectors: Mapping[str, Any],
          alive: Iterable[int] | None = None) -> None:
    """Replace the vectors of these rows by `vectors` (key -> unit vector), made for `space`; those
    of other rows, or of rows not `alive` (forgotten meanwhile), are left out. Call inside the
    transaction that writes their index_state rows."""
    import numpy as np

    ids = {int(i) for i in row_ids}
    wanted = ids if alive is None else ids & {int(i) for i in alive}
    delete(conn, kind, ids)
    rows = []
    for key, vector in vectors.items():
        parts = key_parts(key)
        if parts is not None and parts[0] == kind and parts[1] in wanted:
            rows.append((kind, parts[1], parts[2], np.asarray(vector, dtype=np.float16).tobytes()))
    vector_rows.put(conn, space, rows)


def delete(conn: sqlite3.Connection, kind: str, row_ids: Iterable[int]) -> None:
    """Drop the vectors of these rows (inside the caller's transaction)."""
    vector_rows.delete(conn, kind, row_ids)


def of_rows(conn: sqlite3.Connection, space: str, kind: str, row_ids: Iterable[int],
            parts: Iterable[str] | None = None) -> dict[str, np.ndarray]:
    """Every vector of these rows (an observation's facts too), or those of these `parts`, by key, as float32."""
    keys, _, found = matrix(conn, space, kind, row_ids, parts)
    return dict(zip(keys, found, strict=True))


def matrix(conn: sqlite3.Connection, space: str, kind: str, row_ids: Iterable[int],
           parts: Iterable[str] | None = None) -> tuple[list[str], list[int], np.ndarray]:
    """`of_rows` as search wants it: the keys, the row ids and one float32 matrix (a vector a row)."""
    import numpy as np

    rows = vector_rows.of_rows(conn, space, kind, row_ids, sorted(set(parts)) if parts is not None else None)
    if not rows:
        return [], [], np.empty((0, 0), dtype=np.float32)
    # Decoded at once: a search reads a few hundred.
    found = np.frombuffer(b"".join(r[2] for r in rows), dtype=np.float16).reshape(len(rows), -1).astype(np.float32)
    return [key_of(kind, row_id, part) for row_id, part, _ in rows], [row_id for row_id, _, _ in rows], found


def read(conn: sqlite3.Connection, space: str, keys: Iterable[str]) -> dict[str, np.ndarray]:
    """The vectors of these document keys that are kept here (others are left out: a teammate's,
    a row not yet filled), as float32."""
    rows: dict[str, set[int]] = {}
    parts: dict[str, set[str]] = {}
    wanted: set[str] = set()
    for key in keys:
        found = key_parts(key)
        if found is not None:
            rows.setdefault(found[0], set()).add(found[1])
            parts.setdefault(found[0], set()).add(found[2])
            wanted.add(key)
    out: dict[str, np.ndarray] = {}
    for kind, ids in rows.items():
        out.update((k, v) for k, v in of_rows(conn, space, kind, ids, parts[kind]).items() if k in wanted)
    return out
