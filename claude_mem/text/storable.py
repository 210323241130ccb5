"""Text made storable where it enters: once, so nothing further in is dropped for its characters.

The only code points a Python str can hold that UTF-8 cannot are surrogates. They arrive as JSON
escapes (`"\\ud83d"`: Claude Code sends one when a tool output is cut inside an emoji's pair) or
as a WTF-8/CESU-8 file's bytes; SQLite, the spool and the export would then refuse the whole
event or row (`UnicodeEncodeError: surrogates not allowed`). A high+low pair becomes the
character it encodes, a lone one U+FFFD. Every other character, NUL and control characters
included, is kept as it is.

Where text enters: a hook's record (hosts/payloads.py storable_record; this module is loaded only when the
record holds a surrogate), an import file's rows, the npm claude-mem's database, the observer's
replies, the memory service's requests.

Standard library only: the hooks may load it.
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

REPLACEMENT = "\ufffd"


def storable(text: str) -> str:
    """`text` with its surrogates resolved: a pair joined, a lone one replaced by U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # UTF-16 holds surrogates as code units: a pair decodes to its character, a lone one is replaced.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def storable_value(value: Any) -> Any:
    """A JSON-like value with every string in it (keys too) made storable."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(k) if isinstance(k, str) else k: storable_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable_value(v) for v in value]
    return value


def loads(text: str) -> Any:
    """json.loads of storable text (see `decode`), with the strings made storable. Only a
    `\\ud...` escape can make one unstorable, so other text is not walked. For short texts: the
    check costs up to half a parse on text with many backslashes (hooks and import check their
    results' strings instead)."""
    value = json.loads(text)
    return storable_value(value) if "\\ud" in text or "\\uD" in text else value


def decode(data: bytes) -> str:
    """UTF-8 bytes as storable text. Surrogates encoded in the bytes (WTF-8, CESU-8) are resolved
    like escaped ones; other invalid bytes raise UnicodeDecodeError."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return storable(data.decode("utf-8", "surrogatepass"))


def decode_lossy(data: bytes) -> str:
    """Bytes as storable text, whatever they hold: invalid bytes become U+FFFD."""
    try:
        return decode(data)
    except UnicodeDecodeError:
        return data.decode("utf-8", "replace")


def split_lines(text: str) -> list[str]:
    """JSON Lines' lines: split at \\n only (a CR before it is JSON whitespace). str.splitlines()
    also breaks at U+2028, U+2029, U+0085, \\x0b, \\x0c and \\x1c-\\x1e, which JSON strings may hold
    unescaped."""
    lines = text.split("\n")
    if lines and not lines[-1]:
        lines.pop()
    return lines


# Written unescaped they are valid JSON, but line readers other than ours (Python's splitlines,
# JavaScript before ES2019, editors) take them for line ends.
_SEPARATORS = ("\u2028", "\u2029", "\u0085")


def dumps_line(value: Any) -> str:
    """One JSON Lines line (without its \\n): UTF-8 readable, with the characters other readers
    split lines at escaped."""
    line = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if not line.isascii():
        # Outside strings json.dumps writes ASCII only, so these are inside one, where an escape means the same.
        for sep in _SEPARATORS:
            if sep in line:
                line = line.replace(sep, f"\\u{ord(sep):04x}")
    return line
