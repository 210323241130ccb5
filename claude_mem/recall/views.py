"""Plain-text views of memory for an agent to read: search rows, a session's timeline, full
observation records, where recent sessions left off. Compact by design (one line per item, no
JSON punctuation) and bounded: a view that would grow past its limit says what it left out.

Rows are named by references the agent can pass back: `obs:12`, `sum:3`, `prompt:7` (the same
names the CLI's `show` and the index's document ids use), and `obs:12@laptop-b` for a teammate's
memory found on a shared Chroma server (recall/teammates.py).
"""

from __future__ import annotations

import sqlite3
from typing import Any

from claude_mem.recall.hits import Hit
from claude_mem.store import marks, recall_rows
from claude_mem.store.memory_rows import observations_by_id, with_marks
from claude_mem.store.reads import SUMMARY_FIELDS, TABLES, TURN_RANK, json_list, ref
from claude_mem.store.rows import MarkedObservation, StoredObservation
from claude_mem.store.withheld import is_withheld
from claude_mem.text.clock import local_clock, local_day, local_stamp
from claude_mem.text.shorten import cut

NARRATIVE_CHARS = 3_000
FACT_CHARS = 300
MAX_FACTS = 20
MAX_FILES = 30
FILES_SHOWN = 3
_SUMMARY_LABELS = {"request": "request", "investigated": "investigated", "learned": "learned", "completed": "completed",
                   "next_steps": "next steps", "notes": "notes"}


def tokens(chars: int) -> int:
    return max(1, round(chars / 4))  # ~4 characters per token for English prose and code


def files_text(files: list[str]) -> str:
    shown = [f if len(f) <= 60 else "…" + f[-59:] for f in files[:FILES_SHOWN]]
    more = f" +{len(files) - FILES_SHOWN}" if len(files) > FILES_SHOWN else ""
    return ", ".join(shown) + more


def bounded(lines: list[str], limit: int, what: str) -> str:
    """Lines joined up to `limit` characters; what was cut is said, not silently dropped."""
    out: list[str] = []
    used = 0
    for n, line in enumerate(lines):
        if used + len(line) + 1 > limit - 100:
            out.append(f"… {len(lines) - n} more {what} cut to keep this result under {limit} characters.")
            break
        out.append(line)
        used += len(line) + 1
    return "\n".join(out)


# -- search rows ----------------------------------------------------------------------------------

def record_chars(kind: str, row: sqlite3.Row | dict[str, Any]) -> int:
    """About how long the full record of this row is, as get_observations / timeline show it."""
    keys = {"observation": ("title", "subtitle", "narrative", "facts", "concepts", "files_read", "files_modified"),
            "summary": (*SUMMARY_FIELDS, "files_read", "files_edited"), "prompt": ("prompt_text",)}[kind]
    return 100 + sum(len(str(row[k] or "")) for k in keys)


def superseded_notes(conn: sqlite3.Connection, hits: list[Hit]) -> dict[int, str]:
    """What views say of this installation's observation hits: `superseded by obs:N, DATE` for
    superseded ones, `seen N times since DATE` for the newest copy of a repeated claim."""
    ids = [h.id for h in hits if h.kind == "observation" and h.origin is None]
    return {i: mark for i, (_, _, mark) in marks.notes(conn, ids).items() if mark}


def search_rows(conn: sqlite3.Connection, hits: list[Hit]) -> list[str]:
    """A header and one `ref | date | type (made from) | title | files | ~tokens` row per hit; a superseded
    observation's title ends with what superseded it."""
    costs: dict[tuple[str, int], int] = {}
    for kind in TABLES:
        ids = [h.id for h in hits if h.kind == kind and h.origin is None]
        for row in recall_rows.whole(conn, kind, ids):
            costs[(kind, row["id"])] = tokens(record_chars(kind, row))
    notes = superseded_notes(conn, hits)
    lines = ["ref | date | type (made from) | title | files | ~tokens"]
    for h in hits:
        # A teammate's record is what their documents hold: about as long as the matched text.
        cost = costs.get((h.kind, h.id), "?") if h.origin is None else tokens(len(h.title) + len(h.snippet) + 100)
        title = (cut(h.title, 120) or "(untitled)") + (f" [{notes[h.id]}]" if h.id in notes and h.origin is None else "")
        if h.withheld:
            title, cost = withheld_title(h.withheld), "-"
        label = h.kind_label() + (f" ({made_from(h.provenance)})" if h.provenance else "")
        lines.append(" | ".join([ref(h.kind, h.id, h.origin), local_stamp(h.created_at_epoch), label, title,
                                 files_text(h.files) or "-", str(cost)]))
    return lines


