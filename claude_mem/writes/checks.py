"""The checks every text a person or the agent writes passes, in one place (`checked`), before
anything of it is stored, logged or indexed: the hooks' redaction (payload.redact: `<private>`
spans dropped, secrets replaced by [REDACTED]) and the limits. A text that fails is refused
whole: nothing is ever stored half.

The write guard (issue 47: text addressed to an AI assistant is not kept as memory) belongs in
`checked` too, after the redaction: every stated text, edit and fact passes through it.
"""

from __future__ import annotations

from typing import Any

from claude_mem.store.reads import parse_ref
from claude_mem.text.redact import redact
from claude_mem.text.shorten import clip
from claude_mem.text.storable import storable

TITLE_CHARS = 120  # a stated memory's title: the first line of its text, cut at a word
NOTHING_STORED = "; nothing was stored"


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
        raise Refused(f"the {what} is {len(text):,} characters, over the limit of {limit:,} (setting remember_chars)"
                      + NOTHING_STORED)
    clean = storable(redact(text)).strip()
    if not clean:
        hidden = " once its <private> spans are removed" if text.strip() else ""
        raise Refused(f"the {what} is empty{hidden}{NOTHING_STORED}")
    return clean


def stated_row(row: dict[str, Any], limit: int) -> dict[str, Any]:
    """A stated memory's row from an import, its title, text and facts checked as `remember` and
    `edit` check them (an export may have been written elsewhere, or by hand)."""
    try:
        narrative = checked(row["narrative"], limit) if row.get("narrative", "").strip() else ""
        title = checked(row["title"], limit, "title")
        facts = [checked(fact, limit, "fact") for fact in row.get("facts") or [] if fact.strip()]
    except Refused as exc:  # the import says what was not imported
        raise Refused(str(exc).removesuffix(NOTHING_STORED)) from None
    return {**row, "title": title, "narrative": narrative, "facts": facts}


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
