"""Stated decisions in what the hooks push (issue 51): the rules a team stated come before the
notes tool calls left, only where they apply, and rival ones together or not at all.

  - scope: a decision stated for a component, path or area (observations.scope) is left out of a
    push whose prompt (and files) are elsewhere (text/scope.py: the prompt names paths, or another
    known area, and none of the decision's);
  - rivals: a decision in an active conflict (store/marks.py) brings its current rivals with it,
    and the push shows them as one line that says they conflict (`pair_line`): both, or none;
  - order: decisions first, then the rest as ranked.

Standard library only (the prompt hook).
"""

from __future__ import annotations

from claude_mem.push.lines import memory_line
from claude_mem.store import marks, push_reads
from claude_mem.text.clock import local_day
from claude_mem.text.scope import in_scope
from claude_mem.text.shorten import cut

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable
    from typing import Any

DECISION_CHARS = 300  # a decision's line: the rule whole, as stated
CLAIM_CHARS = 240  # each side of a conflict


def of_sessions(conn: sqlite3.Connection, hits: list[dict[str, Any]], project: str, session_id: str,
                sessions: int = 2) -> list[dict[str, Any]]:
    """The decisions stated in the first `sessions` sessions the hits come from (not this one), as
    hits, replaced ones too (the caller puts what replaced them in their place): a decision that
    closed the investigation a prompt matches bears on it, though its own words rarely match the
    prompt's (a rule, not the story of how it was found)."""
    found = list(dict.fromkeys(str(h["session_id"]) for h in hits if h.get("session_id") and h.get("session_id") != session_id))
    return _hits(push_reads.decisions_of_sessions(conn, project, found[:sessions])) if found else []


def named(conn: sqlite3.Connection, project: str, prompt: str) -> list[dict[str, Any]]:
    """The current decisions stated for a component, path or area the prompt names (text/scope.py):
    a rule for the part of the project the task is in applies to it, whatever else matched."""
    known = known_scopes(conn, project)
    wanted = [s for s in known if in_scope(s, prompt, (), known) is True]
    return _hits(push_reads.decisions_for_scopes(conn, project, wanted)) if wanted else []


def _hits(rows: list[sqlite3.Row]) -> list[dict[str, Any]]:
    return [{"kind": "observation", "id": r["id"], "session_id": r["session_id"], "type": "decision", "title": r["title"],
             "snippet": "", "created_at_epoch": r["created_at_epoch"], "score": None} for r in rows]


def known_scopes(conn: sqlite3.Connection, project: str) -> list[str]:
    """The scopes the project's decisions were stated for."""
    return push_reads.known_scopes(conn, [project])


def arrange(conn: sqlite3.Connection, hits: list[dict[str, Any]], project: str, prompt: str,
            files: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The hits with decisions out of scope left out, rivals joined to the first of them found
    (`rivals` on that hit: their rows), decisions first."""
    observed = [int(h["id"]) for h in hits if h.get("kind") == "observation"]
    rows = push_reads.decision_rows(conn, observed)
    known = known_scopes(conn, project)
    files = list(files)

    def applies(row: dict[str, Any] | None) -> bool:
        return row is None or row["type"] != "decision" or in_scope(row["scope"] or "", prompt, files, known) is not False

    kept = [h for h in hits if h.get("kind") != "observation" or applies(rows.get(int(h["id"])))]
    rivals = marks.conflicting(conn, [int(h["id"]) for h in kept if h.get("kind") == "observation"
                                      and (rows.get(int(h["id"])) or {}).get("type") == "decision"])
    others = push_reads.decision_rows(conn, {o for found in rivals.values() for o in found})
    joined: set[int] = set()
    out: list[dict[str, Any]] = []
    for h in kept:
        hid = int(h["id"]) if h.get("kind") == "observation" else None
        if hid is not None and hid in joined:
            continue
        if hid is not None and (rows.get(hid) or {}).get("type") == "decision":
            h = {**h, "title": rows[hid]["title"], "snippet": ""}  # the rule whole, as stated (a hit's title is cut)
        if hid is not None and hid in rivals:
            with_it = [others[o] for o in rivals[hid] if o in others and others[o]["project"] == project and applies(others[o])]
            if with_it:
                h = {**h, "rivals": sorted([rows[hid], *with_it], key=lambda r: (r["created_at_epoch"], r["id"]))}
                joined.update(int(r["id"]) for r in with_it)
        out.append(h)
    first = [h for h in out if h.get("rivals") or h.get("type") == "decision"]
    return first + [h for h in out if not (h.get("rivals") or h.get("type") == "decision")]


def ref_of(hit: dict[str, Any], prefix: str) -> str:
    """The hit's ref; a conflict's refs, space-separated (lines.fit_lines keeps such a line whole or leaves it out)."""
    if hit.get("rivals"):
        return " ".join(f"obs:{r['id']}" for r in hit["rivals"])
    return f"{prefix}:{hit.get('id')}"


def line_of(hit: dict[str, Any], label: str, detail: str) -> str:
    """The push's line for a hit: a conflict as one line, a decision whole, anything else as memory_line makes it."""
    if hit.get("rivals"):
        return pair_line(hit["rivals"])
    width = DECISION_CHARS if hit.get("type") == "decision" else 260
    return memory_line(hit["kind"], int(hit["id"]), int(hit.get("created_at_epoch") or 0), label, str(hit.get("title") or ""),
                       detail, width=width)


def pair_line(rows: list[dict[str, Any]]) -> str:
    """`- obs:12 + obs:40 decisions that conflict (neither replaces the other; ask which holds): "A" (2026-03-01) vs "B" (2026-03-09)`,
    the oldest first."""
    rows = sorted(rows, key=lambda r: (int(r["created_at_epoch"]), int(r["id"])))
    refs = " + ".join(f"obs:{r['id']}" for r in rows)
    claims = " vs ".join(f"\u201c{cut(r['title'], CLAIM_CHARS)}\u201d ({local_day(int(r['created_at_epoch']))})" for r in rows)
    return f"- {refs} decisions that conflict (neither replaces the other; ask which holds): {claims}"
