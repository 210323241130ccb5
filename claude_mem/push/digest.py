"""The SessionStart digest: what the user asked to remember, the project's latest summary and
recent observations, bounded.

Reads SQLite only (no index, no model, standard library only) so the `context` hook stays fast.
The best-known system of this kind injects unbounded context that Claude Code silently truncates
past 10 KB; this one never exceeds `max_chars`: the summary is shortened to leave room for
observations, the oldest observations are dropped first, and the line saying how to fetch
details always fits. An empty project gets nothing at all. Memories a person or the agent stated
(`remember`) come first, in their own words: the user chose to keep them; they may take half the
room when there is more to say.

The decisions, rules and conventions stated in sessions (issue 51) come next, newest first, each
with the component it was stated for, in at most DECISIONS_SHARE of the room left: what holds in
the project, before what happened in it. Rival decisions are one line that says they conflict, or
are left out (a remembered memory in a conflict is listed with its rival there, not alone above);
a decision is not listed again among the recent observations. Those lines are not recorded as
given (`digest_refs` does not match them): the prompt push may bring back the one a prompt bears
on, where it matters.
"""

from __future__ import annotations

import re
import sqlite3

from claude_mem.push.decisions import pair_line
from claude_mem.push.lines import NOT_INSTRUCTIONS
from claude_mem.store import marks
from claude_mem.store.reads import observation_rows, summary_rows
from claude_mem.text.clock import local_clock, local_day, local_stamp
from claude_mem.text.shorten import cut

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

RECENT_OBSERVATIONS = 50
STATED_MEMORIES = 30
STATED_CHARS = 300
DECISIONS = 30  # the newest current decisions read for the digest
DECISIONS_SHARE = 0.35
DECISIONS_HEADING = "\n## Decisions and rules stated in this project (newest first)\n"
SUMMARY_FIELD_CHARS = 600
TITLE_CHARS = 160
_SUMMARY_LABELS = (("Request", "request"), ("Completed", "completed"), ("Learned", "learned"), ("Next steps", "next_steps"))
SHOWN = ("id", "type", "title", "narrative", "scope", "created_at_epoch")  # what the digest reads of an observation
OBSERVATIONS_HEADING = "\n## Recent observations\n"
STATED_HEADING = "\n## Remembered on request (newest first)\n"
FOOTER = "\nclaude-mem MCP: search(query) -> timeline(anchor=\"obs:<id>\") -> get_observations(ids=[...]); ask(question).\n"


