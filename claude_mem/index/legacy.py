"""Documents written by older versions, brought up to date on the first catch-up or rebuild
that meets them (`Index.index_missing`, `Index.reindex`): those from before installation ids
(renamed), those of an older documents.LAYOUT (only the rows whose documents differ are
indexed again), and rows indexed before their vectors were kept in SQLite (filled)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from claude_mem.identity import Installation
from claude_mem.index import vectors as stored_vectors
from claude_mem.index.documents import document_id, document_texts, kind_where, parse_doc_id, split_doc_id, vector_texts
from claude_mem.store import index_state, recall_rows
from claude_mem.store.db import chunks, transaction
from claude_mem.store.reads import KINDS

if TYPE_CHECKING:
    from claude_mem.index.chroma import Store
    from claude_mem.progress import Progress

FILL_BATCH = 256  # rows whose vectors are copied from Chroma (their facts embedded) per transaction


class Upgraded(Protocol):
    """What the upgrade uses of the index (semantic_index.Index, which calls it): its way in and
    the names it keeps its state under."""

    url: str

    @property
    def installation(self) -> Installation: ...
    def _use(self, what: str, *, write: bool = ..., recover: bool = ...) -> AbstractContextManager[Any]: ...
    def _state_key(self, collection_id: str, layout: int | None = ...) -> str: ...
    def id_pages(self, where: dict[str, Any] | None, what: str = ...) -> Iterator[list[str]]: ...
    def vectors(self, doc_ids: Sequence[str]) -> dict[str, Any]: ...
    def _embed(self, texts: list[str], *, query: bool = ...) -> Any: ...
    def _kept_local(self, row: sqlite3.Row | dict[str, Any]) -> bool: ...


def upgrade_legacy(index: Upgraded, conn: sqlite3.Connection, collection_id: str, store: Store | None = None) -> None:
    """Documents written before installation ids (`obs:12:main`; index_state marks them with
    the bare collection id). Embedded, they are all this data dir's: each is renamed with its
    stored vector (`obs:12:main@<id>`), those of rows gone from SQLite dropped. On a server,
    installations overwrote each other's under these ids, so this installation's are deleted
    and its rows sent again (their state keeps the bare id, which counts as missing)."""
    if index.url:
        for kind in KINDS:
            rows = index_state.indexed_ids(conn, kind, collection_id)
            for chunk in chunks(rows, 500):
                with contextlib.nullcontext(store) if store else index._use("upgrade", write=True) as held:
                    found = held.collection.get(where=kind_where(kind, chunk), include=[])["ids"]
                    legacy = [doc_id for doc_id in found if split_doc_id(doc_id)[1] is None]
                    if legacy:
                        held.collection.delete(ids=legacy)
        return
    legacy = [doc_id for page in index.id_pages(None, "upgrade") for doc_id in page if split_doc_id(doc_id)[1] is None]
    live = {kind: index_state.row_ids(conn, kind) for kind in KINDS}
    owner = {"installation": index.installation.id, "origin": index.installation.name}
    for chunk in chunks(legacy, 1024):
        with index._use("upgrade", write=True) as held:
            got = held.collection.get(ids=list(chunk), include=["embeddings", "metadatas", "documents"])
            keep = [n for n, doc_id in enumerate(got["ids"])
                    if (parsed := parse_doc_id(doc_id)) is not None and parsed[1] in live[parsed[0]]]
            if keep:
                held.collection.upsert(ids=[document_id(got["ids"][n], owner["installation"]) for n in keep],
                                       embeddings=[got["embeddings"][n] for n in keep],
                                       documents=[got["documents"][n] for n in keep],
                                       metadatas=[{**(got["metadatas"][n] or {}), **owner} for n in keep])
            held.collection.delete(ids=list(chunk))
    with transaction(conn):
        index_state.rename(conn, collection_id, index._state_key(collection_id, 1))  # renamed, not laid out anew


def upgrade_layout(index: Upgraded, conn: sqlite3.Connection, collection_id: str) -> None:
    """Rows indexed under layout 1 whose documents layout 2 makes alike (summaries, prompts,
    observations without facts) are marked as laid out: only observations with facts, whose
    facts now share their document, are embedded again by the catch-up."""
    old, new = index._state_key(collection_id, 1), index._state_key(collection_id)
    with transaction(conn):
        index_state.rename_laid_out(conn, old, new)


def fill_vectors(index: Upgraded, conn: sqlite3.Connection, cid: str, progress: Progress | None) -> int:
    """Rows indexed without their vectors in SQLite (before migration 0016): the stored ones
    copied from Chroma, the facts that have no document embedded. No write to Chroma, so
    searches go on meanwhile. Returns how many rows were filled."""
    todo = {kind: index_state.unfilled_ids(conn, kind, cid) for kind in KINDS}
    if progress is not None:
        progress.grow(sum(len(ids) for ids in todo.values()))
    filled = 0
    for kind, ids in todo.items():
        for chunk in chunks(ids, FILL_BATCH):
            if progress is not None and progress.stopping:
                return filled
            rows = recall_rows.by_id(conn, kind, chunk)
            sent = [row for row in rows if not index._kept_local(row)]
            documents = {key for row in sent for key, _, _ in document_texts(kind, row)}
            texts = [pair for row in sent for pair in vector_texts(kind, row)]
            found = index.vectors([key for key, _ in texts if key in documents])
            # A document Chroma lacks is left to `drift`; the texts that never were documents are embedded.
            new = [(key, text) for key, text in texts if key not in documents]
            if new:
                found.update(zip((key for key, _ in new), index._embed([t for _, t in new]), strict=True))
            with transaction(conn):
                stored_vectors.write(conn, cid, kind, chunk, found)
                index_state.mark_filled(conn, kind, cid, chunk)
            filled += len(chunk)
            if progress is not None:
                progress.advance(len(chunk))
    return filled
