"""Search's reading of conflict marks (store/marks.py, issue 51): a decision found whose current
rivals are not among the hits brings them in, right after it and with its score; rivals already
found move up beside it. The result is cut to its limit without splitting a group: a group that
does not fit is left out whole, and the hits after it move up. So a conflict is shown with both
sides, or not at all; each side's hit names the others (`Hit.conflicts_with`) and every view says so.
"""

from __future__ import annotations

import sqlite3

from claude_mem.recall.candidates import Candidate, Filters
from claude_mem.recall.superseded import local, passing
from claude_mem.store import marks


def rank_rivals(conn: sqlite3.Connection, ranked: list[tuple[Candidate, float]], f: Filters,
                limit: int) -> tuple[list[tuple[Candidate, float]], dict[int, list[int]]]:
    """`ranked` with rivals beside each other, cut to `limit` without splitting a group; and the
    rivals of each observation kept."""
    present = {c.id for c, _ in ranked if local(c)}
    rivals = marks.conflicting(conn, sorted(present))
    if not rivals:
        return ranked[:limit], {}
    extra = passing(conn, {o for found in rivals.values() for o in found} - present, f)
    rivals.update(marks.conflicting(conn, sorted(extra)))
    out: list[tuple[Candidate, float]] = []
    groups: list[list[tuple[Candidate, float]]] = []
    placed: set[int] = set()
    for c, score in ranked:
        if local(c) and c.id in placed:
            continue
        group = [(c, score)]
        if local(c) and c.id in rivals:
            for other in rivals[c.id]:
                found = next(((o, s) for o, s in ranked if local(o) and o.id == other), None)
                if found is None and other in extra:
                    found = (extra[other], score)
                if found is not None and found[0].id not in placed:
                    group.append((found[0], max(found[1], score)))
            placed.update(o.id for o, _ in group)
        groups.append(group)
    for group in groups:
        if len(out) + len(group) <= limit:
            out += group
    kept = {c.id for c, _ in out if local(c)}
    return out, {i: [o for o in others if o in kept] for i, others in rivals.items() if i in kept}
