"""Text as the detector reads it, so that a disguise changes nothing it finds.

An instruction can hide from a plain pattern behind characters a reader never sees or never tells
apart: zero-width spaces and joiners inside a word, Unicode tag characters (invisible copies of
ASCII), Cyrillic or Greek letters that look Latin, full-width or mathematical letters, HTML
entities (`&lt;system&gt;`), JSON escapes (`\\u0069gnore`) and markdown's emphasis (`**AI**`).
`fold` undoes all of them, then lower-cases; line breaks are kept (units are lines). The result
is for matching only, never shown.
"""

from __future__ import annotations

import html
import re
import unicodedata

# Characters that take no room: zero-width spaces and joiners, direction marks and embeddings,
# the soft hyphen, the word joiner and invisible operators, variation selectors, Hangul fillers.
_INVISIBLE = [0x00AD, 0x034F, 0x115F, 0x1160, 0x180E, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B,
              0x202C, 0x202D, 0x202E, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0x2066, 0x2067, 0x2068, 0x2069,
              0x3164, 0xFEFF, 0xFFA0, *range(0xFE00, 0xFE10), 0xE0001, 0xE007F]
# Letters of other scripts that look like Latin ones (Unicode's confusables, the ones an attacker
# uses): Cyrillic, Greek, small capitals, dotless i, script g.
_LOOK_ALIKES = {
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c", "т": "t",
    "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "һ": "h",
    "ɡ": "g", "ı": "i", "ɑ": "a", "ο": "o", "α": "a", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ρ": "p", "τ": "t",
    "υ": "u", "χ": "x", "ω": "w", "ϲ": "c", "ᴀ": "a", "ʙ": "b", "ᴄ": "c", "ᴅ": "d", "ᴇ": "e", "ꜰ": "f", "ɢ": "g",
    "ʜ": "h", "ɪ": "i", "ᴊ": "j", "ᴋ": "k", "ʟ": "l", "ᴍ": "m", "ɴ": "n", "ᴏ": "o", "ᴘ": "p", "ʀ": "r", "ꜱ": "s",
    "ᴛ": "t", "ᴜ": "u", "ᴠ": "v", "ᴡ": "w", "ʏ": "y", "ᴢ": "z",
}
_TABLE: dict[int, str | None] = {cp: None for cp in _INVISIBLE}
_TABLE.update({ord(k): v for k, v in _LOOK_ALIKES.items()})
_TABLE.update({ord(k.upper()): v for k, v in _LOOK_ALIKES.items() if k.upper() != k and len(k.upper()) == 1})
_TABLE.update({cp: chr(cp - 0xE0000) for cp in range(0xE0020, 0xE007F)})  # tag characters: invisible ASCII
_JSON_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_SPACES = re.compile(r"[^\S\n]+")
_EMPHASIS = re.compile(r"(?<![\w*])\*{1,3}(?=\w)|(?<=\w)\*{1,3}(?![\w*])")  # **AI**, *ignore*: markdown's stars


def _unescape_json(match: re.Match[str]) -> str:
    char = chr(int(match[1], 16))
    return "" if 0xD800 <= ord(char) < 0xE000 else char


def fold(text: str) -> str:
    """`text` for matching: disguises undone, lower case, runs of spaces as one (lines kept)."""
    if "\\" in text:  # JSON's escapes: a planted line inside a JSON string is still lines and letters
        text = _JSON_ESCAPE.sub(_unescape_json, text).replace("\\n", "\n").replace("\\t", " ").replace('\\"', '"')
    if "&" in text:
        text = html.unescape(text)
    if not text.isascii():  # what follows only changes characters beyond ASCII (most tool output has none)
        text = unicodedata.normalize("NFKC", text.translate(_TABLE)).translate(_TABLE)
    return _SPACES.sub(" ", _EMPHASIS.sub("", text.casefold()))
