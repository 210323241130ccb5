"""The way into one index location: connecting, reconnecting, locking, and failures as
IndexUnavailable. `Index` (index.py) builds on it."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

from claude_mem.index.chroma import IndexUnavailable, store_for
from claude_mem.index.locking import FileLock
from claude_mem.text.shorten import cut


class IndexConnection:
    """One index location and the way in: `_use` connects (or reconnects after a failure, so a
    server that comes back is used again without a restart), takes the folder's lock and maps
    every failure to IndexUnavailable."""

    def __init__(self, url: str, path: str | None, collection_name: str, function: Callable[[], Any]) -> None:
        self.url = url
        self.path = None if url else os.path.abspath(str(path))
        self.collection_name = collection_name
        self._store = store_for(self.url, self.path, collection_name, function)

    @property
    def location(self) -> str:
        return self.url or str(self.path)

    @property
    def built(self) -> bool:
        """False for an embedded index never written (opening it would create an empty one)."""
        return bool(self.url) or os.path.exists(os.path.join(str(self.path), "chroma.sqlite3"))

    @contextlib.contextmanager
    def _use(self, what: str, *, write: bool = False, recover: bool = False) -> Iterator[Any]:
        """The collection, connected (or reconnected), with failures mapped to IndexUnavailable.
        chromadb keeps each process's vector index in memory, so writers to a shared folder take
        an exclusive flock and bump a generation, and a process that sees a newer one reloads."""
        store = self._store
        with store.lock, self._guard(what), FileLock(store.lock_path, exclusive=write) as flock:
            generation = flock.generation()
            if store.collection is not None:
                if self._folder_gone():
                    store.drop()
                    if not recover:
                        raise IndexUnavailable(f"semantic index folder {self.path} was removed; it is rebuilt on the next "
                                               "index_missing or reindex")
                elif generation != store.generation:
                    store.drop()
            if store.collection is None:
                store.open()
                store.generation = generation
            yield store
            if write:
                store.generation = flock.bump()

    def _folder_gone(self) -> bool:
        return not self.url and not os.path.exists(os.path.join(str(self.path), "chroma.sqlite3"))

    @contextlib.contextmanager
    def _guard(self, what: str) -> Iterator[None]:
        try:
            yield
        except IndexUnavailable:
            raise
        except Exception as exc:  # chromadb, httpx, onnxruntime and OS errors alike
            with self._store.lock:
                self._store.drop()
            detail = cut(str(exc), 300) or type(exc).__name__
            raise IndexUnavailable(f"semantic index at {self.location} unavailable ({what}: {detail})") from exc

    def close(self) -> None:
        with self._store.lock:
            self._store.drop()
