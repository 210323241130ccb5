"""Hook payloads: reading them, and making them safe and small before anything is written.

Order matters: redaction runs before the final head+tail cut, so a secret or a `<private>`
span straddling the cut can never leave a readable fragment behind. Very large texts are first
clipped to a generous window (4x the cap) at each end so redaction stays linear and fast on a
10 MB response; the windows' cut edges are trimmed after redaction (see `_WINDOW_EDGE`).

On the hook path: standard library only.
"""

from __future__ import annotations

import json
import re

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

REDACTED = "[REDACTED]"


class _Lazy:
    """A regex compiled on first use. Compiling all of this module's patterns costs a hook ~4 ms
    (a fifth of its budget) while most payloads need few of them: see the needles in `redact`."""

    __slots__ = ("pattern", "flags", "_rx")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._rx: re.Pattern[str] | None = None

    @property
    def rx(self) -> re.Pattern[str]:
        if self._rx is None:
            self._rx = re.compile(self.pattern, self.flags)
        return self._rx

    def sub(self, repl: Any, text: str) -> str:
        return self.rx.sub(repl, text)

    def search(self, text: str) -> re.Match[str] | None:
        return self.rx.search(text)

    def finditer(self, text: str) -> Any:
        return self.rx.finditer(text)


_PRIVATE_KEY = _Lazy(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    re.DOTALL,
)

# Token shapes of common providers. Each is linear (no nested quantifiers) so fuzzed input
# cannot make a hook hang. A JWT must start a run of base64url characters: otherwise every
# "eyJ" inside one long dot-less run would rescan the rest of it (quadratic: 15 s on 200 KB).
_TOKENS = _Lazy(
    r"""
      sk-ant-[A-Za-z0-9_\-]{16,}                # Anthropic
    | sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}   # OpenAI
    | (?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}  # AWS access key ids
    | gh[pousr]_[A-Za-z0-9]{30,}                # GitHub
    | github_pat_[A-Za-z0-9_]{30,}
    | glpat-[A-Za-z0-9_\-]{20,}                 # GitLab
    | xox[abposr]-[A-Za-z0-9\-]{10,}            # Slack
    | AIza[0-9A-Za-z_\-]{35}                    # Google
    | (?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}   # Stripe
    | SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}  # SendGrid
    | hf_[A-Za-z0-9]{30,}                       # Hugging Face
    | npm_[A-Za-z0-9]{36}                       # npm
    | (?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}   # JWTs
    """,
    re.VERBOSE,
)
# One of these is in every match of _TOKENS (case-sensitive, like the pattern).
_TOKEN_NEEDLES = ("sk-", "AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
                  "glpat-", "xox", "AIza", "_live_", "_test_", "SG.", "hf_", "npm_", "eyJ")
