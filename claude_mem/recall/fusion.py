"""Fusion: one score per candidate from its cosine and its BM25 (a weighted blend, chosen over
rank fusion), boosted by dates the query names and by strong matches in the same session."""

from __future__ import annotations

from claude_mem.kinds import SearchMode
from claude_mem.recall import tuning
from claude_mem.recall.candidates import Candidate


def fuse(cands: list[Candidate], mode: SearchMode, windows: list[tuple[int, int]]) -> dict[tuple[str, int], float]:
    """Each candidate's score in `mode`: the blend of cosine and BM25 (over the best BM25), plus the
    date and session boosts."""
    keyword = [c.bm25 + tuning.NEIGHBOUR_SHARE * c.neighbour_bm25 for c in cands]
    top_bm25 = max(keyword, default=0.0)
    base: list[float] = []
    for c, words in zip(cands, keyword, strict=True):
        # BM25 over its best: 0 for rows with no query word, 1 for the best keyword match.
        bm = words / top_bm25 if top_bm25 > 0 else 0.0
        cosine = c.cosine if c.cosine is not None else 0.0
        if mode is SearchMode.HYBRID:
            w_bm25 = tuning.W_BM25_SAID if c.kind == "prompt" else tuning.W_BM25
            score = (1 - w_bm25) * cosine + w_bm25 * bm
        elif mode is SearchMode.SEMANTIC:
            score = cosine
        else:
            score = bm
        if windows and in_windows(c, windows):
            score += tuning.DATE_BOOST
        base.append(score)
    # Session context: a memory whose session holds other strong matches is more likely the
    # one meant (the same episode, seen from several facts: docs/search-tuning.md).
    sessions = [str(c.row.get("session_id") or "") for c in cands]
    best_in_session: dict[str, float] = {}
    for sid, score in zip(sessions, base, strict=True):
        if score > best_in_session.get(sid, float("-inf")):
            best_in_session[sid] = score
    return {(c.kind, c.id): score + tuning.SESSION_BOOST * best_in_session[sid]
            for c, sid, score in zip(cands, sessions, base, strict=True)}


def relevant(c: Candidate, windows: list[tuple[int, int]], floor: float | None = None) -> bool:
    """False for a memory that only came back because the nearest neighbours were asked for: a
    nearest-neighbour query always answers, however far the nearest are (the relevance floor in
    docs/search-tuning.md). A keyword match, or a memory from a day the query names, is kept."""
    if c.bm25 > 0 or c.raw_cosine is None or c.raw_cosine >= (tuning.MIN_COSINE if floor is None else floor):
        return True
    return in_windows(c, windows)


def in_windows(c: Candidate, windows: list[tuple[int, int]]) -> bool:
    created = int(c.row.get("created_at_epoch") or 0)
    return any(start <= created < end for start, end in windows)
