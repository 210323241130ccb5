"""The Chroma client of one index location (a folder or a server), shared by every Index on it
in this process, and the one place chromadb needs working around (`bound_http_timeout`, which
names the chromadb version it was checked against; tests/test_index.py fails when it stops
working)."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

# The HNSW beam of a query (Chroma's default is 100). Of the true 120 nearest documents at 100k,
# a query for 120 found 76% with 100, 85% with 500, for ~0.6 ms more (docs/search-tuning.md).
EF_SEARCH = 500
WIDEN_TRIES = 5  # changes of a collection's beam to EF_SEARCH tried when its folder is busy
WIDEN_PAUSE_S = 0.05  # before the second try; twice that before the third, and so on (0.5 s in all)
# How long a request to a Chroma server may take: a silent server must not hang search forever.
HTTP_TIMEOUT_S = 30.0
HTTP_CONNECT_TIMEOUT_S = 5.0


class IndexUnavailable(RuntimeError):
    """The semantic index cannot be used right now; SQLite (and FTS5) still can."""


class Store:
    """One connection per index location per process: chromadb shares one System per folder
    within a process anyway, so every Index on the same folder must see the same state."""

    def __init__(self, url: str, path: str | None, name: str, function: Callable[[], Any]) -> None:
        self.url = url
        self.path = path
        self.name = name
        self.function = function  # makes the collection's Chroma embedding function (embedders.py)
        self.lock = threading.RLock()
        self.lock_path = None if url else f"{path}.lock"
        self.client: Any = None
        self.collection: Any = None
        self.generation = -1

    def open(self) -> None:
        import chromadb
        from chromadb.config import Settings

        settings = Settings(anonymized_telemetry=False)
        if self.url:
            self.client = http_client(self.url, settings)
        else:
            os.makedirs(str(self.path), mode=0o700, exist_ok=True)
            self.client = chromadb.PersistentClient(path=str(self.path), settings=settings)
        self.collection = self.client.get_or_create_collection(
            self.name, embedding_function=self.function(), configuration={"hnsw": {"space": "cosine", "ef_search": EF_SEARCH}},
        )
        widen_search(self.collection)

    def drop(self) -> None:
        """Close the client. chromadb caches one System per folder for the whole process, and a
        cached System outlives its deleted folder; `close()` releases it (chromadb >= 1.x), so
        the next open reads the folder afresh (tests/test_index.py: the deleted folder test)."""
        client, self.client, self.collection = self.client, None, None
        self.generation = -1
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()


def widen_search(collection: Any, tries: int = WIDEN_TRIES) -> None:
    """A collection made with a narrower beam (before EF_SEARCH, or by Chroma's default) gets
    ours; set before its first query, as a process loads the vector index with the beam it
    finds then. Where that cannot be done (a server that refuses, a configuration this chromadb
    cannot read), the collection keeps its beam: its searches are only less exact.
    An embedded Chroma answers "database is locked" now and then to the change made just as the
    folder is opened (5 times in 40 opens on a loaded machine), so the change is tried again."""
    try:
        hnsw = (collection.configuration or {}).get("hnsw") or {}
    except Exception:  # noqa: BLE001 - a configuration this chromadb cannot read
        return
    if not isinstance(hnsw.get("ef_search"), int) or hnsw["ef_search"] >= EF_SEARCH:
        return
    for attempt in range(tries):
        try:
            collection.modify(configuration={"hnsw": {"ef_search": EF_SEARCH}})
            return
        except Exception:  # noqa: BLE001 - the next open tries again
            if attempt + 1 < tries:
                time.sleep(WIDEN_PAUSE_S * (attempt + 1))


_STORES: dict[tuple[str, str | None, str], Store] = {}
_STORES_LOCK = threading.Lock()


def store_for(url: str, path: str | None, name: str, function: Callable[[], Any]) -> Store:
    with _STORES_LOCK:
        key = (url, path, name)
        if key not in _STORES:
            _STORES[key] = Store(url, path, name, function)
        return _STORES[key]


def http_client(url: str, settings: Any) -> Any:
    import chromadb

    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"chroma_url must look like http://host:port, got {url!r}")
    ssl = parts.scheme == "https"
    client = chromadb.HttpClient(host=parts.hostname, port=parts.port or (443 if ssl else 8000), ssl=ssl, settings=settings)
    bound_http_timeout(client, HTTP_TIMEOUT_S)
    return client


def bound_http_timeout(client: Any, timeout_s: float) -> bool:
    """Give a chromadb HttpClient's requests a timeout; False when it could not.

    Checked against chromadb 1.5.9, which has no public way: `Settings` carries server-side
    timeouts only, and the client's httpx session is made with `timeout=None`
    (chroma-core/chroma#5805), so the session is reached through private attributes here and
    nowhere else. tests/test_index.py (a stopped server) fails when this stops working."""
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if not isinstance(session, httpx.Client):
        return False
    session.timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, HTTP_CONNECT_TIMEOUT_S))
    return True
