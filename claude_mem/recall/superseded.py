"""Search's reading of marks (store/marks.py): what superseded a memory the query found takes that
memory's place, with its score (brought in when the search did not find it itself: it is about
the same thing, and it is what is true now), and the superseded memory follows right after it,
still found. There is no age decay: among current memories, order stays the fused
score's. One query for the marks of all the hits, one per step of a chain, one for the rows
brought in.
"""

from __future__ import annotations

import sqlite3

from claude_mem.recall.candidates import Candidate, Filters, load_rows, sql_filters
from claude_mem.store import marks, recall_rows


def local(c: Candidate) -> bool:
    return c.kind == "observation" and c.remote is None


def passing(conn: sqlite3.Connection, ids: set[int], f: Filters) -> dict[int, Candidate]:
    """The observations among `ids` that pass the search's filters, as candidates with rows."""
    where = sql_filters("observation", f, "t")
    if not ids or where is None:
        return {}
    found = {("observation", i): Candidate("observation", i) for i in recall_rows.passing(conn, "observation", ids, where)}
    load_rows(conn, found)
    return {key[1]: c for key, c in found.items() if c.row}


def rank_superseded(conn: sqlite3.Connection, ranked: list[tuple[Candidate, float]], f: Filters,
                    limit: int) -> tuple[list[tuple[Candidate, float]], dict[int, list[marks.SupersededBy]]]:
    """`ranked` with what superseded each superseded observation (the current end of its chain)
    in its place and at least its score, the superseded one right after; cut to `limit`. Also
    what directly superseded each hit."""
    present = {c.id for c, _ in ranked if local(c)}
    direct = marks.superseded_by(conn, sorted(present))
    if not direct:
        return ranked[:limit], {}
    heads = marks.newest_heads(conn, list(direct))
    extra = passing(conn, {h for hs in heads.values() for h in hs} - present, f)
    out = list(ranked)
    for c, score in [(c, s) for c, s in ranked if local(c) and c.id in direct]:
        at = next(i for i, (o, _) in enumerate(out) if o is c)
        for head in heads.get(c.id, []):
            found = next((i for i, (o, _) in enumerate(out) if local(o) and o.id == head), None)
            if found is None and head in extra:
                out.insert(at, (extra[head], score))
                at += 1
            elif found is not None and found > at:
                moved, own = out.pop(found)
                out.insert(at, (moved, max(own, score)))
                at += 1
    more = marks.superseded_by(conn, [c.id for c in extra.values()]) if extra else {}
    return out[:limit], {**direct, **more}
