"""Text written without spaces (Chinese, Japanese, Korean) as the keyword index reads it.

FTS5's unicode61 tokenizer keeps a run of Han or kana characters as one token, so a Chinese
sentence is one "word" and no query matches it. Every such run is rewritten as its overlapping
pairs of characters (the usual unit of Chinese and Japanese retrieval, as in Lucene's CJK
analyzer), separated by spaces; everything else is left as it is, for the word index. The same
rewriting serves the index (store/db.py registers `spaced` as the SQL function `cjk_spaced` that
the FTS triggers call) and the query (text/terms.py), so their tokens agree.

A run is first cut where its script changes (Han, hiragana, katakana, Hangul): a kanji compound
and a katakana loan word are units of their own. Hiragana is left out: in Japanese it writes the
grammar, so its pairs would match every Japanese text to every other (docs/multilingual.md has
the measurements). A lone character of any other script stands for itself.

The keyword index is contentless: a row leaves it by sending the tokens it was indexed with,
which its triggers make again with today's `spaced`. So any change to what `spaced` gives (a
range, a script, the pairing) must bump TOKENIZER_VERSION: the next connection sees the version
stamped in the database differ and rebuilds the index from the rows (store/db.py
rebuild_stale_keywords); without the bump, deletes would corrupt it. tests/test_migrations.py pins
the output of this version, so a change without a bump fails there. The triggers also mean a
plain `sqlite3` shell cannot write the three tables' rows ("no such function: cjk_spaced"):
register this function first, as store/db.py does.

Standard library only: every hook opens the database, and the prompt hook splits its query with this.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

TOKENIZER_VERSION = 1

# (first, last, script) code points: what counts as text written without spaces.
_RANGES = (
    (0x1100, 0x11FF, "hangul"), (0x2E80, 0x2FDF, "han"), (0x3005, 0x3007, "han"), (0x3040, 0x309F, "hiragana"),
    (0x30A0, 0x30FF, "katakana"), (0x3130, 0x318F, "hangul"), (0x31F0, 0x31FF, "katakana"), (0x3400, 0x4DBF, "han"),
    (0x4E00, 0x9FFF, "han"), (0xA960, 0xA97F, "hangul"), (0xAC00, 0xD7AF, "hangul"), (0xF900, 0xFAFF, "han"),
    (0xFF66, 0xFF9F, "katakana"), (0x20000, 0x323AF, "han"),
)
_FIRST = 0x1100
_LAST = 0x323AF


def script(char: str) -> str | None:
    """"han", "hiragana", "katakana" or "hangul" for a character written without spaces, else None."""
    code = ord(char)
    if code < _FIRST or code > _LAST:
        return None
    for first, last, name in _RANGES:
        if first <= code <= last:
            return name
    return None


_ANY: Any = None  # a character of _RANGES, compiled at first use (search asks this of hundreds of texts a query)


def has_cjk(text: str) -> bool:
    global _ANY
    if not text or text.isascii():
        return False
    if _ANY is None:
        import re

        _ANY = re.compile("[" + "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last, _ in _RANGES) + "]")
    return _ANY.search(text) is not None


def written_in_cjk(text: str | None) -> bool:
    """Whether most of `text`'s words are CJK, a CJK word taken as two characters: a Chinese
    prompt naming `test_login` is, an English one quoting a Chinese error message is not."""
    if not text or not has_cjk(text):
        return False
    cjk = sum(1 for c in text if ord(c) >= _FIRST and script(c))
    rest = "".join(" " if ord(c) >= _FIRST and script(c) else c for c in text)
    other = sum(1 for word in rest.split() if any(c.isalnum() for c in word))
    return cjk / 2 >= other


def segments(text: str) -> list[tuple[str, str | None]]:
    """`text` cut into (piece, script) where the script changes; None for everything else."""
    pieces: list[tuple[str, str | None]] = []
    start = 0
    current: str | None = None
    for i, char in enumerate(text):
        kind = script(char) if ord(char) >= _FIRST else None
        if i and kind != current:
            pieces.append((text[start:i], current))
            start = i
        current = kind
    if text:
        pieces.append((text[start:], current))
    return pieces


def grams(run: str, kind: str) -> list[str]:
    """The overlapping pairs of a run of one script, a lone character alone; none of hiragana."""
    if kind == "hiragana":
        return []
    if len(run) == 1:
        return [run]
    return [run[i:i + 2] for i in range(len(run) - 1)]


def spaced(text: str | None) -> str:
    """`text` as the keyword index reads it: every CJK run replaced by its pairs, spaced."""
    if not text or text.isascii():
        return text or ""
    if not has_cjk(text):
        return text
    out: list[str] = []
    for piece, kind in segments(text):
        out.append(f" {' '.join(grams(piece, kind))} " if kind else piece)
    return "".join(out)
