"""Does a text read as instructions addressed to an AI assistant? Cut into units, each judged.

A unit is what an injection fits in: an HTML comment, a block posing as a system turn
(`<system>…</system>`, `<|im_start|>…`, `[INST]…[/INST]`), a line (a long line in sentences),
and two or three neighbouring lines together (an address on one line, the ask on the next). Each
unit is folded (fold.py) and its signals (signals.py) combined:

  - an override used, not merely mentioned ("ignore previous instructions")           -> flagged
  - a posed role with an ask, or with a danger, secrecy or an override               -> flagged
  - secrecy ("do not tell the user") with an ask or a danger                          -> flagged
  - an AI addressed ("AI agents reading this:") with an ask, a danger or secrecy      -> flagged

A unit in a mild context (prompt-engineering code, an agent-instructions file such as CLAUDE.md,
text that talks about such phrases, two lines joined) needs more: a danger (a script piped into a
shell, a destructive command, secrets sent out, safety checks turned off, code that runs commands
added, a remote shell, shell start-up or SSH access changed), secrecy or an override. Honest text
holds each signal alone all the time (READMEs are full of imperatives, prompt code of roles, docs
of "AI assistants"); instructions planted for an AI hold them together.
"""

from __future__ import annotations

import re

from claude_mem.guard.fold import fold
from claude_mem.guard.signals import ADDRESSED, ASKS, CODE, DANGERS, GATE, MENTION, NEGATED, OVERRIDE, ROLE, ROLE_IN_DATA, SECRECY

LONG_LINE = 500  # a line longer than this is judged sentence by sentence
BLOCK_CHARS = 3000  # a comment or posed block is one unit up to this long
WINDOW = 3  # lines judged together, at most
CONTEXT_LINES = 5  # lines each side that say what a line is part of (code, talk about prompts)
_ROLE_TAG = (r"system|sys|assistant|admin|developer|system[-_ ]?(?:prompt|message|reminder|instructions?|override)"
             r"|important[-_ ]?instructions?|instructions?")
_BLOCK = re.compile("|".join([
    rf"<!--.{{0,{BLOCK_CHARS}}}?(?:-->|\Z)",
    rf"<\s*(?P<tag>{_ROLE_TAG})\s*>.{{0,{BLOCK_CHARS}}}?(?:<\s*/\s*(?P=tag)\s*>|\n\s*\n|\Z)",
    rf"<\|im_start\|>.{{0,{BLOCK_CHARS}}}?(?:<\|im_end\|>|\Z)", rf"\[INST\].{{0,{BLOCK_CHARS}}}?(?:\[/INST\]|\Z)",
    rf"<<SYS>>.{{0,{BLOCK_CHARS}}}?(?:<</SYS>>|\Z)",
]), re.S | re.I)
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+|(?<=\"),\s*(?=\")|(?<=\}),\s*(?=\{)")
_COMMENT = re.compile(r"^\s*(?:#|//|/\*|\*|--|;|%|rem\s)", re.I)
_JSON_FIELD = re.compile(r"\"[\w .-]{1,40}\"\s*:")


class Finding:
    """A unit that reads as instructions to an AI: how it addresses one, what it asks, where it sits.
    (Plain classes here: the command-failure push loads the guard, and a hook imports no dataclasses.)"""

    __slots__ = ("how", "asks", "where", "start", "end")

    def __init__(self, how: str, asks: str, where: str, start: int, end: int) -> None:
        self.how = how  # "override" | "posed role" | "secrecy" | "addressed"
        self.asks = asks  # the harm asked for, said neutrally ("to run a script downloaded from the web"), or ""
        self.where = where  # "an HTML comment" | "a block posing as a system message" | "a code comment" | "a JSON field" | "text"
        self.start = start  # the unit's place in the text judged
        self.end = end


class Signals:
    __slots__ = ("addressed", "override", "role", "role_in_data", "secrecy", "asks", "mention", "code", "dangers")

    def __init__(self, folded: str) -> None:
        self.dangers = dangers(folded)
        # Nothing a verdict needs can be there without one of the gate's words (a cheap search).
        gated = GATE.search(folded) is not None
        self.addressed = gated and bool(ADDRESSED.search(folded))
        self.override = gated and bool(OVERRIDE.search(folded))
        self.role = gated and bool(ROLE.search(folded))
        self.role_in_data = gated and bool(ROLE_IN_DATA.search(folded))
        self.secrecy = gated and bool(SECRECY.search(folded))
        self.asks = gated and bool(ASKS.search(folded))
        self.mention = gated and bool(MENTION.search(folded))
        self.code = gated and bool(CODE.search(folded))

    @property
    def triggered(self) -> bool:
        return self.addressed or self.override or self.role or self.role_in_data or self.secrecy


def dangers(folded: str) -> list[str]:
    """What harm the text asks for (descriptions from signals.DANGERS), negated ones left out."""
    found = []
    for description, pattern in DANGERS:
        for match in pattern.finditer(folded):
            if not NEGATED.search(folded[max(0, match.start() - 24):match.start()]):
                found.append(description)
                break
    return found


