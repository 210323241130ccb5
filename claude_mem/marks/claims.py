"""What an observation claims, read the way the marking rules compare two of them: its subject
(concepts, files, the content words of its headline), the values it states (numbers, versions,
ports, each with the words around it as its key), whether it says something changed or failed or
was fixed, and the checks it ran (the heuristic synthesizer's facts: `command`: ok|failed).

Everything here is read from one row; nothing is learnt from a data set. The word lists are
plain English for "this changed" / "this failed" / "this was fixed", not any project's terms.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from claude_mem.file_paths import Place, place
from claude_mem.store.reads import json_list
from claude_mem.text.command_keys import command_keys
from claude_mem.text.terms import STOPWORDS, stem

# Tokens as claims write them: words, identifiers, paths, versions (`~> 1.7.0`, `10,000`, `:8443`).
_TOKEN = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|[\w$~:./{}-]*\w[\w$~:./{}-]*|->|→")
_TRIM = ".,;:()[]'\"`"
_CLAUSE = re.compile(r"[,;()\[\]]\s|\s[-–—]\s|[.!?]\s")  # a value's words stay within its clause
# Says the state changed: the newer observation tells what it was and what it is now.
_CHANGE = re.compile(
    r"\b(?:now|no longer|instead|replac\w*|renam\w*|mov(?:ed|es|ing)|switch\w*|migrat\w*|upgrad\w*|downgrad\w*|"
    r"lower(?:ed|s)|rais(?:ed|es)|increas\w*|decreas\w*|reduc\w*|bump\w*|remov\w*|drop(?:ped|s)|retir\w*|deprecat\w*|"
    r"delet\w*|revert\w*|back to|chang(?:ed|es)|rewr\w*|ported|swapp?\w*)\b|->|→", re.IGNORECASE)
# Reports a failure: a check failing, a bug, a crash, a disabled test.
# ("error" alone is left out: "error messages are localized" reports nothing broken.)
_FAILURE = re.compile(r"\b(?:fail\w*|broken|breaks?|bugs?|crash\w*|regress\w*|flak\w*|nan|xfail\w*|skip(?:s|ped)?|"
                      r"leak\w*|hangs?)\b", re.IGNORECASE)
_FIXED = re.compile(r"\b(?:fix\w*|resolv\w*|repair\w*|pass(?:es|ing)?)\b", re.IGNORECASE)
# A heuristic observation's fact about one command it ran (worker/heuristic/compose.py, Run.fact).
_CHECK = re.compile(r"^`(?P<command>[^`]+)`(?: \(.*\))?: (?P<status>ok|failed) — (?P<result>.*)$", re.DOTALL)
CHANGE_WINDOW = 5  # words either side of "replaced", "moved from", ... that name what changed
KEY_WINDOW = 3  # words before a value that name what it is the value of
AFTER_WINDOW = 2  # words after it (a unit: "10 s", "50,000 rows per batch")


def _tokens(text: str) -> list[str]:
    return [t for t in (m.strip(_TRIM) for m in _TOKEN.findall(text or "")) if t]


_DIGIT = re.compile(r"\d")


def _is_number(token: str) -> bool:
    return _DIGIT.search(token) is not None


def _content(token: str) -> str | None:
    """The stem of a word that names something (not a stopword, not a value), or None."""
    word = token.lower()
    if len(word) < 2 or word in STOPWORDS or _is_number(word) or word in ("->", "→"):
        return None
    return stem(word)


def content_words(text: str) -> set[str]:
    """Stems of the words that name something, identifiers also split at `_`, `-`, `.` and `/`."""
    found: set[str] = set()
    for token in _tokens(text):
        for piece in {token, *re.split(r"[_./-]+", token)}:
            word = _content(piece)
            if word:
                found.add(word)
    return found


def _key_words(token: str) -> list[str]:
    """The stems a word lends as a key: itself, and the parts of an identifier (`PAGE_SIZE`)."""
    return [w for w in dict.fromkeys(_content(p) for p in (token, *re.split(r"[_./-]+", token))) if w]


def keyed_values(text: str) -> dict[str, set[str]]:
    """Each number-bearing value with the words that say what it is, within its clause: "batch
    size 256, lr 1e-3" gives {"batch": {"256"}, "size": {"256"}, "lr": {"1e-3"}}; "50,000 rows per
    batch" gives {"rows": ..., "batch": ...}."""
    keyed: dict[str, set[str]] = {}
    for clause in _CLAUSE.split(text or ""):
        for key, values in _keyed_in(_tokens(clause)).items():
            keyed.setdefault(key, set()).update(values)
    return keyed


