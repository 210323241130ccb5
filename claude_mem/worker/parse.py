"""Parse the observer model's XML replies into Observations and a Summary, losing as little as possible.

The model is asked for <observation> and <summary> blocks but writes prose around them, code
fences, raw `<` and `&` in text (`Vec<String>`, `a < b && c`), unknown types and replies cut off
mid-block. A recovering XML parser alone drops text after a stray `<`, so the reply is first
rewritten into well-formed XML: only our own tags, where they make structural sense, stay
markup; every other `<`, `>` and `&` (bar valid entities) is escaped so it survives verbatim.
lxml then decodes entities and builds the tree.

A reply to a batch that spans turns holds a <summary request="N"> per turn that ended, each after
that turn's observations: every summary is kept, in order, with the request it names, and every
observation with how many summaries came before it (worker/synthesis.py places them in turns).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

from lxml import etree

from claude_mem.store.memories import Observation, Summary, known_type
from claude_mem.store.reads import SUMMARY_FIELDS
from claude_mem.text.scope import norm as norm_scope
from claude_mem.text.shorten import clip, cut

_Parsed = TypeVar("_Parsed", Observation, Summary)
BLOCKS = ("observation", "summary")
TEXT_FIELDS = ("type", "title", "subtitle", "narrative", "supersedes", "conflicts", "scope", *SUMMARY_FIELDS)
LIST_FIELDS = ("facts", "concepts", "files_read", "files_modified", "files_edited")
ITEMS = ("fact", "concept", "file", "item")  # interchangeable: a <file> inside <facts> is still an entry
CAPS = {"type": 100, "title": 200, "subtitle": 500, "fact": 1000, "narrative": 5000, "summary": 5000}
DERIVED_TITLE_CHARS = 100

# One pass finds candidate markup (any simple tag, attributes ignored; names we do not know stay text); CDATA is
# matched first so tags inside it stay text. An unterminated CDATA runs to the end of a cut-off
# reply instead of being rescanned: linear time.
_TOKEN = re.compile(r"<!\[CDATA\[(?P<cdata>.*?)(?:\]\]>|\Z)|<(?P<close>/?)(?P<name>[A-Za-z_]{1,20})"
                    r"(?:\s+[\w:.-]+\s*=\s*(?:\"[^\"<>]*\"|'[^'<>]*'))*\s*(?P<empty>/?)>", re.S)
_BAD_AMP = re.compile(r"&(?!(?:amp|lt|gt|quot|apos|#[0-9]{1,7}|#x[0-9a-fA-F]{1,6});)")
_CHARREF = re.compile(r"&#(x[0-9a-fA-F]+|[0-9]+);")
_INVALID_CHARS = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_CUT_TAG = re.compile(r"</?([A-Za-z_]{0,14})$")
_BULLET = re.compile(r"^(?:[-*•+]|\d{1,3}[.)])\s+")
_BLANK_LINES = re.compile(r"\n{3,}")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_REQUEST_ATTR = re.compile(r"""\brequest\s*=\s*["']#?([0-9]{1,9})["']""")
_OBS_REF = re.compile(r"\bobs:\s*([1-9][0-9]{0,17})\b|^\s*#?([1-9][0-9]{0,17})\s*$", re.IGNORECASE)

_CANON = {n: "item" if n in ITEMS else n for n in (*BLOCKS, *TEXT_FIELDS, *LIST_FIELDS, *ITEMS)}
# (innermost open element or None, tag, is closing) for every tag that is markup at that level.
_MARKUP = ({(None, b, False) for b in BLOCKS} | {(b, f, False) for b in BLOCKS for f in (*TEXT_FIELDS, *LIST_FIELDS)}
           | {(f, "item", False) for f in LIST_FIELDS} | {(n, n, True) for n in set(_CANON.values())})

# XMLParser, not lxml.html: the HTML parser knows <title> as a <head> element and moves it,
# and invents <html>/<body>/<p> around the rest. The input is already well-formed, so
# recovery is only a safety net; the flags keep entities, DTDs and the network out.
_PARSER = etree.XMLParser(recover=True, resolve_entities=False, no_network=True, huge_tree=False, load_dtd=False,
                          remove_comments=True, remove_pis=True)


@dataclass
class ParseResult:
    observations: list[Observation] = field(default_factory=list)
    summary: Summary | None = None  # the last complete one (a reply asked for one summary)
    problems: list[str] = field(default_factory=list)  # what was repaired, flagged or dropped
    # Every summary in order, with the request number its tag names (<summary request="N">) if any.
    summaries: list[tuple[int | None, Summary]] = field(default_factory=list)
    after: list[int] = field(default_factory=list)  # per observation: how many summaries came before it

    def usable(self) -> bool:
        return bool(self.observations) or self.summary is not None


def parse_reply(text: str) -> ParseResult:
    result = ParseResult()
    if not isinstance(text, str) or not text.strip():
        result.problems.append("empty reply: no <observation> or <summary> block found")
        return result
    # XML cannot hold NUL and most control characters, the model's text can (NUL is text
    # like any other): each stands in the tree as a private-use character, and is put back after.
    hidden = _INVALID_CHARS.search(text) is not None
    xml, complete = _to_xml(_INVALID_CHARS.sub(_hide, text) if hidden else text)
    try:
        root = etree.fromstring(xml.encode("utf-8"), _PARSER)
    except (etree.LxmlError, ValueError) as exc:  # not expected for our own output; never let it escape
        root = None
        result.problems.append(f"XML parser failed: {exc}")
    blocks = list(root) if root is not None else []
    if not blocks:
        result.problems.append("no <observation> or <summary> block found")
    summaries: list[tuple[Summary, bool]] = []
    seen = {"observation": 0, "summary": 0}
    for el in blocks:
        seen[el.tag] += 1
        label, whole = f"{el.tag} {seen[el.tag]}", complete[int(el.get("n"))]
        if not whole:
            result.problems.append(f"{label} was cut off (no closing tag); recovered what was there")
        if el.tag == "observation":
            obs = _observation(el, label, result.problems)
            if obs is not None:
                result.observations.append(obs)
                result.after.append(len(summaries))
        elif (summary := _summary(el, label, result.problems)) is not None:
            summaries.append((summary, whole))
            result.summaries.append((int(el.get("request")) if el.get("request") else None, summary))
    if summaries:
        finished = [s for s, whole in summaries if whole]
        result.summary = finished[-1] if finished else summaries[-1][0]
        if len(summaries) > 1:
            result.problems.append(f"{len(summaries)} <summary> blocks; kept the last {'complete ' if finished else ''}one")
    if hidden:
        revealed = [(_reveal(o), after) for o, after in zip(result.observations, result.after, strict=True)]
        # Python counts \x1c-\x1f, \x0b and \x0c as whitespace: a title of those alone is none.
        kept = [(o, after) for o, after in revealed if o.title.strip()]
        result.observations, result.after = [o for o, _ in kept], [after for _, after in kept]
        if len(kept) < len(revealed):
            result.problems.append(f"{len(revealed) - len(kept)} <observation> dropped: a title of control"
                                   " characters only")
        result.summary = _reveal(result.summary) if result.summary is not None else None
        result.summaries = [(number, _reveal(summary)) for number, summary in result.summaries]
    return result


# Characters XML cannot hold stand in the tree as private-use characters (plane 16's last 256; a
# reply that holds those itself, with a control character too, gets controls back for them).
_HIDDEN_BASE = 0x10FF00
_REVEAL = {_HIDDEN_BASE + cp: chr(cp) for cp in range(0x20)} | {_HIDDEN_BASE + 0x20: "\ufffe", _HIDDEN_BASE + 0x21: "\uffff"}


def _hide(m: re.Match[str]) -> str:
    cp = ord(m.group())
    if cp < 0x20:
        return chr(_HIDDEN_BASE + cp)
    if cp >= 0xFFFE:
        return chr(_HIDDEN_BASE + 0x20 + cp - 0xFFFE)
    return "\ufffd"  # a lone surrogate: what text/storable.py makes of one


def _reveal(item: _Parsed) -> _Parsed:
    """`item` with the characters `_hide` stood in for put back in every text."""
    def back(value: Any) -> Any:
        if isinstance(value, str):
            return value.translate(_REVEAL)
        return [back(v) for v in value] if isinstance(value, list) else value

    return replace(item, **{f.name: back(getattr(item, f.name)) for f in fields(item)})


def _to_xml(text: str) -> tuple[str, list[bool]]:
    """Rewrite the reply as well-formed XML: <root> holding only blocks, with escaped text; and,
    per block in order, whether it was closed explicitly.

    A text element (a field or a list entry) that is closed explicitly later in its block is
    "sealed": inside it only its own closing tag is markup, so a narrative that mentions
    `<summary>` or `<title>` keeps them as text. An element never closed is ended by the next
    tag that makes sense at an outer level (a forgotten </title>, a reply cut off).
    """
    return _Rewrite(text).run()


class _Rewrite:
    """One pass of `_to_xml` over the candidate tags of a reply."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.matches = list(_TOKEN.finditer(text))
        self.names = [_CANON.get(m["name"].lower(), "") if m["name"] else "" for m in self.matches]
        self.closers: dict[str, list[int]] = {}  # name -> indexes of the tokens closing it
        for i, m in enumerate(self.matches):
            if m["close"] and self.names[i]:
                self.closers.setdefault(self.names[i], []).append(i)
        self.out: list[str] = ["<root>"]
        self.complete: list[bool] = []  # per block, in order: was it closed explicitly
        self.stack: list[str] = []
        self.opened: list[int] = []  # index of the token that opened each stack entry
        self.seals: dict[int, bool] = {}

    def run(self) -> tuple[str, list[bool]]:
        text, stack, out = self.text, self.stack, self.out
        pos = 0
        for i, m in enumerate(self.matches):
            if stack and pos < m.start():
                out.append(_escape(text[pos:m.start()]))
            pos = m.end()
            if m["cdata"] is not None:
                if stack:
                    out.append(_escape(m["cdata"]))
                continue
            name, closing = self.names[i], bool(m["close"])
            if not name or not self.markup(name, closing, i):
                if stack:
                    out.append(_escape(m.group()))
            elif m["empty"] and not closing:
                self.markup(name, True, i)
        if stack:
            tail = text[pos:]
            partial = _CUT_TAG.search(tail)
            if partial and any(n.startswith(partial[1].lower()) for n in _CANON):  # a tag cut in half by the end of the reply
                tail = tail[:partial.start()]
            out.append(_escape(tail))
        while stack:
            self.close()
        out.append("</root>")
        return "".join(out), self.complete

    def next_close(self, name: str, i: int) -> int:
        at = self.closers.get(name, [])
        j = bisect.bisect_right(at, i)
        return at[j] if j < len(at) else len(self.matches)

    def sealed(self) -> bool:
        # Worked out only when a tag would end the element early: the common path never pays.
        stack = self.stack
        if stack[-1] in BLOCKS:
            return False
        at = self.opened[-1]
        if at not in self.seals:
            bound = min([self.next_close(outer, at) for outer in stack[:-1] if outer not in TEXT_FIELDS])
            self.seals[at] = self.next_close(stack[-1], at) < bound
        return self.seals[at]

    def markup(self, name: str, closing: bool, i: int) -> bool:
        """Apply the tag if it is markup here, ending unsealed elements it belongs outside of."""
        stack = self.stack
        while True:
            if ((stack[-1] if stack else None), name, closing) in _MARKUP:
                if not closing:
                    self.out.append(self.opening(name, i))
                    self.complete.extend([False] if name in BLOCKS else [])
                    stack.append(name)
                    self.opened.append(i)
                    return True
                if name in BLOCKS:
                    self.complete[-1] = True
                self.close()
                return True
            if not stack or not any([(outer, name, closing) in _MARKUP for outer in (None, *stack[:-1])]) or self.sealed():
                return False
            self.close()  # never closed explicitly: ended by markup that belongs further out

    def opening(self, name: str, i: int) -> str:
        """The tag that opens `name`: a block is numbered, and a summary keeps the request it names."""
        if name not in BLOCKS:
            return f"<{name}>"
        named = _REQUEST_ATTR.search(self.matches[i].group()) if name == "summary" else None
        return f'<{name} n="{len(self.complete)}"' + (f' request="{int(named[1])}"' if named else "") + ">"

    def close(self) -> None:
        self.out.append(f"</{self.stack.pop()}>")
        self.opened.pop()


def _escape(text: str) -> str:
    text = _BAD_AMP.sub("&amp;", text).replace("<", "&lt;").replace(">", "&gt;")
    return _CHARREF.sub(_charref, text) if "&#" in text else text


def _charref(m: re.Match[str]) -> str:
    digits = m.group(1)
    cp = int(digits[1:], 16) if digits[0] == "x" else int(digits)
    ok = cp in (9, 10, 13) or 0x20 <= cp <= 0xD7FF or 0xE000 <= cp <= 0xFFFD or 0x10000 <= cp <= 0x10FFFF
    return m.group(0) if ok else "&amp;" + m.group(0)[1:]  # an invalid reference is kept as written


def _observation(el: etree._Element, label: str, problems: list[str]) -> Observation | None:
    kids = _children(el)
    raw_type = _cap(_line(_field(kids, "type")), "type", label, problems)
    kind, flagged = _map_type(raw_type)
    if flagged:
        problems.append(f"{label}: {flagged}")
    narrative = _cap(_para(_field(kids, "narrative")), "narrative", label, problems)
    loose = _para("".join([el.text or "", *(c.tail or "" for c in el)]))
    if not narrative and loose:
        narrative = _cap(loose, "narrative", label, problems)
        problems.append(f"{label}: text outside any field used as the narrative")
    facts = [_cap(f, "fact", label, problems) for f in _list(kids, ("facts",), split_commas=False)]
    subtitle = _cap(_line(_field(kids, "subtitle")), "subtitle", label, problems)
    title = _cap(_line(_field(kids, "title")), "title", label, problems)
    if not title:
        if not narrative and not facts:
            problems.append(f"{label} dropped: no title, narrative or facts")
            return None
        source = next(s for s in (subtitle, narrative, facts[0] if facts else "") if s)
        title = clip(_SENTENCE_END.split(source.splitlines()[0], maxsplit=1)[0], DERIVED_TITLE_CHARS)
        problems.append(f"{label}: no title; derived one from its content")
    return Observation(type=kind, title=title, subtitle=subtitle, narrative=narrative, facts=facts,
                       concepts=_list(kids, ("concepts",), split_commas=True),
                       files_read=_list(kids, ("files_read",), split_commas=True),
                       files_modified=_list(kids, ("files_modified", "files_edited"), split_commas=True),
                       raw_type=raw_type if flagged else None,
                       supersedes=[i for c in kids.get("supersedes", ()) for i in refs_in("".join(c.itertext()))],
                       conflicts=[i for c in kids.get("conflicts", ()) for i in refs_in("".join(c.itertext()))],
                       scope=_scope(_line(_field(kids, "scope"))))


def _scope(text: str) -> str:
    """A decision's scope as the model wrote it: a path or component, '' for the whole project."""
    scope = norm_scope(text)[:200]
    return "" if scope in ("", "project", "whole project", "the whole project", "all", "global", "none", "-") else scope


def _summary(el: etree._Element, label: str, problems: list[str]) -> Summary | None:
    kids = _children(el)
    values = {name: _cap(_para(_field(kids, name)), "summary", label, problems) for name in SUMMARY_FIELDS}
    summary = Summary(**values, files_read=_list(kids, ("files_read",), split_commas=True),
                      files_edited=_list(kids, ("files_edited", "files_modified"), split_commas=True))
    if summary.is_empty():
        problems.append(f"{label} dropped: every field is empty")
        return None
    return summary


def _map_type(raw: str) -> tuple[str, str]:
    """The known type for what the model wrote, and a note when it was not one verbatim."""
    key = re.sub(r"[^a-z]", "", raw.lower())
    if not raw:
        return "change", "no <type>; stored as 'change'"
    kind = known_type(raw)
    if kind == key:
        return kind, ""
    if kind:
        return kind, f"type {raw!r} mapped to {kind!r}"
    return "change", f"unknown type {raw!r} stored as 'change'"


def refs_in(text: str) -> list[int]:
    """The observation ids a `<supersedes>` names ("obs:12", "12", "obs:12, obs:15")."""
    return list(dict.fromkeys(int(m.group(1) or m.group(2)) for m in _OBS_REF.finditer(text or "")))


def _children(el: etree._Element) -> dict[str, list[etree._Element]]:
    kids: dict[str, list[etree._Element]] = {}
    for child in el:
        kids.setdefault(child.tag, []).append(child)
    return kids


def _field(kids: dict[str, list[etree._Element]], name: str) -> str:
    """The first non-empty occurrence: a repeated field is more likely a slip than two values."""
    return next((t for c in kids.get(name, ()) if (t := "".join(c.itertext())).strip()), "")


def _list(kids: dict[str, list[etree._Element]], names: tuple[str, ...], *, split_commas: bool) -> list[str]:
    values: list[str] = []
    for container in (c for name in names for c in kids.get(name, ())):
        values += ["".join(item.itertext()) for item in container]
        loose = "\n".join([container.text or "", *(item.tail or "" for item in container)])
        for line in loose.splitlines():  # the model wrote a plain list instead of child elements
            line = _BULLET.sub("", line.strip())
            values += line.split(",") if split_commas else [line]
    cleaned = (_line(v) for v in values)
    return list(dict.fromkeys(v for v in cleaned if v))


def _line(text: str) -> str:
    return " ".join(text.split())


def _para(text: str) -> str:
    """Lines stripped and squeezed, runs of blank lines kept as one paragraph break."""
    if "\n" not in text:
        return _line(text)
    lines = "\n".join([_line(line) for line in text.split("\n")])
    return _BLANK_LINES.sub("\n\n", lines).strip()


def _cap(text: str, what: str, label: str, problems: list[str]) -> str:
    limit = CAPS[what]
    if len(text) <= limit:
        return text
    problems.append(f"{label}: {what} of {len(text)} characters cut to {limit}")
    return cut(text, limit, one_line=False)
