"""The extractive answer: from each memory found, the sentences that bear most on the question,
each with its ref and date, best memory first, within a size. No model: this is the answer
without a login, and the model's evidence when there is one.

Whole sentences or none: a fact cut in half answers nothing, and a memory's title and facts are
written to be read alone (the observer's prompt asks for that). The search's ranking decides
which memories speak first (its fusion of words and meaning beats counting shared words); the
shared words decide which of a memory's sentences speak for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from claude_mem.store.reads import SUMMARY_FIELDS, json_list, ref
from claude_mem.text.clock import local_day
from claude_mem.text.shorten import clip
from claude_mem.text.terms import query_terms, stem, words
from claude_mem.worker.heuristic.compose import NOTE as HEURISTIC_NOTE

SENTENCE_CHARS = 280  # a longer sentence is clipped: it rarely is one (a pasted log, a listing)
PER_MEMORY = 2  # sentences one memory may give; a second only when it shares words the first lacks
MIN_SENTENCE_CHARS = 12  # "Done." says nothing
# Where one sentence ends: ., ! or ? then space and a capital, digit or quote (not "e.g. foo").
_BOUNDARY = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(`\[])")
# Summary fields in the order an answer wants them: what was learned and done before what was asked.
_SUMMARY_ORDER = ("learned", "completed", "investigated", "notes", "next_steps", "request")
assert set(_SUMMARY_ORDER) == set(SUMMARY_FIELDS)


@dataclass
class Evidence:
    """One memory's say in an answer: its ref, its day, and its sentences best first."""

    ref: str
    kind: str
    day: str
    sentences: list[str]
    rank: int  # its place among the hits
    texts: list[str]  # everything it could say (what the model is given)


def sentences(text: str | None) -> list[str]:
    """The sentences of `text`, each on one line (a newline ends one too)."""
    out = []
    for line in (text or "").splitlines():
        out += [s.strip() for s in _BOUNDARY.split(" ".join(line.split())) if s.strip()]
    return out


def candidate_texts(kind: str, row: dict[str, Any]) -> list[str]:
    """What a memory could say, in the order it says it when nothing else decides: an
    observation's title first (it names the whole), then its facts, then its narrative (a stated
    decision: its rule as stated; the heuristic synthesizer's note on how it wrote a record is
    no sentence of the record)."""
    if kind == "observation":
        if row.get("type") == "decision" and "stated" in json_list(row.get("concepts")) and str(row.get("title") or "").strip():
            return [str(row["title"]), *json_list(row.get("facts"))]
        title = " — ".join(p for p in (row.get("title"), row.get("subtitle")) if p and str(p).strip())
        return [title, *json_list(row.get("facts")), *(s for s in sentences(row.get("narrative")) if s != HEURISTIC_NOTE)]
    if kind == "summary":
        return [s for name in _SUMMARY_ORDER for s in sentences(row.get(name))]
    return [*sentences(row.get("prompt_text")), *sentences(row.get("reply_text"))]


def _stems(text: str) -> set[str]:
    return {stem(w) for w in words(text)}


def best_sentences(question_stems: set[str], texts: list[str], limit: int = PER_MEMORY) -> list[str]:
    """The memory's sentences that share most words with the question, in order of how many; a
    tie goes to the earlier (the title before a fact, a fact before the narrative). The second
    is the one that brings most question words the first has not, else the next in order: what
    the memory says after its best sentence (compose shows it only when there is room)."""
    scored = []
    for position, text in enumerate(texts):
        text = " ".join(str(text).split())
        if len(text) < MIN_SENTENCE_CHARS:
            continue
        shared = _stems(text) & question_stems
        scored.append((-len(shared), position, clip(text, SENTENCE_CHARS), shared))
    if not scored:
        return []
    scored.sort(key=lambda s: (s[0], s[1]))
    chosen = [scored[0]]
    covered = set(scored[0][3])
    rest = scored[1:]
    while rest and len(chosen) < limit:
        item = min(rest, key=lambda s: (-len(s[3] - covered), s[1]))
        rest.remove(item)
        chosen.append(item)
        covered |= item[3]
    return [text for _, _, text, _ in chosen]


def evidence(question: str, found: list[tuple[str, int, dict[str, Any]]]) -> list[Evidence]:
    """Each memory's say, in the order found: (kind, id, row) as search ranked them."""
    question_stems = {stem(t) for t in query_terms(question)}
    out = []
    for rank, (kind, row_id, row) in enumerate(found):
        texts = candidate_texts(kind, row)
        said = best_sentences(question_stems, texts)
        if said:
            out.append(Evidence(ref(kind, row_id), kind, local_day(int(row.get("created_at_epoch") or 0)), said, rank,
                                [t for t in texts if t.strip()]))
    return out


def line(item: Evidence, said: list[str]) -> str:
    text = "; ".join(s.rstrip(".;") for s in said)
    return f"- {text}{'' if text.endswith(('!', '?')) else '.'} [{item.ref}, {item.day}]"


def compose(items: list[Evidence], limit: int) -> tuple[str, list[str]]:
    """The answer: a line per memory, best first, as many memories as fit in `limit` characters
    with their best sentence each; then, while there is room, the best memories' second
    sentences. The same sentence twice (a fact copied into two memories) is said once. Returns
    (text, refs shown)."""
    seen: set[str] = set()
    shown: list[tuple[Evidence, list[str]]] = []
    size = 0
    for item in items:
        said = [s for s in item.sentences if s.lower() not in seen]
        if said and size + len(line(item, said[:1])) + 1 <= limit:
            shown.append((item, said))
            size += len(line(item, said[:1])) + 1
            seen.update(s.lower() for s in said[:1])
    counts = [1] * len(shown)
    for n, (item, said) in enumerate(shown):
        if len(said) > 1 and said[1].lower() not in seen:
            grown = len(line(item, said[:2])) - len(line(item, said[:1]))
            if size + grown <= limit:
                counts[n] = 2
                size += grown
                seen.add(said[1].lower())
    lines = [line(item, said[:count]) for (item, said), count in zip(shown, counts, strict=True)]
    return "\n".join(lines), [item.ref for item, _ in shown]
