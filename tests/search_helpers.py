"""Search results as the tests compare them."""

from __future__ import annotations

from claude_mem.recall.search import SearchResult


def keys(result: SearchResult) -> list[tuple[str, int]]:
    return [(h.kind, h.id) for h in result.hits]
