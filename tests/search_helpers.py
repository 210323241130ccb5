"""Search results as the tests compare them, and the memory service warmed before a test that
reads a hybrid answer."""

from __future__ import annotations

from claude_mem.recall.search import SearchResult
from claude_mem.service.search import search_memory
from claude_mem.settings import Config
from claude_mem.store.db import connect

WARM_UP_S = 180  # a cold service on a machine at load ~30: imports and the model's load


def warm_service(config: Config) -> None:
    """Wait until the memory service answers a hybrid search: the front doors give a cold service
    10 s before they answer from keywords, which a loaded machine's start-up outlasts."""
    conn = connect(config.db_path)
    try:
        result = search_memory(config, conn, "login", timeout_s=WARM_UP_S)
    finally:
        conn.close()
    assert result.mode == "hybrid", result.note


def keys(result: SearchResult) -> list[tuple[str, int]]:
    return [(h.kind, h.id) for h in result.hits]
