"""The words of a query, as the keyword search uses them. Standard library only: the prompt hook
searches SQLite FTS5 with these when the memory service cannot answer in time."""

from __future__ import annotations

import functools
import re

from claude_mem.text.cjk import has_cjk, script, spaced

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from collections.abc import Iterable

MAX_TERMS = 32  # bounds the FTS query a pasted wall of text can produce

# Question and glue words: matching them ranks nothing, and as OR terms they would let nearly
# every row in. Kept small on purpose: domain words ("error", "test") are never dropped.
_STOPWORDS_TEXT = """
a an the and or not nor but if then so than too very of to in on at for with by from as into onto
over under about after before between during through up down out off again is are was were be
been being am do does did doing done have has had having will would shall should can could may
might must i me my mine we us our ours you your yours he him his she her hers it its they them
their theirs this that these those there here what which who whom whose when where why how all
any both each few more most other some such no only own same just also s t don now ever
"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())

TOKEN = re.compile(r"\w+", re.UNICODE)


def words(text: str) -> list[str]:
    """The words of `text` as the keyword index holds them, lowercased: runs of Chinese, Japanese
    or Korean as their overlapping character pairs (text/cjk.py), everything else as words."""
    return [w.lower() for w in TOKEN.findall(spaced(text or "")) if w.strip("_")]


def word_count(text: str) -> int:
    """About how many words a person wrote: a CJK word is two characters or so."""
    if not has_cjk(text):
        return len(TOKEN.findall(text))
    marks = [bool(script(c)) for c in text]
    rest = "".join(" " if cjk else c for c, cjk in zip(text, marks, strict=True))
    return len(TOKEN.findall(rest)) + sum(marks) // 2


def query_terms(text: str) -> list[str]:
    """Words of the user's text (`words`), deduplicated, stopwords dropped (unless nothing else
    is left). Only word characters survive, so no FTS5 syntax can get through."""
    found = words(text)
    kept = [w for w in found if w not in STOPWORDS] or found
    return list(dict.fromkeys(kept))[:MAX_TERMS]


PATH = re.compile(r"\w+(?:[./\\]\w+)+")  # src/auth/session.py, models.go, pkg.module.func


def path_phrases(text: str) -> list[list[str]]:
    """The words of each path or dotted name in the query (`src/auth/session.py`: src auth session
    py), in order and with none dropped: FTS5 matches them as a phrase, the path itself rather than
    its words anywhere in a row (recall/keyword.py, when every word is common)."""
    return [found for found in (words(m.group()) for m in PATH.finditer(text or "")) if len(found) > 1]


def first_position(text: str, terms: Iterable[str]) -> int:
    """Where in `text` the first of `terms` is (a word by its stem, a CJK pair as it is), or 0."""
    wanted = {stem(t) for t in terms}
    found = [m.start() for m in TOKEN.finditer(text) if stem(m.group().lower()) in wanted]
    lowered = text.lower()
    found += [i for i in (lowered.find(t) for t in wanted if has_cjk(t)) if i >= 0]
    return min(found, default=0)


def fts_match(terms: Iterable[str]) -> str:
    """An FTS5 MATCH expression: every term quoted (so AND/OR/NOT/NEAR, `-`, `:`, `*`, `^` and
    parentheses are plain text), joined with OR. OR because memories are short: requiring every
    word of a question (FTS5's implicit AND) finds almost nothing."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


@functools.lru_cache(maxsize=1 << 16)  # search stems every word of each hit's texts: ~1,000 a query
def stem(word: str) -> str:
    # Close enough to porter for telling which query words a text holds; ranking uses FTS5's own.
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word
