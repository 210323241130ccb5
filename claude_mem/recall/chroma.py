"""The Chroma client of one index location (a folder or a server), shared by every Index on it
in this process, and the two places chromadb needed working around (each names the chromadb
version it was checked against; tests/test_index.py fails when one stops working)."""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any
from urllib.parse import urlsplit


class IndexUnavailable(RuntimeError):
    """The semantic index cannot be used right now; SQLite (and FTS5) still can."""


class Store:
    """One connection per index location per process: chromadb shares one System per folder
    within a process anyway, so every Index on the same folder must see the same state."""

    def __init__(self, url: str, path: str | None, name: str) -> None:
        self.url = url
        self.path = path
        self.name = name
        self.lock = threading.RLock()
        self.lock_path = None if url else f"{path}.lock"
        self.client: Any = None
        self.collection: Any = None
        self.generation = -1

    def open(self) -> None:
        import chromadb
        from chromadb.config import Settings

        from claude_mem.recall.embed import MiniLMInt8EmbeddingFunction

        settings = Settings(anonymized_telemetry=False)
        if self.url:
            self.client = http_client(self.url, settings)
        else:
            os.makedirs(str(self.path), mode=0o700, exist_ok=True)
            self.client = chromadb.PersistentClient(path=str(self.path), settings=settings)
        self.collection = self.client.get_or_create_collection(
            self.name, embedding_function=MiniLMInt8EmbeddingFunction(), configuration={"hnsw": {"space": "cosine"}},
        )

    def drop(self, forget: bool = False) -> None:
        client, self.client, self.collection = self.client, None, None
        self.generation = -1
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
        if forget and self.path:
            forget_shared_system(str(self.path))


_STORES: dict[tuple[str, str | None, str], Store] = {}
_STORES_LOCK = threading.Lock()


def store_for(url: str, path: str | None, name: str) -> Store:
    with _STORES_LOCK:
        key = (url, path, name)
        if key not in _STORES:
            _STORES[key] = Store(url, path, name)
        return _STORES[key]


def http_client(url: str, settings: Any) -> Any:
    import chromadb

    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"chroma_url must look like http://host:port, got {url!r}")
    ssl = parts.scheme == "https"
    client = chromadb.HttpClient(host=parts.hostname, port=parts.port or (443 if ssl else 8000), ssl=ssl, settings=settings)
    # chromadb's HTTP session has no timeout at all: a silent server would hang search forever.
    with contextlib.suppress(Exception):
        import httpx

        client._server._session.timeout = httpx.Timeout(30.0, connect=5.0)
    return client


def forget_shared_system(path: str) -> None:
    # chromadb caches one System per persist directory for the whole process; after the folder
    # is deleted that cached System keeps serving the deleted files, so drop it before reopening.
    try:
        from chromadb.api.shared_system_client import SharedSystemClient
    except ImportError:
        return
    with contextlib.suppress(Exception):
        system = SharedSystemClient._identifier_to_system.pop(path, None)
        SharedSystemClient._identifier_to_refcount.pop(path, None)
        if system is not None:
            system.stop()
