"""Secrets and `<private>` spans out of a text: what never reaches the database, the index, the
logs or the model. `<private>` spans go whole; secrets (provider tokens, authorization headers,
URL passwords, values assigned to names that say they hold one) become [REDACTED].

Fails closed: an unclosed `<private>` hides everything after it, an unterminated key block
everything after BEGIN. Linear on any input (fuzzed payloads cannot make a hook hang). On the
hook path: standard library only, and each pattern compiled on first use.
"""

from __future__ import annotations

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


_KEY_END = _Lazy(r"-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")


def redact_tail(text: str) -> str:
    """`redact` for the tail end of a longer text, cut from it: it may begin inside a <private>
    span or a private key block whose opener was cut off, and everything before the orphaned
    closer goes."""
    first = _ANY_PRIVATE_TAG.search(text)
    if first and first.group().startswith("</"):
        text = text[first.end() :]
    if "PRIVATE KEY" in text:
        end = _KEY_END.search(text)
        if end and "-----BEGIN" not in text[: end.start()]:
            text = text[end.end() :]
    return redact(text)
