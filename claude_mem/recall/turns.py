"""A turn as the unit of recall: a prompt's neighbours join the candidates, and a
prompt hit stands for its turn, its observations taking its place."""

from __future__ import annotations

import sqlite3
from typing import Any

from claude_mem.recall import tuning
from claude_mem.recall.candidates import Candidate, Filters, load_rows, sql_filters
from claude_mem.store import recall_rows


def add_neighbours(conn: sqlite3.Connection, candidates: dict[tuple[str, int], Candidate], f: Filters,
                   excluded: set[tuple[str, int]]) -> None:
    """The prompts just before and after the NEIGHBOURS_OF best keyword-matched prompts become
    candidates too, and learn the best BM25 of those neighbours (NEIGHBOUR_SHARE of it counts in
    fusion.py); fewer extra rows keep the query cheap, and more did not find more on LoCoMo.

    In a conversation the answer ("I went hiking") is often the turn after the one worded like
    the question ("what did you do last weekend?"). Neighbours outside the keyword pool count as
    no match: their BM25 is below the pool's anyway."""
    best = sorted((c for c in candidates.values() if c.kind == "prompt" and c.bm25 > 0), key=lambda c: -c.bm25)
    matched = {c.id: c.bm25 for c in best[:tuning.NEIGHBOURS_OF]}
    where = sql_filters("prompt", f, "t")
    if not matched or where is None:
        return
    for matched_id, neighbour_id in recall_rows.prompt_neighbours(conn, list(matched), where):
        if ("prompt", int(neighbour_id)) in excluded:
            continue
        neighbour = candidates.setdefault(("prompt", int(neighbour_id)), Candidate("prompt", int(neighbour_id)))
        neighbour.neighbour_bm25 = max(neighbour.neighbour_bm25, matched[matched_id])
    load_rows(conn, candidates)


def forward(conn: sqlite3.Connection, ranked: list[Candidate], scores: dict[tuple[str, int], float],
            kinds: tuple[str, ...], f: Filters, limit: int) -> list[tuple[Candidate, float]]:
    """The first `limit` hits, a prompt standing for its turn: the turn's observations take its
    place (those that matched themselves first, then up to TURN_SPREAD others, in order), and
    the prompt is listed itself only when its turn has none passing the filters.

    A turn is one unit of recall: what was said finds what was noted of it, and an agent gets
    observation ids it can open (bench/README.md has what it measured)."""
    out: list[tuple[Candidate, float]] = []
    seen: set[tuple[str, int]] = set()
    by_key = {(c.kind, c.id): c for c in ranked}
    where = sql_filters("observation", f, "t") if "observation" in kinds else None
    for c in ranked:
        if len(out) >= limit:
            break
        key = (c.kind, c.id)
        if key in seen:
            continue
        seen.add(key)
        brought = _turn_observations(conn, c, where, by_key, scores) if c.kind == "prompt" and where is not None else []
        if not brought:
            out.append((c, scores[key]))
            continue
        for obs in brought:
            if len(out) < limit and (obs.kind, obs.id) not in seen:
                seen.add((obs.kind, obs.id))
                out.append((obs, max(scores[key], scores.get((obs.kind, obs.id), float("-inf")))))
    return out


def _turn_observations(conn: sqlite3.Connection, prompt: Candidate, where: tuple[list[str], list[Any]],
                       by_key: dict[tuple[str, int], Candidate], scores: dict[tuple[str, int], float]) -> list[Candidate]:
    """The observations of a prompt's turn that pass the filters: candidates best first, then
    up to TURN_SPREAD others in the order they were stored (rows loaded)."""
    ids = recall_rows.turn_observations(conn, prompt.row["session_id"], prompt.row["prompt_number"], where)
    known = sorted((by_key[("observation", i)] for i in ids if ("observation", i) in by_key),
                   key=lambda o: -scores[(o.kind, o.id)])
    rest = {("observation", i): Candidate("observation", i) for i in ids if ("observation", i) not in by_key}
    rest = dict(list(rest.items())[:tuning.TURN_SPREAD])
    load_rows(conn, rest)
    return known + [o for o in rest.values() if o.row]
