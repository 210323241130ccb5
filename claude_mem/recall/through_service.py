"""Search for the front doors (MCP server, CLI, viewer): the memory service answers with the
hybrid search; when it cannot within the deadline (not running yet, starting, busy), SQLite FTS5
answers here and the result says so. Never an error, and no model or Chroma client in this process.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from claude_mem.recall.hits import Hit
from claude_mem.recall.search import SearchResult, search
from claude_mem.service import client
from claude_mem.settings import Config

SEARCH_TIMEOUT_S = 10.0  # a warm service answers in tens of ms; a cold one loads its model in ~2 s (more on a busy machine)


def search_memory(config: Config, conn: sqlite3.Connection, query: str, *, timeout_s: float = SEARCH_TIMEOUT_S,
                  mode: str = "hybrid", **filters: Any) -> SearchResult:
    """The one search, through the service. Same arguments as `recall.search.search` (less the index)."""
    if mode == "fts" or not config.semantic_index:
        from claude_mem.recall.index import OFF_NOTE

        result = search(conn, query, index=None, mode="fts", **filters)
        if mode != "fts":
            result.note = OFF_NOTE
        return result
    args = {"query": query, "mode": mode, "settings": client.index_settings(config), **filters}
    if "kinds" in args:
        args["kinds"] = list(args["kinds"])
    if "exclude" in args:
        args["exclude"] = [list(pair) for pair in args["exclude"]]
    try:
        answer = client.call(config.data_dir, "search", args, timeout_s=timeout_s, wait=True)
    except (client.ServiceUnavailable, client.ServiceError) as exc:
        result = search(conn, query, index=None, mode="fts", **filters)
        result.note = f"{exc}: keyword results only"
        return result
    return SearchResult([Hit(**hit) for hit in answer["hits"]], answer["mode"], answer.get("note"))


def remote_record(config: Config, kind: str, row_id: int, origin: str, *, timeout_s: float = SEARCH_TIMEOUT_S) -> dict[str, Any] | None:
    """A teammate's row (a search hit from the shared Chroma server), read by the service; None
    when the server has no such row. Raises LookupError with a one-line reason otherwise."""
    if not config.chroma_url:
        raise LookupError(f"{kind} {row_id}@{origin} is a teammate's memory, read from a shared Chroma server; this installation"
                          " has none (setting chroma_url)")
    try:
        answer = client.call(config.data_dir, "remote_record", {"kind": kind, "id": row_id, "origin": origin,
                                                                  "settings": client.index_settings(config)},
                             timeout_s=timeout_s, wait=True)
    except (client.ServiceUnavailable, client.ServiceError) as exc:
        raise LookupError(str(exc)) from None
    return answer["record"]
