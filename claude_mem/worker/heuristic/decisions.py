"""Decisions, rules and conventions a person states, as observations of their own (issue 51).

A user often closes an investigation by saying what holds from now on ("Decision: this log is
append-only; never rewrite past lines"). Pushes leave prompts out, and a turn's summary is cut
before such a sentence, so the statement is a memory of its own: type `decision`, its title the
statement in the user's words (whole sentences, the request that follows it left out), its scope
the component or path it was stated for (text/scope.py).

What counts as a statement, in a prompt:
  - a label: "Decision:", "Decision update:", "Rule:", "Convention:", "Policy:", "Rule for X:";
  - a phrase: "we decided", "we agreed", "the team decided", "from now on", "going forward",
    "the rule is", "our convention is";
  - a standing imperative: a sentence that starts with "Always" or "Never", or says something
    "must never" / "must always" / "should never" / "should always" be done;
and in Claude's closing message only the first two (an assistant writes "always" loosely). Never:
a question, a sentence that says nothing was decided ("we haven't decided", "if we decide"), a
person's habit ("I never remember ..."), quoted text, code blocks, machine-made prompts. The
sentences after a statement belong to it while they still state a rule (a modal, a negation, a
copula); the first request ("Please fix nightly.py.") ends it.

Deterministic: the same text gives the same observations, whatever the batching.
"""

from __future__ import annotations

import re

from claude_mem.store.memories import Observation
from claude_mem.text.scope import scope_of
from claude_mem.text.shorten import clip

PROMPT_STATED = "Stated by the user"  # how a decision's subtitle begins when the prompt stated it
TITLE_CHARS = 280  # a statement is its own headline: cut only when it runs past this
MAX_SENTENCES = 3
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[\"'(`\[A-Za-z0-9])|\n+")
_LABEL = re.compile(r"\b(?:team\s+)?(?:decision(?:\s+update)?|decided|rule|convention|policy|agreed\s+rule)"
                    r"(?:\s+for\s+[\w./-]+(?:\s+only)?)?\s*:\s*", re.IGNORECASE)
_PHRASE = re.compile(r"\b(?:(?:we|the team|i)\s+(?:have\s+|'ve\s+|just\s+)?(?:decided|agreed)(?:\s+(?:that|on|to))?"
                     r"|from now on|going forward|moving forward|henceforth"
                     r"|the (?:rule|convention|policy) (?:is|will be)(?: that)?|our (?:rule|convention|policy) is(?: that)?)"
                     r"\s*[,:]?\s*", re.IGNORECASE)
_IMPERATIVE = re.compile(r"^(?:please\s+)?(?:always|never)\b|\b(?:must|should|shall)\s+(?:always|never)\b", re.IGNORECASE)
_NOT_DECIDED = re.compile(r"\b(?:not|n't|never|yet to|if|whether|when)\s+(?:\w+\s+)?(?:decide|decided|agree|agreed)\b|\bundecided\b"
                          r"|\bnever\s*mind\b", re.IGNORECASE)
_QUESTION = re.compile(r"^(?:should|shall|can|could|would|do|does|did|is|are|was|were|will|why|how|what|when|where|which|who)\b",
                       re.IGNORECASE)
_HABIT = re.compile(r"^(?:i|i'm|i've)\s+(?:always|never|usually|often)\b", re.IGNORECASE)
# A sentence still stating the rule: it says what must, may or will be, or is not.
_RULE_LIKE = re.compile(r"\b(?:must|never|always|only|no|not|n't|shall|should|is|are|will|may|each|every|all|instead)\b",
                        re.IGNORECASE)
_REQUEST = re.compile(r"^(?:please|pls|can you|could you|would you|let's|lets|now\s+(?:fix|add|update|change))\b", re.IGNORECASE)


def stated(text: str, *, by: str = "prompt", files: list[str] | None = None) -> list[Observation]:
    """The decision observations `text` states (`by`: "prompt" or "reply", Claude's closing message)."""
    return [_observation(statement, said, by, files or []) for statement, said in statements(text, by=by)]


