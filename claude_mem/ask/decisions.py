"""Stated decisions in an answer (issue 51): those that apply to the question, first, and rivals
together with the conflict said, or not at all.

  - scope: a decision stated for a component the question is not about is no evidence
    (text/scope.py, as the prompt push reads it);
  - rivals: search brings a decision's current rivals beside it (recall/rivals.py); here they
    become one piece of evidence that says they conflict, and a decision whose rivals did not all
    come (out of scope, cut) is left out: never one of them stated as fact;
  - order: decisions first, then the rest as search ranked them.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from claude_mem.ask.extract import Evidence
from claude_mem.store import push_reads
from claude_mem.text.clock import local_day
from claude_mem.text.scope import in_scope
from claude_mem.text.shorten import clip

Found = tuple[str, int, dict[str, Any]]
CLAIM_CHARS = 240


def _decision(item: Found) -> bool:
    return item[0] == "observation" and item[2].get("type") == "decision"


def arrange(conn: sqlite3.Connection, question: str, found: list[Found], rivals: dict[int, list[int]]) -> list[Found]:
    """`found` (search's order) with decisions out of scope and lone rivals left out, decisions first."""
    projects = {str(row.get("project") or "") for _, _, row in found}
    known = push_reads.known_scopes(conn, projects)
    kept = [f for f in found if not _decision(f) or in_scope(str(f[2].get("scope") or ""), question, (), known) is not False]
    ids = {row_id for kind, row_id, _ in kept if kind == "observation"}
    kept = [f for f in kept if not (f[0] == "observation" and any(o not in ids for o in rivals.get(f[1], [])))]
    return [f for f in kept if _decision(f)] + [f for f in kept if not _decision(f)]


def join_rivals(items: list[Evidence], found: list[Found], rivals: dict[int, list[int]]) -> list[Evidence]:
    """The evidence with each group of rival decisions as one item that says they conflict."""
    rows = {row_id: row for kind, row_id, row in found if kind == "observation"}
    by_ref = {item.ref: item for item in items}
    out: list[Evidence] = []
    joined: set[str] = set()
    for item in items:
        if item.ref in joined:
            continue
        row_id = int(item.ref.split(":", 1)[1]) if item.ref.startswith("obs:") else None
        others = [o for o in rivals.get(row_id, []) if o in rows] if row_id is not None else []
        if row_id is None or not others:
            out.append(item)
            continue
        group = [row_id, *others]
        claims = " vs ".join(f"\u201c{clip(rows[i]['title'], CLAIM_CHARS)}\u201d ({local_day(int(rows[i]['created_at_epoch']))})"
                             for i in group)
        text = f"Decisions that conflict, neither replacing the other (ask which holds): {claims}"
        refs = [f"obs:{i}" for i in group]
        joined.update(refs)
        out.append(Evidence(", ".join(refs), item.kind, item.day, [text], item.rank,
                            [text, *(t for r in refs if r in by_ref for t in by_ref[r].texts)]))
    return out
