"""A text cut to a length, an ellipsis marking the cut. Standard library only: the hooks' pushes
and digest cut every line they show.

`cut` cuts at the character (what is shown is read in full or not at all: a digest line, a
stored field); `clip` at a word boundary, for titles people read.
"""

from __future__ import annotations

ELLIPSIS = "…"


def cut(text: str | None, limit: int, *, one_line: bool = True) -> str:
    """`text` (on one line, its runs of white space squeezed, unless `one_line` is False) at most
    `limit` characters."""
    text = " ".join((text or "").split()) if one_line else (text or "")
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def clip(text: str, limit: int) -> str:
    """`text` on one line, at most `limit` characters, cut after its last whole word when that
    keeps most of it, trailing punctuation dropped: a title is read, not parsed."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    if space > limit * 0.6:
        head = head[:space]
    return head.rstrip(" ,;:—-") + ELLIPSIS