# -- withheld memories (issue 47): shown to agents as withheld, with their source, never their text ------

def made_from(provenance: list[str]) -> str:
    return ", ".join(provenance) or "-"


def withheld_title(note: str) -> str:
    return f"(withheld by the write guard: {cut(note, 300)})"


def withheld_record(o: StoredObservation) -> str:
    """What an agent is shown of a withheld observation: that it is, where it came from, no payload."""
    where = f"{ref('observation', o.id)} · withheld · {local_stamp(o.created_at_epoch)} · project {o.project}"
    return "\n".join([f"## {where} · session {o.session_id} turn {o.prompt_number}",
                      f"Made from: {made_from(json_list(o.provenance))}.",
                      f"The write guard withheld it: {o.guard_note} Its text is not given to agents; a person can"
                      " review it."])


def _withheld(row: dict[str, Any]) -> bool:
    """A timeline's or recent_sessions' row (store/recall_rows.py, dict-shaped with search's) is withheld."""
    return is_withheld(row.get("guard_note"), row.get("released_at_epoch"))


# -- full records ---------------------------------------------------------------------------------

def observation_record(marked: MarkedObservation) -> str:
    o = marked.observation
    if o.withheld:
        return withheld_record(o)
    lines = [f"## {ref('observation', o.id)} · {o.type} · {local_stamp(o.created_at_epoch)} · project {o.project}"
             f" · session {o.session_id} turn {o.prompt_number}",
             cut(o.title, 300) + (f" — {cut(o.subtitle, 300)}" if o.subtitle else "")]
    if json_list(o.provenance):
        lines.append(f"Made from: {made_from(json_list(o.provenance))}.")
    if marked.mark:
        lines.append(f"Note: {marked.mark}.")
    narrative = o.narrative.strip()
    if narrative:
        lines.append(narrative if len(narrative) <= NARRATIVE_CHARS else narrative[:NARRATIVE_CHARS - 1] + "…")
    facts = [f for f in json_list(o.facts) if f.strip()]
    if facts:
        lines.append("Facts:")
        lines += [f"- {cut(f, FACT_CHARS)}" for f in facts[:MAX_FACTS]]
        if len(facts) > MAX_FACTS:
            lines.append(f"- … {len(facts) - MAX_FACTS} more facts")
    concepts = json_list(o.concepts)
    if concepts:
        lines.append("Concepts: " + ", ".join(cut(c, 60) for c in concepts[:20]))
    for label, files in (("Files read", json_list(o.files_read)), ("Files modified", json_list(o.files_modified))):
        if files:
            lines.append(f"{label}: " + ", ".join(files[:MAX_FILES]) + (f" +{len(files) - MAX_FILES}" if len(files) > MAX_FILES else ""))
    return "\n".join(lines)


def observation_records(conn: sqlite3.Connection, ids: list[int], limit: int) -> tuple[str, list[int]]:
    """Full records in the order asked, up to `limit` characters; returns the text and the ids
    that do not exist."""
    rows = {m.observation.id: m for m in with_marks(conn, observations_by_id(conn, ids))}
    missing = [i for i in ids if i not in rows]
    tail = [f"Not found: {', '.join(ref('observation', i) for i in missing)}."] if missing else []
    parts: list[str] = []
    used = sum(map(len, tail))
    present = [i for i in ids if i in rows]
    for n, row_id in enumerate(present):
        record = observation_record(rows[row_id])
        if used + len(record) + 2 > limit - 200:
            left = ", ".join(str(i) for i in present[n:])
            tail.insert(0, f"Left out to stay under {limit} characters: ids {left} (ask for them in another call).")
            break
        parts.append(record)
        used += len(record) + 2
    return "\n\n".join(parts + tail), missing


def summary_lines(row: dict[str, Any], width: int) -> list[str]:
    if _withheld(row):
        return [withheld_title(row["guard_note"])]
    return [f"{_SUMMARY_LABELS[name]}: {cut(row[name], width)}" for name in SUMMARY_FIELDS if (row[name] or "").strip()]