# Authorization headers of any scheme, and bearer tokens wherever they appear.
_AUTH_HEADER = _Lazy(
    r"(?i)(authorization[\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic|token|digest)\s+)?[^\s\"',;]+"
)
_BEARER = _Lazy(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*")
# user:password@host in any URL.
_URL_PASSWORD = _Lazy(r"([A-Za-z][A-Za-z0-9+.\-]{0,20}://[^/\s:@'\"]{1,256}:)[^@\s/'\"]{1,256}(@)")
# NAME=value / NAME: value / "name": "value" where the name says it holds a secret. Names are
# bounded ({0,40}) so a long run of identifier characters cannot backtrack quadratically.
_NAME = r"(?<![A-Za-z0-9_.\-])[A-Za-z0-9_.\-]{0,40}"
_NAME_TAIL = r"[A-Za-z0-9_.\-]{0,40}"
# The value group keeps its quotes so JSON inside a string stays JSON; an already redacted
# value is left alone. An unquoted value shaped like code is not a secret: a comparison
# (`password == other`), an object or list (`"password": {"type": ...}`), a call or lookup
# (`tokens = tokenizer.encode(text)`, `token = os.environ["X"]`), a type or a literal
# (`password: str`, `secret: true`).
_CODE = r"""(?:=|[{\[(]|[A-Za-z_][A-Za-z0-9_.]*[(\[]|(?:str|bytes|int|float|bool|none|optional|any|true|false|null)(?![A-Za-z0-9_.\-]))"""
_VALUE = (r"""(?!\[REDACTED\])(?:"(?P<dq>[^"\n]{%(n)s,512})"|'(?P<sq>[^'\n]{%(n)s,512})'|(?!""" + _CODE
          + r""")(?P<bare>[^\s,;'"&}\])]{%(n)s,512}))""")
# Passwords: any value. Tokens and keys: values long enough to be one (not "max_tokens=100").
# The separator stays on the name's line (`if password == x:` then a newline is not an assignment).
_SEP = r"([ \t]{0,8}[:=][ \t]{0,8})"
# Both are lookaheads, so a match is tried at every position: a value may hold the next
# assignment's name (`password="password="x"`), and that assignment's value must go too.
_PASSWORD_ASSIGNMENT = _Lazy(
    rf"""(?i)(?=(["']?)({_NAME}(?:password|passwd|passphrase|pwd|secret|credential){_NAME_TAIL})\1"""
    + _SEP
    + _VALUE % {"n": 1} + ")"
)
_KEY_ASSIGNMENT = _Lazy(
    rf"""(?i)(?=(["']?)({_NAME}(?:token|api[_\-]?key|access[_\-]?key|private[_\-]?key|auth[_\-]?key){_NAME_TAIL})\1"""
    + _SEP
    + _VALUE % {"n": 8} + ")"
)
_ANY_PRIVATE_TAG = _Lazy(r"(?i)</?private>")


def redact(text: str, *, prefilter: bool = True) -> str:
    """Remove `<private>` spans and replace secrets with [REDACTED]. Fails closed: an unclosed
    `<private>` hides everything after it, an unterminated key block everything after BEGIN."""
    if not text:
        return text
    # Each pattern runs only when a word every one of its matches contains is in the text
    # (substring tests cost microseconds; an unneeded regex costs its compile and a full scan).
    # The case-insensitive patterns are checked against lower(), which covers what (?i) matches
    # only for ASCII text: other text runs every pattern.
    low = text.lower() if prefilter and text.isascii() else None

    def has(*needles: str) -> bool:
        return low is None or any(n in low for n in needles)

    if has("private>"):
        text = _strip_private(text) if _ANY_PRIVATE_TAG.search(text) else text
    if "PRIVATE KEY" in text:
        text = _PRIVATE_KEY.sub(REDACTED, text)
    # Every other secret is found in the same text and all are replaced at once: replacing one
    # first could hide another's anchor (in `Bearer password="x"` the bearer token swallows the
    # name `password`, and `x` would stay).
    spans: list[tuple[int, int]] = []
    if not prefilter or any(n in text for n in _TOKEN_NEEDLES):
        spans += [m.span() for m in _TOKENS.finditer(text)]
    if has("authorization"):
        spans += [(m.end(1), m.end()) for m in _AUTH_HEADER.finditer(text)]
    if has("bearer"):
        spans += [(m.end(1), m.end()) for m in _BEARER.finditer(text)]
    if not prefilter or ("://" in text and "@" in text):
        spans += [(m.end(1), m.start(2)) for m in _URL_PASSWORD.finditer(text)]
    if has("passw", "passphrase", "pwd", "secret", "credential"):
        spans += _value_spans(_PASSWORD_ASSIGNMENT, text)
    if has("token", "key"):
        spans += _value_spans(_KEY_ASSIGNMENT, text)
    return _replace_spans(text, spans)


def _value_spans(pattern: _Lazy, text: str) -> list[tuple[int, int]]:
    """Where the values of the assignments `pattern` finds are (names, separators and quotes
    stay, so JSON stays JSON)."""
    spans = []
    for match in pattern.finditer(text):
        group = "dq" if match.start("dq") >= 0 else "sq" if match.start("sq") >= 0 else "bare"
        spans.append(match.span(group))
    return spans


def _replace_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """Each run of overlapping or touching spans becomes one [REDACTED]."""
    spans = sorted(span for span in spans if span[1] > span[0])
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    start, end = spans[0]
    for s, e in spans[1:]:
        if s <= end:
            end = max(end, e)
            continue
        out += [text[pos:start], REDACTED]
        pos, (start, end) = end, (s, e)
    out += [text[pos:start], REDACTED, text[end:]]
    return "".join(out)


def _strip_private(text: str) -> str:
    """Remove <private> spans in one pass over the tags (a regex with a lazy .*? is quadratic
    on many unclosed openers). Fails closed: an unclosed opener hides the rest, and a stray
    closer hides everything before it (its opener was cut away)."""
    kept: list[str] = []
    pos = 0
    inside = False
    for tag in _ANY_PRIVATE_TAG.finditer(text):
        closing = tag.group().startswith("</")
        if inside:
            if closing:
                inside = False
                pos = tag.end()
            continue
        if closing:
            kept.clear()
            pos = tag.end()
        else:
            kept.append(text[pos : tag.start()])
            inside = True
    if not inside:
        kept.append(text[pos:])
    return "".join(kept)


def head_tail(text: str, limit: int, dropped_extra: int = 0) -> str:
    """Cut text to about `limit` chars, keeping 2/3 head and 1/3 tail, with a marker saying how
    much was dropped (errors and results tend to sit at the end)."""
    if len(text) <= limit and not dropped_extra:
        return text
    if len(text) <= limit:
        return text + f"\n[... {dropped_extra} chars dropped ...]"
    head = (limit * 2) // 3
    tail = limit - head
    dropped = len(text) - head - tail + dropped_extra
    return f"{text[:head]}\n[... {dropped} chars dropped ...]\n{text[len(text) - tail:]}"


# Characters trimmed from the cut edge of each window after redaction: a secret cut in two by
# the window (a token shorter than its pattern, a quoted password without its closing quote)
# is not recognised, but survives redaction unchanged at the very edge, so trimming more than
# any such fragment's length removes it even when redaction shrank the window a lot (a large
# <private> span or key block) and would otherwise bring the edge into the kept part.
_WINDOW_EDGE = 2048
_KEY_END = _Lazy(r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")


def clean_text(text: str, limit: int) -> str:
    """Redact, then cut to head and tail. Safe and linear on any size."""
    window = 4 * limit + _WINDOW_EDGE
    if len(text) > 2 * window:
        # Redact the two ends separately, then drop each one's cut edge (see _WINDOW_EDGE).
        head = redact(text[:window])
        head = head[: max(0, len(head) - _WINDOW_EDGE)][: 2 * limit]
        tail = _redact_tail(text[-window:])
        tail = tail[_WINDOW_EDGE:][-limit:]
        dropped = len(text) - len(head) - len(tail)
        if len(head) + len(tail) <= limit:
            return f"{head}\n[... {dropped} chars dropped ...]\n{tail}"
        return head_tail(head + tail, limit, dropped)
    return head_tail(redact(text), limit)


def _redact_tail(text: str) -> str:
    # The tail window may begin inside a <private> span or a private key block whose opener
    # was cut off: everything before the orphaned closer goes.
    first = _ANY_PRIVATE_TAG.search(text)
    if first and first.group().startswith("</"):
        text = text[first.end() :]
    if "PRIVATE KEY" in text:
        end = _KEY_END.search(text)
        if end and "-----BEGIN" not in text[: end.start()]:
            text = text[end.end() :]
    return redact(text)


def clean_value(value: Any, limit: int) -> Any:
    """Redact every string (and key) in a JSON-like value and cap each one at `limit` chars."""
    if isinstance(value, str):
        return clean_text(value, limit)
    if isinstance(value, dict):
        return {clean_text(str(k), limit): clean_value(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [clean_value(v, limit) for v in value]
    return value


def to_json_capped(value: Any, limit: int) -> str:
    """JSON text of a cleaned value, at most about 1.25x `limit` chars, in bounded time.

    Lists and objects with very many items keep their head and tail items around a marker (a
    10 MB list of rows would otherwise cost seconds of redaction for text that is cut anyway).
    When the strings add up past `limit`, each long one is cut to a fair share while short
    ones stay whole, so the end of a long stdout survives beside its stderr. If the whole is
    still too long, it is kept as one JSON string cut to head and tail, still valid JSON."""
    trimmed = _trim_containers(value, max(16, limit // 64), [limit])
    cap = _fair_share(_string_lengths(trimmed, []), limit)
    text = json.dumps(clean_value(trimmed, cap), ensure_ascii=False, separators=(",", ":"))
    budget = limit + limit // 4
    if len(text) <= budget:
        return text
    # As one string, its quotes and backslashes are escaped again: cut until that fits too.
    cut = limit
    while True:
        out = json.dumps(head_tail(text, cut), ensure_ascii=False)
        if len(out) <= budget or cut <= 100:
            return out
        cut = max(100, cut * budget // len(out) - 50)


def _trim_containers(value: Any, max_items: int, budget: list[int]) -> Any:
    """Keep the first 2/3 and last 1/3 of `max_items` items of each long list or object; stop
    descending once `budget[0]` nodes have been visited (pathologically wide nesting)."""
    budget[0] -= 1
    if budget[0] < 0 and isinstance(value, (dict, list)):
        return "[... dropped ...]"
    if isinstance(value, list):
        if len(value) > max_items:
            head = (max_items * 2) // 3
            tail = max_items - head
            middle = f"[... {len(value) - head - tail} items dropped ...]"
            value = [*value[:head], middle, *value[len(value) - tail:]]
        return [_trim_containers(v, max_items, budget) for v in value]
    if isinstance(value, dict):
        items = list(value.items())
        if len(items) > max_items:
            head = (max_items * 2) // 3
            tail = max_items - head
            dropped = ("[...]", f"{len(items) - head - tail} keys dropped")
            items = [*items[:head], dropped, *items[len(items) - tail:]]
        return {k: _trim_containers(v, max_items, budget) for k, v in items}
    return value


def _string_lengths(value: Any, out: list[int]) -> list[int]:
    if isinstance(value, str):
        out.append(len(value))
    elif isinstance(value, dict):
        for v in value.values():
            _string_lengths(v, out)
    elif isinstance(value, list):
        for v in value:
            _string_lengths(v, out)
    return out


def _fair_share(lengths: list[int], limit: int) -> int:
    """The cap c (at least 64, at most limit) with sum(min(n, c)) about `limit`: strings shorter
    than their share stay whole, the long ones share what is left."""
    if sum(lengths) <= limit:
        return limit
    remaining = limit
    ordered = sorted(lengths)
    for i, n in enumerate(ordered):
        share = remaining // (len(ordered) - i)
        if n > share:
            return max(64, min(limit, share))
        remaining -= n
    return limit


class PayloadError(ValueError):
    """The hook payload cannot be used; the message says why in one line."""


def json_object(text: str) -> dict[str, Any]:
    """`text` as a JSON object (a hook's payload, a settings file); anything else raises
    ValueError saying what it is instead: "not valid JSON (...)", "a JSON list, not a JSON object"."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"a JSON {type(data).__name__}, not a JSON object")
    return data


def parse_payload(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise PayloadError("empty payload on stdin")
    # Non-UTF-8 bytes are replaced, not refused: the rest of the event is still worth keeping.
    try:
        return json_object(raw.decode("utf-8", errors="replace"))
    except ValueError as exc:
        raise PayloadError(f"payload is {exc}") from None


def storable_record(record: dict[str, Any]) -> dict[str, Any]:
    """A hook's record (redacted and capped) with any lone surrogate in it replaced (U+FFFD).
    Claude Code escapes one when a tool output is cut inside an emoji's pair; kept, it would fail
    every write of the event, the spool's too. The record is checked, not the payload:
    it is small, and looking for escapes in a 10 MB payload cost more than parsing it."""
    try:
        json.dumps(record, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        from claude_mem.text.storable import storable_value  # loaded only then: a hook's import time counts

        return storable_value(record)
    return record


def require_str(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str) or not value.strip():
        raise PayloadError(f"payload has no {key}")
    return value


def optional_str(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


def matches_skip_list(tool_name: str, patterns: list[str]) -> bool:
    """Exact names, or prefixes with a trailing `*` (fnmatch costs ~7 ms to import)."""
    for pattern in patterns:
        if pattern.endswith("*"):
            if tool_name.startswith(pattern[:-1]):
                return True
        elif tool_name == pattern:
            return True
    return False
