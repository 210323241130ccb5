"""The checks every text a person or the agent writes passes, in one place (`checked`), before
anything of it is stored, logged or indexed: the hooks' redaction (payload.redact: `<private>`
spans dropped, secrets replaced by [REDACTED]) and the limits. A text that fails is refused
whole: nothing is ever stored half.

The write guard (issue 47: text addressed to an AI assistant is not kept as memory) belongs in
`checked` too, after the redaction: every stated text, edit and fact passes through it.
"""

from __future__ import annotations

from claude_mem.payload import redact
from claude_mem.store.reads import parse_ref
from claude_mem.text.shorten import clip
from claude_mem.text.storable import storable

TITLE_CHARS = 120  # a stated memory's title: the first line of its text, cut at a word


class Refused(ValueError):
    """The text (or another argument) cannot be stored as it is; nothing was stored."""


class Missing(LookupError):
    """The memory a write names is not in the database."""


def checked(text: object, limit: int, what: str = "text") -> str:
    """`text` as it may be stored: redacted, made storable, without surrounding white space.
    Refused when it is not text, longer than `limit` characters (the setting remember_chars), or
    empty (once redacted)."""
    if not isinstance(text, str):
        raise Refused(f"the {what} must be text")
    if len(text) > limit:
        raise Refused(f"the {what} is {len(text):,} characters, over the limit of {limit:,} (setting remember_chars);"
                      " nothing was stored")
    clean = storable(redact(text)).strip()
    if not clean:
        hidden = " once its <private> spans are removed" if text.strip() else ""
        raise Refused(f"the {what} is empty{hidden}; nothing was stored")
    return clean


def headline(text: str) -> str:
    """A stated memory's title: its first line, at most TITLE_CHARS characters."""
    first = next((line for line in text.splitlines() if line.strip()), text)
    return clip(first, TITLE_CHARS)


def observation_id(value: object) -> int:
    """The id of an observation named as people and agents name one (`obs:12`, `12`, 12)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value > 0:
            return value
    elif isinstance(value, str):
        parsed = parse_ref(value, loose=True)
        if parsed is not None and parsed[0] == "observation" and 0 < parsed[1] < 2**63:
            return parsed[1]
    raise Refused(f"{str(value)[:60]!r} is not an observation; name one like obs:12")
