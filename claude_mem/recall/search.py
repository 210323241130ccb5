"""One hybrid search over memory: the memory service and the front doors (service/search.py) run it.

    search(conn, query, index=..., project=, type_=, session_id=, since_ms=, until_ms=, file=,
           kinds=, limit=, mode=SearchMode.HYBRID, exclude=) -> SearchResult(hits, mode, note)

Keyword search (SQLite FTS5, BM25) and semantic search (the Chroma index) each return their best
candidates with every filter applied inside the search, not after it, then the two are fused
(a weighted blend of cosine and BM25, boosted by named dates and by session context); a prompt
hit stands for its turn; a superseded memory ranks right below what superseded it (recall/superseded.py);
rival decisions come together or not at all (recall/rivals.py).
Without an index, or when it fails, the keyword side answers alone and the result says so.
Teammates' documents on a shared Chroma server come back from the semantic side, as hits with an
`origin` (recall/teammates.py). Importing this module is cheap: chromadb and the model load only
when an Index is used.

Why the weights and shortcuts are what they are (every experiment and its numbers):
docs/search-tuning.md.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from claude_mem.kinds import SearchMode
from claude_mem.recall import teammates, tuning
from claude_mem.recall.candidates import Candidate, Filters, load_rows
from claude_mem.recall.dates import date_windows
from claude_mem.recall.fusion import fuse, relevant
from claude_mem.recall.hits import Hit, hit
from claude_mem.recall.keyword import fts_search
from claude_mem.recall.rivals import rank_rivals
from claude_mem.recall.semantic import add_candidates, start_nearest
from claude_mem.recall.superseded import rank_superseded
from claude_mem.recall.turns import add_neighbours, forward
from claude_mem.store import recall_rows
from claude_mem.store.reads import KINDS, session_hosts
from claude_mem.text.terms import path_phrases, query_terms

if TYPE_CHECKING:
    from claude_mem.index.semantic_index import Index


@dataclass
class SearchResult:
    hits: list[Hit]
    mode: SearchMode          # what was used: keyword when the semantic side could not answer
    note: str | None          # e.g. "semantic index unavailable (...): keyword results only"


def search(conn: sqlite3.Connection, query: str, *, index: Index | None = None, project: str | None = None,
           type_: str | None = None, session_id: str | None = None, since_ms: int | None = None,
           until_ms: int | None = None, file: str | None = None,
           kinds: tuple[str, ...] = KINDS, limit: int = 20,
           mode: str = SearchMode.HYBRID, exclude: Iterable[tuple[str, int]] = ()) -> SearchResult:
    """Search memory. `mode` (a SearchMode or its name) asks for hybrid, keyword (words only) or
    semantic (meaning only); the result's `mode` says what was actually used, and `note` why it differs.
    `exclude` names rows ((kind, id)) that are neither hits nor evidence for their turn (the MCP
    server's prompt being answered)."""
    mode = SearchMode.named(mode)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown kinds {unknown}: expected some of {', '.join(KINDS)}")
    kinds = tuple(dict.fromkeys(kinds))
    limit = max(0, min(int(limit), 500))
    text = (query or "").strip()
    terms, phrases = query_terms(text), path_phrases(text)
    if not limit or not kinds or not text:
        return SearchResult([], mode if index is not None else SearchMode.KEYWORD, "empty query" if not text else None)
    filters = Filters(project or None, type_ or None, session_id or None, since_ms, until_ms, file or None)
    excluded = {(str(kind), int(row_id)) for kind, row_id in exclude}
    pool = max(tuning.POOL, limit * 3)

    note: str | None = None
    used: SearchMode = mode
    candidates: dict[tuple[str, int], Candidate] = {}
    want = pool * 2  # nearest documents: a summary has several (fewer, 1.5 x: 4% of top-10s change, p95 no better)
    # The nearest documents are on their way while the keyword side runs.
    nearest = start_nearest(index, text, kinds, filters, want) if mode is not SearchMode.KEYWORD and index is not None else None
    if mode is not SearchMode.SEMANTIC or index is None:
        alone = mode is SearchMode.KEYWORD or index is None
        for key, score in fts_search(conn, terms, kinds, filters, pool, phrases, alone=alone).items():
            if key not in excluded:
                candidates[key] = Candidate(*key, bm25=score)
        load_rows(conn, candidates)
        add_neighbours(conn, candidates, filters, excluded)
    if mode is not SearchMode.KEYWORD:
        if nearest is None or index is None:
            used, note = SearchMode.KEYWORD, "semantic index not configured: keyword results only"
        else:
            from claude_mem.index.chroma import IndexUnavailable

            try:
                add_candidates(conn, index, nearest, terms, kinds, filters, want, candidates,
                               fill_missing=mode is SearchMode.HYBRID)
            except IndexUnavailable as exc:
                used, note = SearchMode.KEYWORD, f"{exc}: keyword results only"
                # Keywords alone now: searched again when the first pass counted on the other side.
                candidates = {key: Candidate(*key, bm25=score)
                              for key, score in fts_search(conn, terms, kinds, filters, pool, phrases).items() if key not in excluded}
                load_rows(conn, candidates)
                add_neighbours(conn, candidates, filters, excluded)
    for key in excluded:
        candidates.pop(key, None)
    if not candidates:
        return SearchResult([], used, note)

    load_rows(conn, candidates)
    _drop_the_query_itself(conn, candidates, text)
    windows = date_windows(text)
    scores = fuse(list(candidates.values()), used, windows)
    ranked = sorted(candidates.values(), key=lambda c: (-scores[(c.kind, c.id)], -c.row.get("created_at_epoch", 0), c.id))
    floor = tuning.MIN_COSINE_E5 if index is not None and index.embedder == "multilingual" else tuning.MIN_COSINE
    kept = [c for c in ranked if c.row and relevant(c, windows, floor)]
    placed, superseded = rank_superseded(conn, forward(conn, kept, scores, kinds, filters, limit), filters, limit + 2)
    placed, rivals = rank_rivals(conn, placed, filters, limit)
    hits = [hit(c, score, terms) for c, score in placed]
    hosts = session_hosts(conn, [h.session_id for h in hits if h.origin is None])
    for h in hits:
        if h.kind == "observation" and h.origin is None and h.id in superseded:
            h.superseded_by = [f"obs:{r.new_id}" for r in superseded[h.id]]
        if h.origin is None:
            h.host = hosts.get(h.session_id)
            h.conflicts_with = [f"obs:{o}" for o in rivals.get(h.id, [])] if h.kind == "observation" else []
    if not hits and note is None:
        note = "no memory shares a word with the query or is close to it in meaning"
    origins = [h.origin for h in hits if h.origin]
    if origins:
        note = "; ".join(filter(None, [note, teammates.note(origins)]))
    return SearchResult(hits, used, note)


def _drop_the_query_itself(conn: sqlite3.Connection, candidates: dict[tuple[str, int], Candidate], query: str) -> None:
    """A prompt that is the query itself, word for word, in a session that holds nothing else yet:
    the search is that prompt's own first look at memory (a task searched right after it was
    typed), and finding it tells nothing and takes a place. Left out; an older prompt worded the
    same, in a session that went on, is still found."""
    said = " ".join(query.lower().split())
    for key in [k for k, c in candidates.items() if c.kind == "prompt"]:
        row = candidates[key].row
        if " ".join(str(row.get("prompt_text") or "").lower().split()) == said and _alone(conn, str(row.get("session_id") or "")):
            del candidates[key]


def _alone(conn: sqlite3.Connection, session_id: str) -> bool:
    return recall_rows.holds_one_prompt_alone(conn, session_id)