# -- a session's timeline -------------------------------------------------------------------------

def session_items(conn: sqlite3.Connection, kind: str, row_id: int) -> list[dict[str, Any]] | None:
    """Everything stored for the anchor's session, in the order it happened (by turn: the
    prompt, its observations, its summary), or None when the anchor does not exist."""
    session_id = recall_rows.session_of(conn, kind, row_id)
    if session_id is None:
        return None
    project, rows = recall_rows.session_rows(conn, session_id)
    items = [{"project": project if project is not None else "?", **dict(row), "kind": item_kind}
             for item_kind, found in rows.items() for row in found]
    items.sort(key=lambda i: (i["prompt_number"], TURN_RANK[i["kind"]], i["created_at_epoch"], i["id"]))
    observed = [i for i in items if i["kind"] == "observation"]
    found = marks.notes(conn, [i["id"] for i in observed])
    for i in observed:
        i["mark"] = found[i["id"]][2]  # what timeline_lines says of it
    return items


def timeline(items: list[dict[str, Any]], kind: str, anchor_id: int, before: int, after: int, limit: int) -> str:
    """The window around the anchor, narrowed (the longer side first) until it fits `limit`."""
    while True:
        text = "\n".join(timeline_lines(items, kind, anchor_id, before, after))
        if len(text) <= limit or before + after == 0:
            return text if len(text) <= limit else text[: limit - 1] + "…"
        if before >= after:
            before -= 1
        else:
            after -= 1


def timeline_lines(items: list[dict[str, Any]], kind: str, anchor_id: int, before: int, after: int) -> list[str]:
    at = next(n for n, i in enumerate(items) if i["kind"] == kind and i["id"] == anchor_id)
    start, end = max(0, at - before), min(len(items), at + after + 1)
    anchor = items[at]
    lines = [f"Session {anchor['session_id']} (project {anchor['project']}): items {start + 1}-{end} of {len(items)} in order,"
             f" > marks {ref(kind, anchor_id)}."]
    shown_day = None
    for n in range(start, end):
        item = items[n]
        day = local_day(item["created_at_epoch"])
        if day != shown_day:
            lines.append(f"[{day}]")
            shown_day = day
        width = 600 if n == at else 160  # the anchor itself is shown more fully
        prefix = f"{'>' if n == at else ' '} {local_clock(item['created_at_epoch'])} turn {item['prompt_number']}" \
                 f" {ref(item['kind'], item['id'])}"
        if item["kind"] == "prompt":
            lines.append(f"{prefix} user asked: {cut(item['prompt_text'], width)}")
        elif item["kind"] == "observation":
            files = json_list(item["files_modified"]) or json_list(item["files_read"])
            extra = f" [{files_text(files)}]" if files else ""
            extra += f" ({item['mark']})" if item.get("mark") else ""
            cost = tokens(record_chars("observation", item))
            title = withheld_title(item["guard_note"]) if _withheld(item) else cut(item["title"], width)
            lines.append(f"{prefix} {item['type']}: {title}{extra} ~{cost}t")
        else:
            body = summary_lines(item, width)
            lines.append(f"{prefix} turn summary: " + (" · ".join(body) if body else "(empty)"))
    if start > 0 or end < len(items):
        lines.append(f"({start} earlier and {len(items) - end} later items not shown: raise before/after to see them.)")
    return lines


# -- recent sessions ------------------------------------------------------------------------------

def latest_summaries(conn: sqlite3.Connection, project: str | None, limit: int) -> list[dict[str, Any]]:
    """Per session, its most recent summary (with the number of turns summarized and of
    observations), newest sessions first."""
    return recall_rows.latest_summaries(conn, project, limit)


def recent_session_lines(rows: list[dict[str, Any]], all_projects: bool) -> list[str]:
    lines: list[str] = []
    for r in rows:
        where = f" · project {r['project']}" if all_projects else ""
        lines.append(f"## {local_stamp(r['created_at_epoch'])} · session {r['session_id']}{where} · {r['turns']} turn(s) summarized,"
                     f" {r['observation_count']} observation(s); latest: {ref('summary', r['id'])} (turn {r['prompt_number']})")
        lines += summary_lines(r, 400)
    return lines
