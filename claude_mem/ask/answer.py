"""Ask memory a question (`claude-mem ask`, the MCP tool `ask`): the memories that bear on it,
found by the one hybrid search (superseded memories left out, as the pushes leave them;
stated decisions first, where they apply, rivals together: ask/decisions.py), and an answer of a
few sentences with their refs, within `ask_chars`.

The observer's model writes it when one is usable (ask/model.py: one request, not a worker's
conversation; its tokens count in the day's `observer_daily_tokens` and in `stats`); otherwise,
or when that request fails, the answer is extractive (ask/extract.py): the sentences of the
memories that share most with the question, each with its ref and date. "I don't know" is an
answer too, when no memory clears the bar, and costs no model call.

The question is redacted like every hook payload before it is searched for or sent anywhere.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from claude_mem.ask import decisions, extract
from claude_mem.kinds import SearchMode
from claude_mem.service.search import search_memory
from claude_mem.settings import Config
from claude_mem.store.reads import KIND
from claude_mem.text.redact import redact
from claude_mem.text.terms import query_terms, stem, words

if TYPE_CHECKING:
    from claude_mem.index.semantic_index import Index

HITS = 12  # memories read for an answer: more than ask_chars can show, so a memory without a good sentence has followers
QUESTION_CHARS = 1000  # the embedder reads 256 tokens; a pasted log adds nothing past this
DONT_KNOW = "I don't know: no memory bears on this question."
# The best memory's fused score (hybrid search) must reach this for an answer: LoCoMo dev questions
# reach it 97% of the time, developer prompts asked of those conversations 7% (bench/ask.py; the
# prompt push's own bar, tuned the same way, is 0.55).
GATE = 0.5


@dataclass
class Answer:
    """What `ask` returns: the answer, the refs it rests on, who wrote it, and the model's tokens
    (input + output, 0 without the model)."""

    answer: str
    refs: list[str]
    source: str  # "model" | "extractive"
    tokens: int = 0
    note: str | None = None  # why the answer is extractive or keyword-only, when it is worth saying
    evidence: list[str] = field(default_factory=list)  # the refs that were read (what the model was given)

    def as_json(self) -> dict[str, Any]:
        return {"answer": self.answer, "refs": self.refs, "source": self.source, "tokens": self.tokens,
                **({"note": self.note} if self.note else {})}


# The model's side, given by the caller (ask/model.py's `answer_with_model` in production):
# (config, conn, question, evidence) -> Answer, or None when no model is usable.
ModelAnswer = Callable[[Config, sqlite3.Connection, str, list[extract.Evidence]], "Answer | None"]


def ask(config: Config, conn: sqlite3.Connection, question: str, *, project: str | None = None,
        index: Index | None = None, in_process: bool = False, exclude: Iterable[tuple[str, int]] = (),
        model: ModelAnswer | None = None) -> Answer:
    """Answer `question` from the memory of `project` (None: every project). `index` and
    `in_process` as for service.search.search_memory; `exclude` names rows that are not evidence
    (the prompt being answered); `model` writes the answer when it can, else it is extractive."""
    question = " ".join(redact(question or "").split())[:QUESTION_CHARS]
    if not question:
        return Answer(DONT_KNOW, [], "extractive")
    result = search_memory(config, conn, question, project=project, limit=HITS, index=index, in_process=in_process,
                           exclude=list(exclude))
    hits = [h for h in result.hits if not h.superseded_by and h.origin is None]
    # What the write guard withheld is no evidence (issue 47): its text is never given to agents.
    withheld = sum(bool(h.withheld) for h in hits)
    hits = [h for h in hits if not h.withheld]
    if withheld:
        result.note = "; ".join(filter(None, [result.note, f"{withheld} withheld memor{'y' if withheld == 1 else 'ies'}"
                                              " left out (the write guard found text addressed to AI assistants)"]))
    if result.mode is not SearchMode.KEYWORD and (not hits or hits[0].score < GATE):
        hits = []
    found = rows_of(conn, [(h.kind, h.id) for h in hits])
    found = bearing_on(question, found) if result.mode is SearchMode.KEYWORD else found
    rivals = {h.id: [int(r.split(":", 1)[1]) for r in h.conflicts_with] for h in hits if h.conflicts_with}
    found = decisions.arrange(conn, question, found, rivals)  # decisions that apply first; rivals together or not at all
    items = decisions.join_rivals(extract.evidence(question, found), found, rivals)
    if not items:
        return Answer(DONT_KNOW, [], "extractive", note=result.note)
    written = model(config, conn, question, items) if model is not None else None
    if written is not None and written.source == "model":
        written.note = written.note or result.note
        return written
    # A failed request may still have cost tokens: they are the answer's too.
    note = "; ".join(filter(None, [result.note, written.note if written else None])) or None
    text, refs = extract.compose(items, config.ask_chars)
    refs = [r for joined in refs for r in joined.split(", ")]  # a conflict's item names its decisions together
    return Answer(text, refs, "extractive", written.tokens if written else 0, note, [i.ref for i in items])


def rows_of(conn: sqlite3.Connection, keys: list[tuple[str, int]]) -> list[tuple[str, int, dict[str, Any]]]:
    """The hits' rows, in the hits' order (a row forgotten meanwhile is left out)."""
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for kind in KIND:
        ids = [i for k, i in keys if k == kind]
        if ids:
            sql = KIND[kind].row_sql().format(marks=",".join("?" * len(ids)))
            rows.update(((kind, int(r["id"])), dict(r)) for r in conn.execute(sql, ids))
    return [(kind, row_id, rows[(kind, row_id)]) for kind, row_id in keys if (kind, row_id) in rows]


def bearing_on(question: str, found: list[tuple[str, int, dict[str, Any]]]) -> list[tuple[str, int, dict[str, Any]]]:
    """Keywords alone (no service, or the semantic index off) match any one shared word, and BM25
    says nothing about relevance: the memories found must hold two of the question's words between
    them (or its only one), and each memory kept one of them."""
    wanted = {stem(t) for t in query_terms(question)}
    held = [{stem(w) for text in extract.candidate_texts(kind, row) for w in words(text)} & wanted for kind, _, row in found]
    if len(set().union(*held)) < min(2, len(wanted)):
        return []
    return [item for item, shared in zip(found, held, strict=True) if shared]
