"""The SessionStart digest: the project's latest summary and recent observations, bounded.

Reads SQLite only (no index, no model) so the `context` hook stays fast. The best-known
system of this kind injects unbounded context that Claude Code silently truncates past 10 KB;
this one stops at `max_chars`, dropping the oldest lines first.
"""

from __future__ import annotations

import sqlite3
import time

from claude_mem.store.memories import list_observations, list_summaries

RECENT_OBSERVATIONS = 50


def build_digest(conn: sqlite3.Connection, project: str, *, max_chars: int = 8000) -> str:
    summaries = list_summaries(conn, project=project, limit=1, newest_first=True)
    observations = list_observations(conn, project=project, limit=RECENT_OBSERVATIONS, newest_first=True)
    if not summaries and not observations:
        return ""
    header = f"# claude-mem: what happened recently in {project}\n"
    footer = ("\nDetails: use the claude-mem MCP tools: search(query) -> timeline(id) -> "
              "get_observations([ids]).\n")
    parts = [header]
    if summaries:
        s = summaries[0]
        lines = [f"\n## Last summary ({_when(s['created_at_epoch'])})"]
        for label, key in (("Request", "request"), ("Completed", "completed"), ("Learned", "learned"),
                           ("Next steps", "next_steps")):
            value = " ".join(str(s.get(key) or "").split())
            if value:
                lines.append(f"- {label}: {value[:600]}")
        parts.append("\n".join(lines) + "\n")
    budget = max_chars - sum(map(len, parts)) - len(footer)
    obs_lines: list[str] = []
    day = None
    # Newest first while filling the budget, then shown oldest first, grouped by day.
    kept = []
    used = len("\n## Recent observations\n")
    for o in observations:
        line = f"- #{o['id']} {_clock(o['created_at_epoch'])} [{o['type']}] {' '.join(o['title'].split())[:160]}\n"
        cost = len(line) + 16  # a possible day heading
        if used + cost > budget:
            break
        used += cost
        kept.append((o, line))
    if kept:
        obs_lines.append("\n## Recent observations\n")
        for o, line in reversed(kept):
            this_day = _day(o["created_at_epoch"])
            if this_day != day:
                obs_lines.append(f"### {this_day}\n")
                day = this_day
            obs_lines.append(line)
    text = "".join(parts) + "".join(obs_lines) + footer
    return text[:max_chars]


def _day(epoch_ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(epoch_ms / 1000))


def _clock(epoch_ms: int) -> str:
    return time.strftime("%H:%M", time.localtime(epoch_ms / 1000))


def _when(epoch_ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(epoch_ms / 1000))