def statements(text: str, *, by: str = "prompt") -> list[tuple[str, str]]:
    """The statements in `text`: each as its rule (whole sentences, the label or phrase that
    introduced it left out) and as said (with it: "Decision update:" tells a replacement)."""
    if not text or text.lstrip().startswith("<"):
        return []  # a machine-made prompt (a task notification, a local command's output)
    sentences = [s.strip() for paragraph in _paragraphs(text) for s in _SENTENCE.split(paragraph) if s.strip()]
    out: list[tuple[str, str]] = []
    k = 0
    while k < len(sentences):
        head = _start(sentences[k], by)
        if head is None:
            k += 1
            continue
        taken, said = [head], [sentences[k].strip(" -*#\t")]
        k += 1
        while k < len(sentences) and len(taken) < MAX_SENTENCES and _continues(sentences[k]):
            taken.append(sentences[k])
            said.append(sentences[k])
            k += 1
        statement = " ".join(taken).strip()
        if len(statement.split()) >= 3:
            out.append((statement, " ".join(said)))
    return out


def without_statements(text: str, *, by: str = "prompt") -> str:
    """`text` with the statements it makes left out (a turn's summary keeps what was asked: the
    statement is a memory of its own, which pushes show where it applies, rivals together)."""
    for _, said in statements(text, by=by):
        text = text.replace(said, " ")
    return " ".join(text.split())


def _paragraphs(text: str) -> list[str]:
    """The prose of `text`: code blocks and quoted lines left out."""
    text = _FENCE.sub("\n", text)
    lines = [line for line in text.splitlines() if not line.lstrip().startswith(">")]
    return [p for p in re.split(r"\n\s*\n", "\n".join(lines)) if p.strip()]


def _start(sentence: str, by: str) -> str | None:
    """The statement a sentence begins, or None: the sentence from its label or phrase on (the
    label itself dropped), or the whole standing imperative."""
    bare = sentence.strip(" -*#\t")
    if bare.endswith("?") or _NOT_DECIDED.search(bare) or _HABIT.search(bare):
        return None
    for pattern in (_LABEL, _PHRASE):
        match = pattern.search(bare)
        if match and not _QUESTION.match(bare[:match.start()].strip()):
            rest = bare[match.end():].strip()
            if pattern is _LABEL and (inner := _PHRASE.match(rest)):  # "Decision: we agreed that ..."
                rest = rest[inner.end():].strip()
            if pattern is _LABEL and re.search(r"\bfor\s+\S", match.group(0), re.IGNORECASE):
                rest = match.group(0).strip().rstrip(":").split(None, 1)[-1] + ": " + rest  # "Rule for X:" keeps its X
            return _capital(rest) if len(rest.split()) >= 3 else None
    if by == "prompt" and _IMPERATIVE.search(bare) and not _QUESTION.match(bare):
        return _capital(bare)
    return None


def _continues(sentence: str) -> bool:
    bare = sentence.strip(" -*#\t")
    return (not bare.endswith("?") and not _REQUEST.match(bare) and _start(bare, "reply") is None
            and bool(_RULE_LIKE.search(bare)))


def _capital(text: str) -> str:
    first = text.split(None, 1)[0] if text.split() else ""
    return text[:1].upper() + text[1:] if first.isalpha() and first.islower() else text


def _observation(statement: str, said: str, by: str, files: list[str]) -> Observation:
    scope = scope_of(statement)
    who = PROMPT_STATED if by == "prompt" else "Agreed in Claude's closing message"
    named = [f for f in files if _names_file(statement, f)]
    return Observation(type="decision", title=clip(statement, TITLE_CHARS),
                       subtitle=who + (f"; applies to {scope}" if scope else "; applies to the whole project"),
                       narrative=said, facts=[statement] if len(statement) > TITLE_CHARS else [],
                       concepts=["decision", "stated"], files_read=named, scope=scope)


def _names_file(statement: str, path: str) -> bool:
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    return len(name) > 3 and "." in name and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", statement) is not None
