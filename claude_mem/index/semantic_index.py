"""The semantic index: observations, summaries and prompts as Chroma documents.

    Index(config)  .index_rows(conn, kind, ids)  .index_missing(conn)  .reindex(conn)  .delete(kind, ids)
                   .query_documents(text, n, where)  .space()  .vectors(doc_ids)  .drift(conn)  .close()
    readable_index(config) -> (Index | None, why not)

Embedded (`<data dir>/chroma`) by default; with the `chroma_url` setting a Chroma server, the
way a team shares one memory. SQLite is the source of truth: `index_state` (migration 0003)
records which rows were sent to which collection, so `index_missing` picks up rows missed while
Chroma was down and `reindex` rebuilds everything. Any failure on the Chroma side surfaces as one
`IndexUnavailable`, which callers catch to carry on without the index. Everything that deletes
deletes this installation's documents only. The long ones report to a `Progress` (progress.py),
and a rebuild cut short (Ctrl-C, a kill) is resumed by the next one rather than started over. Around it:
documents.py (a row's documents and ids), vectors.py (their vectors in SQLite, facts' too), connection.py, chroma.py
and locking.py (the way in), drift.py, legacy.py (documents from before installation ids); measurements in
docs/search-tuning.md. chromadb is imported lazily.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from claude_mem.identity import Installation, installation_for
from claude_mem.index import vectors as stored_vectors
from claude_mem.index.connection import IndexConnection
from claude_mem.index.documents import (
    BUILD,
    LAYOUT,
    Document,
    RemoteDocument,
    VectorMatch,
    document_id,
    document_order,
    kind_where,
    parse_doc_id,
    split_doc_id,
    stale_documents,
    vector_texts,
)
from claude_mem.index.embedders import Embedder, embedder_for
from claude_mem.index.legacy import fill_vectors, upgrade_layout, upgrade_legacy
from claude_mem.index.locking import FileLock
from claude_mem.store.db import chunks, now_ms, transaction
from claude_mem.store.reads import KIND, KINDS, TABLES

if TYPE_CHECKING:
    import numpy as np

    from claude_mem.progress import Progress
    from claude_mem.settings import Config

UPSERT_BATCH = 256  # documents per Chroma call: bounds memory while embedding a reindex
PAGE = 2000  # documents per page when reading the whole collection (drift)
CATCH_UP_WAIT_S = 600.0  # how long index_missing waits for another one to finish (a big catch-up embeds for minutes)


class Index(IndexConnection):
    """The Chroma side of memory. Cheap to construct; connects on first use and reconnects
    after a failure, so a server that comes back is used again without a restart."""

    def __init__(self, config: Config | None = None, *, path: str | None = None, url: str | None = None,
                 collection_name: str | None = None, installation: Installation | None = None,
                 local_projects: Iterable[str] | None = None,
                 embedder: Embedder | Callable[[list[str]], Any] | None = None) -> None:
        """`installation` says whose documents this index writes and deletes; by default the one
        of the config's data dir, or, for an embedded index given by path, of the folder holding
        it (the data dir's layout). `local_projects` (default: the setting) are never sent to a
        server. `embedder`: `embedders.embedder_for`; it names the collection unless `collection_name` does."""
        if url is None:
            url = str(getattr(config, "chroma_url", "") or "") if config is not None else ""
        url = url.strip()
        if path is None and not url:
            if config is None:
                raise ValueError("Index needs a config, a path or a url")
            path = os.path.join(config.data_dir, "chroma")
        embedder = embedder_for(config, embedder)
        super().__init__(url, path, collection_name or embedder.collection, embedder.function)
        self._installation = installation
        self._config = config
        self._embedder = embedder
        self.resumed = False  # the last reindex() went on with one cut short
        if local_projects is None:
            local_projects = getattr(config, "local_projects", None) or () if config is not None else ()
        # Only a server is "sent to": an embedded index is this machine's own.
        self.local_projects = frozenset(local_projects) if url else frozenset()

    @property
    def installation(self) -> Installation:
        """Whose documents this index writes (read or made on first use, not at construction)."""
        if self._installation is None:
            if self._config is not None:
                found = installation_for(self._config.data_dir, getattr(self._config, "installation_name", "") or "")
            elif self.path is not None:
                found = installation_for(os.path.dirname(self.path))
            else:
                raise ValueError("an Index on a Chroma server needs a config or an installation: whose documents are these?")
            self._installation = found
        return self._installation

    def owns(self, owner: str | None) -> bool:
        """Whether a document with this owner (from its id) is this installation's. An embedded
        index is the data dir's own, so its documents from before installation ids are too; on a
        server, whose such a document is cannot be known (installations overwrote each other's)."""
        return owner == self.installation.id or (owner is None and not self.url)

    def _owned(self, where: dict[str, Any]) -> dict[str, Any]:
        """`where` narrowed to this installation's documents, on a server. An embedded index
        holds nothing else, and its documents from before installation ids have no such field."""
        if not self.url:
            return where
        return {"$and": [where, {"installation": self.installation.id}]}

    def _state_key(self, collection_id: str, layout: int | None = None) -> str:
        # index_state.collection_id: which collection, under whose ids (a bare id, from before them, counts as not
        # there: index/legacy.py), in which documents.LAYOUT (another: not there either, indexed again in place).
        layout = LAYOUT if layout is None else layout
        return f"{collection_id}@{self.installation.id}" + (f"/{layout}" if layout > 1 else "")

    def _kept_local(self, row: sqlite3.Row | dict[str, Any]) -> bool:
        return bool(self.local_projects) and (row["project"] or "") in self.local_projects

    def index_rows(self, conn: sqlite3.Connection, kind: str, ids: Iterable[int], progress: Progress | None = None) -> int:
        return self._index(conn, kind, ids, progress)

    def _index(self, conn: sqlite3.Connection, kind: str, ids: Iterable[int], progress: Progress | None = None) -> int:
        """(Re)index these rows; returns how many were found in SQLite. Rows gone from SQLite lose their documents.
        Each chunk is committed on its own: a stop between two (Ctrl-C, `progress.stopping`) leaves index_state exact."""
        import numpy as np

        wanted = sorted({int(i) for i in ids})
        found = 0
        for chunk in chunks(wanted, UPSERT_BATCH):
            if progress is not None and progress.stopping:
                break
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(KIND[kind].row_sql().format(marks=marks), list(chunk)).fetchall()
            alive = {int(r["id"]) for r in rows}
            sent = [row for row in rows if not self._kept_local(row)]
            owners = [(int(row["id"]), self._owned_document(doc)) for row in sent for doc in BUILD[kind](row)]
            docs = [doc for _, doc in owners]
            # Embedding is the slow part: done before taking the lock other processes wait on. Facts
            # are embedded too, for SQLite only (index/vectors.py).
            texts = [pair for row in sent for pair in vector_texts(kind, row)]
            by_key = dict(zip((key for key, _ in texts), self._embed([t for _, t in texts]), strict=True)) if texts else {}
            vectors = [by_key[split_doc_id(d.id)[0]] for d in docs]
            with self._use(f"index {kind}s", write=True) as store:
                cid = self._state_key(str(store.collection.id))
                # Rows indexed before (in this collection, in either layout; an empty id means "maybe still held",
                # store/forget.py) may have documents no longer made (old facts). New rows (the worker's) skip the look.
                held = [r[0] for r in conn.execute(
                    f"SELECT row_id FROM index_state WHERE kind = ? AND collection_id IN (?, ?, '') AND row_id IN ({marks})",
                    [kind, cid, self._state_key(str(store.collection.id), 1), *chunk])]
                if held:
                    stale = stale_documents(store.collection, kind, held, {d.id for d in docs}, self.installation.id)
                    if stale:
                        store.collection.delete(ids=stale)
                if docs:
                    store.collection.upsert(ids=[d.id for d in docs], embeddings=np.stack(vectors), documents=[d.text for d in docs],
                                            metadatas=[d.metadata for d in docs])
                    # A row forgotten since it was read above (forget deletes rows, then takes this
                    # lock to delete documents) must not keep the documents just written.
                    alive &= {r[0] for r in conn.execute(f"SELECT id FROM {TABLES[kind]} WHERE id IN ({marks})", chunk)}
                    late = [doc.id for row_id, doc in owners if row_id not in alive]
                    if late:
                        store.collection.delete(ids=late)
            present = sorted(alive)
            gone = sorted(set(chunk) - set(present))
            found += len(present)
            with transaction(conn):
                now = now_ms()
                conn.executemany(
                    "INSERT INTO index_state (kind, row_id, indexed_at, collection_id, vectors) VALUES (?, ?, ?, ?, 1)"
                    " ON CONFLICT (kind, row_id) DO UPDATE SET indexed_at = excluded.indexed_at,"
                    " collection_id = excluded.collection_id, vectors = 1", [(kind, row_id, now, cid) for row_id in present])
                conn.executemany("DELETE FROM index_state WHERE kind = ? AND row_id = ?", [(kind, g) for g in gone])
                stored_vectors.write(conn, cid, kind, chunk, by_key, alive=alive)
            if progress is not None:
                progress.advance(len(chunk))
        return found

    def _owned_document(self, doc: Document) -> Document:
        me = self.installation
        return Document(document_id(doc.id, me.id), doc.text, {**doc.metadata, "installation": me.id, "origin": me.name})

    def _embed(self, texts: list[str], *, query: bool = False) -> Any:
        with self._guard("embed"):
            return self._embedder.query(texts[0]) if query else self._embedder.passages(texts)

    def delete(self, kind: str, ids: Iterable[int], conn: sqlite3.Connection | None = None,
               progress: Progress | None = None) -> None:
        """Remove the documents of these rows (pass `conn` to forget them in index_state too,
        chunk by chunk: a stop between two leaves the rest to the next catch-up, as orphans)."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        wanted = sorted({int(i) for i in ids})
        for chunk in chunks(wanted, 500):
            with self._use(f"delete {kind}s", write=True) as store:
                store.collection.delete(where=self._owned(kind_where(kind, chunk)))
            if conn is not None:
                with transaction(conn):
                    conn.executemany("DELETE FROM index_state WHERE kind = ? AND row_id = ?", [(kind, i) for i in chunk])
                    stored_vectors.delete(conn, kind, chunk)
            if progress is not None:
                progress.advance(len(chunk))

    def index_missing(self, conn: sqlite3.Connection, progress: Progress | None = None) -> dict[str, int]:
        """Index every row not yet in this collection, and drop documents of rows deleted from
        SQLite. Returns rows indexed per kind, and `removed`. One catch-up at a time per embedded
        index: workers starting together each embedded the same missing rows; the next one waits,
        then finds nothing left to do. `progress` grows by the rows to index, and advances."""
        with FileLock(self._store.lock_path and self._store.lock_path + ".catch-up", exclusive=True,
                       timeout_s=CATCH_UP_WAIT_S):
            return self._index_missing(conn, progress)

    def _index_missing(self, conn: sqlite3.Connection, progress: Progress | None) -> dict[str, int]:
        with self._use("open", recover=True) as store:
            collection_id = str(store.collection.id)
        cid = self._state_key(collection_id)
        if conn.execute("SELECT 1 FROM index_state WHERE collection_id = ? LIMIT 1", (collection_id,)).fetchone():
            upgrade_legacy(self, conn, collection_id)
        upgrade_layout(self, conn, collection_id)
        missing = {kind: [r[0] for r in conn.execute(
            f"SELECT t.id FROM {TABLES[kind]} t LEFT JOIN index_state s ON s.kind = ? AND s.row_id = t.id"
            " WHERE s.row_id IS NULL OR s.collection_id != ? ORDER BY t.id", (kind, cid))] for kind in KINDS}
        if progress is not None:
            progress.grow(sum(len(ids) for ids in missing.values()))
        counts: dict[str, int] = {}
        removed = 0
        for kind in KINDS:
            table = TABLES[kind]
            counts[kind] = self._index(conn, kind, missing[kind], progress) if missing[kind] else 0
            orphans = [r[0] for r in conn.execute(
                f"SELECT s.row_id FROM index_state s LEFT JOIN {table} t ON t.id = s.row_id"
                " WHERE s.kind = ? AND t.id IS NULL", (kind,))]
            if orphans:
                self.delete(kind, orphans, conn)
                removed += len(orphans)
        counts["removed"] = removed
        counts["vectors"] = fill_vectors(self, conn, cid, progress)
        return counts

    def reindex(self, conn: sqlite3.Connection, progress: Progress | None = None) -> dict[str, int]:
        """Rebuild this installation's documents from SQLite (the source of truth). An embedded
        collection is dropped whole; on a server only this installation's documents go, never a
        teammate's. A rebuild cut short left its marker file: the next one goes on from where it
        stopped (every row indexed since the drop is fresh), and sets `resumed`."""
        marker = self._rebuild_marker()
        self.resumed = os.path.exists(marker)
        if self.resumed:
            counts = self.index_missing(conn, progress)
            os.unlink(marker)
            return counts
        with open(marker, "w", encoding="utf-8") as fh:
            fh.write(f"{now_ms()}\n")
        counts = self._rebuild(conn, progress)
        os.unlink(marker)
        return counts

    def _rebuild_marker(self) -> str:
        folder = self._config.data_dir if self._config is not None else os.path.dirname(self.path or "") or "."
        os.makedirs(folder, mode=0o700, exist_ok=True)
        return os.path.join(folder, "reindex.unfinished")

    def _rebuild(self, conn: sqlite3.Connection, progress: Progress | None) -> dict[str, int]:
        with self._use("reset", write=True, recover=True) as store:
            if self.url:
                collection_id = str(store.collection.id)
                if conn.execute("SELECT 1 FROM index_state WHERE collection_id = ? LIMIT 1", (collection_id,)).fetchone():
                    upgrade_legacy(self, conn, collection_id, store)
                store.collection.delete(where={"installation": self.installation.id})
            else:
                store.client.delete_collection(self.collection_name)
                store.drop()
        with transaction(conn):
            conn.execute("DELETE FROM index_state")
            conn.execute("DELETE FROM vectors")
        return self.index_missing(conn, progress)

    def space(self) -> str:
        """The name this index's rows are kept under in index_state, which their vectors in SQLite
        are valid for (index/vectors.py): the collection, whose documents, in which layout."""
        with self._use("open") as store:
            return self._state_key(str(store.collection.id))

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], query=True)

    @property
    def embedder(self) -> str:  # which one makes this index's vectors (embedders.py)
        return self._embedder.name

    def query(self, text: str, n: int = 10, where: dict[str, Any] | None = None) -> list[tuple[str, int, float]]:
        """This installation's rows closest to `text`: (kind, sqlite id, cosine distance of its best document)."""
        best: dict[tuple[str, int], float] = {}
        for match in self.query_documents(text, n * 3, where, include_remote=False):
            best.setdefault((match.kind, match.sqlite_id), match.distance)
        return [(k, i, d) for (k, i), d in list(best.items())[:n]]

    def query_documents(self, text: str | Sequence[float] | np.ndarray, n: int = 10, where: dict[str, Any] | None = None, *,
                        include_remote: bool = True) -> list[VectorMatch]:
        """Documents closest to `text` (or to an already computed query vector), best first.
        Kind and row come from the document id; the text of this installation's documents is not
        fetched (it costs more than the search itself, and SQLite has it anyway), nor are the
        stored vectors (SQLite has them too: index/vectors.py).
        Teammates' documents on a shared server come with their text and metadata (`origin`),
        fetched by id, unless `include_remote` is False."""
        if n <= 0:
            return []
        embedding = self.embed_query(text) if isinstance(text, str) else text
        with self._use("query") as store:
            result = store.collection.query(query_embeddings=[[float(x) for x in embedding]], n_results=int(n),
                                            where=where or None, include=["distances"])
        out: list[VectorMatch] = []
        remote: list[str] = []
        for doc_id, dist in zip(result["ids"][0], result["distances"][0], strict=True):
            parsed = parse_doc_id(doc_id)
            key, owner = split_doc_id(doc_id)
            if parsed is None:
                continue
            if self.owns(owner):
                out.append(VectorMatch(*parsed, float(dist), key))
            elif owner is not None and include_remote:
                out.append(VectorMatch(*parsed, float(dist), doc_id))
                remote.append(doc_id)
        if remote:
            found = self._remote(remote)
            out = [replace(m, origin=found[m.doc_id]) if m.doc_id in found else m for m in out
                   if "@" not in m.doc_id or m.doc_id in found]
        return out

    def _remote(self, doc_ids: list[str]) -> dict[str, RemoteDocument]:
        """Teammates' documents by id, with their text and metadata."""
        out: dict[str, RemoteDocument] = {}
        with self._use("get") as store:
            got = store.collection.get(ids=doc_ids, include=["documents", "metadatas"])
        for doc_id, text, meta in zip(got["ids"], got["documents"], got["metadatas"], strict=True):
            owner = split_doc_id(doc_id)[1] or ""
            parsed = parse_doc_id(doc_id)
            if parsed is None:
                continue
            meta = dict(meta or {})
            out[doc_id] = RemoteDocument(owner, str(meta.get("origin") or owner[:8]), parsed[1], text or "", meta)
        return out

    def remote_documents(self, kind: str, row_id: int, origin: str) -> list[RemoteDocument]:
        """The documents of a teammate's row (`obs:12@laptop-b`): `origin` is their name or
        installation id. Empty when the server has none; documents of several installations when
        the name is shared (the caller says so)."""
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        where = {"$and": [{"kind": kind}, {"sqlite_id": int(row_id)}, {"installation": {"$ne": self.installation.id}},
                          {"$or": [{"origin": origin}, {"installation": origin}]}]}
        with self._use("get") as store:
            got = store.collection.get(where=where, include=[])
        ids = [doc_id for doc_id in got["ids"] if split_doc_id(doc_id)[1] is not None]
        found = self._remote(ids) if ids else {}
        return [found[doc_id] for doc_id in sorted(found, key=document_order)]

    def vectors(self, doc_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of these documents (ids that are not in the index are left out), by key
        for this installation's documents (`obs:12:main`) and by full id for a teammate's. By id:
        ~5x faster than a metadata filter on sqlite_id, which matters on the search path."""
        import numpy as np

        wanted = list(dict.fromkeys(doc_ids))
        out: dict[str, np.ndarray] = {}
        if not wanted:
            return out
        me = self.installation.id
        full = {doc_id if "@" in doc_id else document_id(doc_id, me): doc_id for doc_id in wanted}
        # An embedded index not yet upgraded (see index/legacy.py) still names them by key alone.
        legacy = {} if self.url else {doc_id: doc_id for doc_id in wanted if "@" not in doc_id}
        with self._use("get") as store:
            for names in (full, legacy):
                asked = [name for name, doc_id in names.items() if doc_id not in out]
                for chunk in chunks(asked, 500):
                    got = store.collection.get(ids=list(chunk), include=["embeddings"])
                    if got["ids"]:
                        out.update((names[name], vector) for name, vector in
                                   zip(got["ids"], np.asarray(got["embeddings"], dtype=np.float32), strict=True))
        return out

    def id_pages(self, where: dict[str, Any] | None, what: str = "drift") -> Iterator[list[str]]:
        """Every document id (matching `where`), PAGE at a time, the lock taken per page so
        writers are not kept waiting through a whole pass."""
        offset = 0
        while True:
            with self._use(what) as store:
                page = store.collection.get(include=[], where=where, limit=PAGE, offset=offset)["ids"]
            yield page
            if len(page) < PAGE:
                return
            offset += PAGE

    def count(self) -> int:
        """Documents in the collection, every installation's."""
        with self._use("count") as store:
            return int(store.collection.count())

    def drift(self, conn: sqlite3.Connection) -> dict[str, Any]:
        """This installation's rows in SQLite against rows with documents in Chroma (drift.py)."""
        from claude_mem.index.drift import drift_report

        return drift_report(self, conn)


OFF_NOTE = "the semantic index is off (setting semantic_index): keyword results only"
NOT_BUILT_NOTE = "no semantic index yet (workers build it; so does `claude-mem reindex`): keyword results only"


def readable_index(config: Config) -> tuple[Index | None, str | None]:
    """The index a reader (search, status, the viewer, the MCP server) should use, or None and
    why not: the setting is off, or the embedded index was never built. Readers never create one;
    one that appears later (a worker built it) is picked up by the next call."""
    if not config.semantic_index:
        return None, OFF_NOTE
    index = Index(config)
    return (index, None) if index.built else (None, NOT_BUILT_NOTE)
