"""What memory costs and what it is used for, per project and per session (`claude-mem stats`,
the viewer): tokens put into Claude's context by kind (the digest, the three pushes, MCP
fetches), tokens the observer spent distilling the session (the SDK's usage, summed on
worker_runs), and how many observations the agent fetched in full, and how many of those a push
(the digest included) had named before.

Standard library only.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from claude_mem.store.injections import KINDS, decode_refs

# The SDK's usage fields summed per worker run (migration 0006), in the order of its columns.
USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
# What a token of each field costs against a fresh input token (Haiku 4.5, as every Claude model:
# output 5x, cache reads 0.1x, cache writes of 5-minute entries 1.25x): "billed-equivalent" tokens.
PRICE_RATIOS = (1.0, 5.0, 0.1, 1.25)


def _empty() -> dict[str, Any]:
    return {"injected_tokens": dict.fromkeys(KINDS, 0), "injections": dict.fromkeys(KINDS, 0),
            "observer": {"replies": 0, **dict.fromkeys(USAGE_FIELDS, 0), "tool_events": 0, "echoes_refused": 0},
            "pushed_observations": 0, "fetched_observations": 0, "fetched_after_push": 0}


def usage(conn: sqlite3.Connection, *, project: str | None = None, session_id: str | None = None,
          since_ms: int | None = None) -> dict[str, Any]:
    """Per session (each with its project) and per project, with the same fields; sessions
    newest first. `since_ms` keeps sessions with injections or worker runs since then."""
    sessions: dict[str, dict[str, Any]] = {}

    def entry(sid: str, proj: str | None) -> dict[str, Any]:
        item = sessions.setdefault(sid, {"session_id": sid, "project": proj or "", "last_epoch": 0, **_empty()})
        if proj and not item["project"]:
            item["project"] = proj
        return item

    where, params = _where(project, session_id, since_ms, "i.project", "i.session_id", "i.created_at_epoch")
    pushed: dict[str, set[str]] = {}
    fetched: dict[str, set[str]] = {}
    after_push: dict[str, set[str]] = {}  # fetched once a push had named them
    for row in conn.execute(f"SELECT i.session_id, i.project, i.kind, i.refs, i.tokens, i.created_at_epoch FROM injections i{where}"
                            " ORDER BY i.id", params):
        item = entry(row["session_id"], row["project"])
        item["injected_tokens"][row["kind"]] += int(row["tokens"])
        item["injections"][row["kind"]] += 1
        item["last_epoch"] = max(item["last_epoch"], int(row["created_at_epoch"]))
        refs = set(decode_refs(row["refs"]))
        sid = row["session_id"]
        if row["kind"] == "fetch":
            fetched.setdefault(sid, set()).update(refs)
            after_push.setdefault(sid, set()).update(refs & pushed.get(sid, set()))
        else:
            pushed.setdefault(sid, set()).update(refs)
    where, params = _where(project, session_id, since_ms, "s.project", "w.session_id", "w.started_at_epoch")
    sums = ", ".join(f"SUM(w.{f}) AS {f}" for f in USAGE_FIELDS)
    for row in conn.execute(f"SELECT w.session_id, s.project, SUM(w.model_replies) AS replies, {sums},"
                            " SUM(w.echoes_refused) AS echoes_refused,"
                            " MAX(w.started_at_epoch) AS last_epoch FROM worker_runs w"
                            f" LEFT JOIN sdk_sessions s ON s.claude_session_id = w.session_id{where} GROUP BY w.session_id",
                            params):
        item = entry(row["session_id"], row["project"])
        item["observer"]["replies"] += int(row["replies"] or 0)
        for f in (*USAGE_FIELDS, "echoes_refused"):
            item["observer"][f] += int(row[f] or 0)
        item["last_epoch"] = max(item["last_epoch"], int(row["last_epoch"] or 0))
    for sid, events in _observed_tool_events(conn, [s for s, i in sessions.items() if i["observer"]["replies"]]).items():
        sessions[sid]["observer"]["tool_events"] = events
    for sid, item in sessions.items():
        item["pushed_observations"] = len({r for r in pushed.get(sid, set()) if r.startswith("obs:")})
        item["fetched_observations"] = len(fetched.get(sid, set()))
        item["fetched_after_push"] = len(after_push.get(sid, set()))
    ordered = sorted(sessions.values(), key=lambda s: -s["last_epoch"])
    projects: dict[str, dict[str, Any]] = {}
    for item in ordered:
        total = projects.setdefault(item["project"], {"project": item["project"], "sessions": 0, **_empty()})
        total["sessions"] += 1
        _add(total, item)
    return {"sessions": ordered, "projects": sorted(projects.values(), key=lambda p: p["project"]),
            "total": _add({"sessions": len(ordered), **_empty()}, *ordered)}


def _observed_tool_events(conn: sqlite3.Connection, session_ids: list[str]) -> dict[str, int]:
    """Tool events the observer's model covered, per session: those it was sent and a subagent's
    calls folded into their Task call (the unit the cost per 1,000 tool events divides by)."""
    found: dict[str, int] = {}
    for start in range(0, len(session_ids), 500):
        chunk = session_ids[start:start + 500]
        marks = ",".join("?" * len(chunk))
        for sid, n in conn.execute(f"SELECT session_id, COUNT(*) FROM observation_queue WHERE session_id IN ({marks})"
                                   " AND kind = 'tool' AND processed_by IN ('model', 'folded') GROUP BY session_id", chunk):
            found[sid] = int(n)
    return found


def billed(observer: dict[str, Any], prices: list[float]) -> float:
    """What the observer's tokens cost at `prices` (per million tokens: input, output, cache
    read, cache write), in the prices' currency."""
    p_in, p_out, p_read, p_write = prices
    return (observer["input_tokens"] * p_in + observer["output_tokens"] * p_out
            + observer["cache_read_input_tokens"] * p_read + observer["cache_creation_input_tokens"] * p_write) / 1e6


def per_thousand_events(observer: dict[str, Any], prices: list[float]) -> dict[str, Any] | None:
    """The observer's tokens per 1,000 tool events it covered, their billed-equivalent in fresh
    input tokens (at the ratios of `prices`, or Claude's usual ones), and their cost at `prices`."""
    events = observer["tool_events"]
    if not events:
        return None
    scale = 1000 / events
    ratios = [p / prices[0] for p in prices] if prices and prices[0] else list(PRICE_RATIOS)
    result: dict[str, Any] = {"tool_events": events, **{f: round(observer[f] * scale) for f in USAGE_FIELDS},
                              "billed_equivalent_tokens": round(billed(observer, ratios) * 1e6 * scale)}
    if prices:
        result["cost"] = round(billed(observer, prices) * scale, 4)
    return result


def _add(total: dict[str, Any], *items: dict[str, Any]) -> dict[str, Any]:
    for item in items:
        for group in ("injected_tokens", "injections", "observer"):
            for key, value in item[group].items():
                total[group][key] += value
        for key in ("pushed_observations", "fetched_observations", "fetched_after_push"):
            total[key] += item[key]
    return total


def _where(project: str | None, session_id: str | None, since_ms: int | None, project_col: str, session_col: str,
           time_col: str) -> tuple[str, list[Any]]:
    clauses, params = [], []
    for sql, value in ((f"{project_col} = ?", project), (f"{session_col} = ?", session_id), (f"{time_col} >= ?", since_ms)):
        if value is not None and value != "":
            clauses.append(sql)
            params.append(value)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

