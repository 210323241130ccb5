"""The one search every front door calls (MCP server, CLI, viewer), and the one way they read a
teammate's memory. Where it is answered is decided here:

  - `in_process`, or an `index` the caller holds: in this process, with that index or by
    keywords alone (SQLite FTS5) without one (`claude-mem show`, the viewer's tests);
  - otherwise the memory service, which holds the model and the Chroma client; when it cannot
    answer within the deadline (not running yet, starting, busy), or the semantic index is off,
    SQLite FTS5 answers here and the result says so. Never an error, and then no model or
    Chroma client in this process.

This is the service's client side for recall; the hooks ask the service through client.py alone.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from claude_mem.kinds import SearchMode
from claude_mem.recall.hits import Hit
from claude_mem.recall.search import SearchResult, search
from claude_mem.service import client, protocol
from claude_mem.settings import Config

if TYPE_CHECKING:
    from claude_mem.index.semantic_index import Index

SEARCH_TIMEOUT_S = 10.0  # a warm service answers in tens of ms; a cold one loads its model in ~2 s (more on a busy machine)


class NoSharedServer(LookupError):
    """A teammate's memory was asked for where no shared Chroma server is set up."""


def search_memory(config: Config, conn: sqlite3.Connection, query: str, *, index: Index | None = None,
                  in_process: bool = False, timeout_s: float = SEARCH_TIMEOUT_S, mode: str = SearchMode.HYBRID,
                  **filters: Any) -> SearchResult:
    """Search memory. Same arguments as `recall.search.search`, less the index, which is decided here."""
    if index is not None or in_process:
        return search(conn, query, index=index, mode=mode, **filters)
    mode = SearchMode.named(mode)  # a ValueError for a name that is none, before any service is asked
    if mode is SearchMode.KEYWORD or not config.semantic_index:
        from claude_mem.index.semantic_index import OFF_NOTE

        result = search(conn, query, index=None, mode=SearchMode.KEYWORD, **filters)
        if mode is not SearchMode.KEYWORD:
            result.note = OFF_NOTE
        return result
    # A caller that waits for the service also waits for a fresh store's first index (wait_s).
    args = {**protocol.encode_search(query, {"mode": mode, **filters}), "settings": client.index_settings(config),
            "wait_s": max(timeout_s - 1.0, 0.0)}
    try:
        answer = client.call(config.data_dir, "search", args, timeout_s=timeout_s, wait=True)
    except (client.ServiceUnavailable, client.ServiceError) as exc:
        result = search(conn, query, index=None, mode=SearchMode.KEYWORD, **filters)
        result.note = f"{exc}: keyword results only"
        return result
    # SearchMode reads a service started by 0.1 too (it says fts and vector).
    return SearchResult([Hit(**hit) for hit in answer["hits"]], SearchMode(answer["mode"]), answer.get("note"))


def remote_record(config: Config, kind: str, row_id: int, origin: str, *, index: Index | None = None,
                  in_process: bool = False, timeout_s: float = SEARCH_TIMEOUT_S) -> dict[str, Any] | None:
    """A teammate's row (a search hit from the shared Chroma server), read from its documents by
    `index` in this process, else by the service; None when the server has no such row. Raises
    NoSharedServer when none is set up, IndexUnavailable when `index` cannot be read, LookupError
    with a one-line reason otherwise."""
    if index is not None or in_process:
        if index is None or not index.url:
            raise NoSharedServer(_no_server(kind, row_id, origin))
        from claude_mem.recall.teammates import find_record

        return find_record(index, kind, row_id, origin)
    if not config.chroma_url:
        raise NoSharedServer(_no_server(kind, row_id, origin))
    try:
        answer = client.call(config.data_dir, "remote_record", {"kind": kind, "id": row_id, "origin": origin,
                                                                  "settings": client.index_settings(config)},
                             timeout_s=timeout_s, wait=True)
    except (client.ServiceUnavailable, client.ServiceError) as exc:
        raise LookupError(str(exc)) from None
    return answer["record"]


def _no_server(kind: str, row_id: int, origin: str) -> str:
    return (f"{kind} {row_id}@{origin} is a teammate's memory, read from a shared Chroma server; this installation"
            " has none (setting chroma_url)")