def _keyed_in(tokens: list[str]) -> dict[str, set[str]]:
    keyed: dict[str, set[str]] = {}
    for i, token in enumerate(tokens):
        if not _is_number(token):
            continue
        keys: list[str] = []
        for j in range(i - 1, max(-1, i - 1 - KEY_WINDOW * 2), -1):  # the words before it, up to KEY_WINDOW of them
            if _is_number(tokens[j]) or len(keys) >= KEY_WINDOW:
                break
            keys += _key_words(tokens[j])
        for j in range(i + 1, min(len(tokens), i + 1 + AFTER_WINDOW)):  # and a unit after it
            if _is_number(tokens[j]):
                break
            keys += _key_words(tokens[j])
        for key in keys:
            keyed.setdefault(key, set()).add(token.lower())
    return keyed


def changed_words(text: str) -> set[str]:
    """The stems of the words next to a statement of change ("CSV manifests were replaced by ...",
    "moved from Celery to RQ"): what the text says changed."""
    spans = [(m.start(), m.group().strip(_TRIM)) for m in _TOKEN.finditer(text or "")]
    starts = [start for start, _ in spans]
    found: set[str] = set()
    for match in _CHANGE.finditer(text or ""):
        at = bisect.bisect_left(starts, match.start())
        for _, token in spans[max(0, at - CHANGE_WINDOW):at + CHANGE_WINDOW + 1]:
            if token:
                found.update(_key_words(token))
    return found


def norm_concept(concept: str) -> str:
    return re.sub(r"[\s_-]+", "-", concept.strip().lower())


@dataclass
class Check:
    command: str  # as the fact shows it (set-up, wrappers and noise already left out)
    key: str  # its program and subcommand, as the pre hook keys commands (`pytest tests/x.py`; joined by && for several)
    ok: bool
    result: str


@dataclass
class Claim:
    id: int
    project: str
    type: str
    source: str
    created: int
    title: str
    head: str  # title and subtitle: what the observation says first
    body: str = ""  # narrative and facts
    concepts: set[str] = field(default_factory=set)
    files: list[Place] = field(default_factory=list)  # read and modified, each as file_paths.place reads it
    title_words: set[str] = field(default_factory=set)
    head_words: set[str] = field(default_factory=set)
    claim_words: set[str] = field(default_factory=set)  # tokens of title and facts: what it claims
    numbers: set[str] = field(default_factory=set)  # number-bearing tokens of title and facts
    checks: list[Check] = field(default_factory=list)
    fact_count: int = 0
    content_hash: str = ""
    scope: str = ""  # a decision's component ('' = the whole project)

    @cached_property
    def changed(self) -> set[str]:
        """The stems its narrative and facts say changed (changed_words)."""
        return changed_words(self.body) if _CHANGE.search(self.body) else set()

    @property
    def changes(self) -> bool:
        """Its headline says something changed."""
        return bool(_CHANGE.search(self.head))

    @property
    def reports_failure(self) -> bool:
        return self.type not in ("feature", "decision", "refactor") and bool(_FAILURE.search(self.title))

    @property
    def reports_fix(self) -> bool:
        return self.type == "bugfix" or bool(_FIXED.search(self.title))

    def check_command(self) -> str | None:
        """The one command every fact of a heuristic check observation ran, else None."""
        commands = {c.command for c in self.checks}
        return next(iter(commands)) if len(commands) == 1 and len(self.checks) == self.fact_count else None


def claim(row: dict[str, Any]) -> Claim:
    """The claim of an observation row (a dict of its columns)."""
    title = row.get("title") or ""
    subtitle = row.get("subtitle") or ""
    facts = json_list(row.get("facts"))
    head = f"{title} . {subtitle}" if subtitle else title
    body = " . ".join([row.get("narrative") or "", *facts])
    claimed = _tokens(" ".join([title, *facts]))
    checks = []
    for fact in facts:
        match = _CHECK.match(fact)
        # An elided command (an inline script, `python -c "…"`, or one cut short) names no check:
        # two of them look the same and are not.
        keys = command_keys(match["command"]) if match and "…" not in match["command"] else []
        if match and keys:
            checks.append(Check(match["command"].strip(), " && ".join(keys), match["status"] == "ok", match["result"].strip()))
    cwd = row.get("session_cwd")  # its session's folder, when the row was read with it (candidates.rows)
    files = list(dict.fromkeys(place(p, cwd) for column in ("files_read", "files_modified") for p in json_list(row.get(column))))
    return Claim(
        id=int(row["id"]), project=row.get("project") or "", type=row.get("type") or "", source=row.get("source") or "",
        created=int(row.get("created_at_epoch") or 0), title=title, head=head, body=body,
        concepts={norm_concept(c) for c in json_list(row.get("concepts")) if c.strip()},
        files=[f for f in files if f.path], title_words=content_words(title), head_words=content_words(head),
        claim_words={t.lower() for t in claimed}, numbers={t.lower() for t in claimed if _is_number(t)}, checks=checks,
        fact_count=len(facts),
        content_hash=row.get("content_hash") or "", scope=row.get("scope") or "")