def verdict(s: Signals, *, mild: bool = False) -> str | None:
    """How the unit addresses an AI when it reads as instructions to one, else None."""
    mild = mild or s.code or s.mention
    strong = bool(s.dangers) or s.secrecy or (s.override and not s.mention)
    if s.override and strong:
        return "override"
    if (s.role and (strong or (s.asks and not mild))) or (s.role_in_data and strong):
        return "posed role"
    if s.addressed and (strong or (s.asks and not mild)):
        return "addressed"
    if s.secrecy and (s.dangers or ((s.asks or s.addressed) and not mild)):
        return "secrecy"
    return None


def judge(text: str, *, mild: bool = False) -> Finding | None:
    """The verdict on `text` as one unit."""
    s = Signals(fold(text))
    how = verdict(s, mild=mild)
    return None if how is None else Finding(how, s.dangers[0] if s.dangers else "", _where(text, how), 0, len(text))


def scan(text: str, *, mild: bool = False, sentences: bool = False) -> list[Finding]:
    """Every unit of `text` that reads as instructions to an AI, in order, none inside another.
    `mild`: the text comes from where instructions to agents belong (CLAUDE.md, AGENTS.md);
    `sentences`: every line judged sentence by sentence (what a memory says: keep what it can)."""
    if not text or not GATE.search(fold(text)):
        return []
    found: list[Finding] = []
    rest = list(text)
    for match in _BLOCK.finditer(text):
        unit = judge(match.group(), mild=mild)
        if unit is not None:
            found.append(Finding(unit.how, unit.asks, _where(match.group(), unit.how, block=True), match.start(), match.end()))
        rest[match.start():match.end()] = [c if c == "\n" else " " for c in match.group()]
    found += _lines(text, "".join(rest), mild, sentences)
    found.sort(key=lambda f: f.start)
    return found


def pieces(text: str, sentences: bool = False) -> list[list[tuple[int, int]]]:
    """(start, end) of each non-blank line (a long one, or each with `sentences`, cut into
    sentences), grouped by paragraph."""
    paragraphs: list[list[tuple[int, int]]] = [[]]
    at = 0
    for line in text.split("\n"):
        end = at + len(line)
        if not line.strip():
            if paragraphs[-1]:
                paragraphs.append([])
        elif len(line) <= LONG_LINE and not sentences:
            paragraphs[-1].append((at, end))
        else:
            start = at
            for cut in _SENTENCE.finditer(line):
                if line[start - at:cut.start()].strip():
                    paragraphs[-1].append((start, at + cut.start()))
                start = at + cut.end()
            if line[start - at:].strip():
                paragraphs[-1].append((start, end))
        at = end + 1
    return [p for p in paragraphs if p]


def _lines(original: str, blanked: str, mild: bool, sentences: bool) -> list[Finding]:
    """The lines (and runs of up to WINDOW neighbouring lines) that read as instructions. Only
    lines holding one of the gate's words, and the runs around them, are judged."""
    found: list[Finding] = []
    for paragraph in pieces(blanked, sentences):
        folded = [fold(blanked[a:b]) for a, b in paragraph]
        gated = [i for i, f in enumerate(folded) if GATE.search(f)]
        if not gated:
            continue
        sigs: dict[int, Signals] = {i: Signals(folded[i]) for i in gated}
        flagged = [False] * len(paragraph)
        for i in gated:
            s = _in_context(sigs[i], folded, i, i + 1)
            how = verdict(s, mild=mild)
            if how is not None:
                flagged[i] = True
                a, b = paragraph[i]
                found.append(Finding(how, s.dangers[0] if s.dangers else "", _where(original[a:b], how), a, b))
        for width in range(2, WINDOW + 1):
            for i in sorted({start for g in gated for start in range(g - width + 1, g + 1) if 0 <= start <= len(paragraph) - width}):
                span = range(i, i + width)
                if any(flagged[j] for j in span) or not any(j in sigs and sigs[j].triggered for j in span):
                    continue
                s = _in_context(Signals("\n".join(folded[j] for j in span)), folded, i, i + width)
                # Lines joined need a danger, secrecy or an override; but a bare role line ("### System:")
                # heads what follows it as a posed turn.
                header = i in sigs and sigs[i].role and len(folded[i].split()) <= 4
                how = verdict(s, mild=not header)
                if how is not None:
                    for j in span:
                        flagged[j] = True
                    a, b = paragraph[i][0], paragraph[i + width - 1][1]
                    found.append(Finding(how, s.dangers[0] if s.dangers else "", _where(original[a:b], how), a, b))
    return found


def _in_context(s: Signals, folded: list[str], start: int, end: int) -> Signals:
    """A unit's signals with what its neighbourhood says it is part of: code, or text about such
    phrases (a list named INJECTION_EXAMPLES, a prompt template's persona a few lines up)."""
    around = "\n".join(folded[max(0, start - CONTEXT_LINES):end + CONTEXT_LINES])
    s.code = s.code or bool(CODE.search(around))
    s.mention = s.mention or bool(MENTION.search(around))
    return s


def _where(unit: str, how: str, *, block: bool = False) -> str:
    head = unit.lstrip()
    if head.startswith("<!--"):
        return "an HTML comment"
    if block or how == "posed role":
        return "a block posing as a system message"
    if _COMMENT.match(head):
        return "a code comment"
    if _JSON_FIELD.search(unit):
        return "a JSON field"
    return "text"