def build_digest(conn: sqlite3.Connection, project: str, *, max_chars: int = 8000, other_than: str | None = None) -> str:
    """The project's digest; `other_than`: leave that session's own rows out (after its compaction,
    Claude's summary and the working set already carry them)."""
    # What the write guard withheld is never given unasked (issue 47). Dicts, not records: the
    # hook does without the records' module (store/rows.py; dataclasses cost it ~7 ms).
    summaries = summary_rows(conn, project=project, limit=1, newest_first=True, other_than=other_than, given=True)
    observations = observation_rows(conn, project=project, limit=RECENT_OBSERVATIONS, newest_first=True, current=True,
                                    other_than=other_than, stated=False, given=True, columns=SHOWN)
    stated = observation_rows(conn, project=project, limit=STATED_MEMORIES, newest_first=True, current=True, stated=True,
                              given=True, columns=SHOWN)
    if not summaries and not observations and not stated:
        return ""
    rivals = marks.conflicting(conn, [int(o["id"]) for o in stated])
    stated = [o for o in stated if int(o["id"]) not in rivals]  # with its rival among the decisions below
    shown = {int(o["id"]) for o in stated}
    decided = [o for o in observation_rows(conn, project=project, type_="decision", limit=DECISIONS, newest_first=True,
                                           current=True, given=True, columns=SHOWN)
               if int(o["id"]) not in shown]
    header = f"# claude-mem: what happened recently in {project} {NOT_INSTRUCTIONS}\n"
    budget = max_chars - len(header) - len(FOOTER)
    kept = _stated_block(stated, budget // 2 if summaries or observations else budget)
    budget -= len(kept)
    rules = _decision_block(conn, decided, int(budget * DECISIONS_SHARE)) if decided else ""
    budget -= len(rules)
    observations = [o for o in observations if o["type"] != "decision"]
    # The summary may take half the room when observations want the rest, all of it otherwise.
    summary = _summary_block(summaries[0], budget // 2 if observations else budget) if summaries else ""
    text = header + kept + rules + summary + _observation_block(observations, budget - len(summary)) + FOOTER
    return text if len(text) <= max_chars else text[:max_chars]  # only when even the header does not fit


_LISTED = re.compile(r"^- (obs:\d+) ", re.MULTILINE)


def digest_refs(text: str) -> list[str]:
    """The observations a digest lists ("obs:12"), so later pushes leave them out."""
    return _LISTED.findall(text)


def _decision_block(conn: sqlite3.Connection, decided: list[dict[str, Any]], room: int) -> str:
    """The current decisions that fit, newest first: `- decision obs:12 (2026-03-01, for services/billing): <the rule>`;
    rivals as one line (store/marks.py), or not at all when one of them is not among the current decisions read."""
    by_id = {int(o["id"]): o for o in decided}
    rivals = marks.conflicting(conn, list(by_id))
    lines: list[str] = []
    done: set[int] = set()
    for o in decided:
        if int(o["id"]) in done:
            continue
        others = rivals.get(int(o["id"]), [])
        if others:
            if not all(i in by_id for i in others):
                continue  # a rival not read: neither is shown
            group = [o, *(by_id[i] for i in others)]
            done.update(int(g["id"]) for g in group)
            lines.append(pair_line(group) + "\n")
            continue
        scope = f", for {o['scope']}" if o.get("scope") else ""
        lines.append(f"- decision obs:{o['id']} ({local_day(o['created_at_epoch'])}{scope}): {cut(o['title'], TITLE_CHARS * 2)}\n")
    return _fitted(DECISIONS_HEADING, lines, room)


def _summary_block(s: dict[str, Any], room: int) -> str:
    """The latest summary, its fields cut shorter (then dropped from the end) until it fits."""
    title = f"\n## Last summary ({local_stamp(s['created_at_epoch'])})\n"
    fields = [(label, " ".join(str(s.get(key) or "").split())) for label, key in _SUMMARY_LABELS]
    fields = [(label, value) for label, value in fields if value]
    width = SUMMARY_FIELD_CHARS
    while fields:
        block = title + "".join(f"- {label}: {cut(value, width)}\n" for label, value in fields)
        if len(block) <= room:
            return block
        if width > 60:
            width //= 2
        else:
            fields.pop()
    return title if len(title) <= room else ""


def _stated_block(stated: list[dict[str, Any]], room: int) -> str:
    """The stated memories that fit, newest first, each in its own words (cut)."""
    lines = [f"- obs:{o['id']} {local_day(o['created_at_epoch'])} [{o['type']}] {cut(o['narrative'] or o['title'], STATED_CHARS)}\n"
             for o in stated]
    return _fitted(STATED_HEADING, lines, room)


def _observation_block(observations: list[dict[str, Any]], room: int) -> str:
    """Newest observations that fit, shown oldest first under one heading per day."""
    used = len(OBSERVATIONS_HEADING)
    kept: list[tuple[str, str]] = []
    days: set[str] = set()
    for o in observations:  # newest first: the oldest are the ones left out
        day = local_day(o["created_at_epoch"])
        line = f"- obs:{o['id']} {local_clock(o['created_at_epoch'])} [{o['type']}] {cut(o['title'], TITLE_CHARS)}\n"
        cost = len(line) + (0 if day in days else len(_day_heading(day)))
        if used + cost > room:
            break
        used += cost
        days.add(day)
        kept.append((day, line))
    if not kept:
        return ""
    parts = [OBSERVATIONS_HEADING]
    shown_day = None
    for day, line in reversed(kept):
        if day != shown_day:
            parts.append(_day_heading(day))
            shown_day = day
        parts.append(line)
    return "".join(parts)


def _day_heading(day: str) -> str:
    return f"### {day}\n"


def _fitted(heading: str, lines: list[str], room: int) -> str:
    """The heading and the lines that fit in `room`, in order; "" when none does."""
    block = heading
    for line in lines:
        if len(block) + len(line) > room:
            break
        block += line
    return block if block != heading else ""
