"""`claude-mem status`: the status report (claude_mem/status.py), printed."""

from __future__ import annotations

import os
from typing import Any

from claude_mem.cli.app import AppContext, cli, emit_json, pass_app
from claude_mem.cli.format import echo_fields, human_bytes, paint, plural, status_colour
from claude_mem.cli.params import json_option
from claude_mem.progress import describe as describe_job
from claude_mem.store import budget
from claude_mem.store.outages import describe
from claude_mem.store.queue import QueueStatus
from claude_mem.text.clock import local_stamp
from claude_mem.text.shorten import cut

EMBEDDER_LINES = {
    "minilm": "minilm (all-MiniLM-L6-v2: English)",
    "multilingual": "multilingual (multilingual-e5-small: Chinese, Japanese, English and across them)",
}


def _embedder_line(health: dict[str, Any]) -> str:
    line = f"{EMBEDDER_LINES[health['embedder']]}: {health['embedder_reason']}"
    if "embedder_next" in health:
        line += f"; the memory service is switching to {health['embedder_next']} (its index filled from SQLite)"
    return line


def _index_line(health: dict[str, Any], job: dict[str, Any] | None = None) -> str:
    state = health["state"]
    if state == "off":
        return "off (setting semantic_index): search is by keyword only"
    if state == "not built":
        return f"not built yet ({health['rows_to_index']} rows to index; `claude-mem doctor --fix` builds it)"
    if state == "unavailable":
        return paint(f"unavailable: {health['reason']}", "red")
    kinds = ("observation", "summary", "prompt")
    line = ", ".join(f"{health[k]['indexed']}/{plural(health[k]['sqlite'], k)}"
                     for k in kinds)
    if state == "in sync":
        return f"{paint('in sync', 'green')} ({line} indexed)"
    missing = sum(health[k]["missing"] for k in kinds)
    stale = sum(health[k]["stale"] for k in kinds)
    unfilled = sum(health[k].get("unfilled", 0) for k in kinds)
    if job:  # the memory service is on it: nothing to repair
        return paint(f"catching up by itself: {missing + unfilled} rows to go ({line}); the memory service is {describe_job(job)}",
                     "cyan")
    vectors = f", {unfilled} without their vectors in SQLite" if unfilled else ""
    return paint(f"drift: {missing} rows missing, {stale} stale{vectors} ({line}); `claude-mem doctor --fix` repairs it", "yellow")


def _sharing_line(share: dict[str, Any]) -> str:
    if not share["server"]:
        return "not shared (the semantic index is this machine's; setting chroma_url shares it with a team)"
    who = f"{share['server']} as {share['name']}" + (f" ({share['installation_id']})" if "installation_id" in share else "")
    if "rows_sent" not in share:
        return f"{who}: what was sent cannot be read now (see index)"
    sent = share["rows_sent"]
    line = (f"{who}: sent {plural(sent['observation'], 'observation')}, {plural(sent['summary'], 'summary')},"
            f" {plural(sent['prompt'], 'prompt')} ({plural(share['documents_sent'], 'document')});"
            f" {plural(share['others'], 'document')} of other installations there")
    if share["local_projects"]:
        line += "; never sent: " + ", ".join(share["local_projects"])
    return line


@cli.command("status", short_help="Counts, queue, workers, index, model.")
@json_option
@pass_app
def status(app: AppContext, as_json: bool) -> None:
    """Data dir, counts, queue, workers, the memory service, index health, the model, the last error."""
    from claude_mem.status import report

    # No database yet is a state to show, not an error; nor is it created by looking.
    conn = app.db() if os.path.exists(app.config.db_path) else None
    info = report(app.config, conn)
    if as_json:
        emit_json(info)
        return
    _print_status(info)


def _service_line(service: dict[str, Any]) -> str:
    waiting = _waiting(service)
    if not service["running"]:
        return "not running (started by whoever needs it first)" + (f"; {waiting}, indexed when it starts" if waiting else "")
    parts = [f"pid {service['pid']}"]
    if service["rss_bytes"] is not None:
        parts.append(f"RSS {human_bytes(service['rss_bytes'])}")
    if service["uptime_s"] is not None:
        parts.append(f"up {service['uptime_s']:.0f} s")
    if not service["answering"]:
        parts.append(paint("not answering (starting, or hung: `claude-mem doctor --fix` ends a hung one)", "yellow"))
    elif waiting:
        parts.append(paint(f"index lag: {waiting}", "yellow"))
    else:
        parts.append("index in step")
    if service.get("index_job"):
        parts.append(describe_job(service["index_job"]))
    return ", ".join(parts)


def _waiting(service: dict[str, Any]) -> str:
    """What the semantic index lacks yet: rows SQLite has, notices of rewritten rows (service/notices.py)."""
    parts = [plural(service["index_lag"], "row")] if service.get("index_lag") else []
    parts += [plural(service["notices_waiting"], "notice")] if service.get("notices_waiting") else []
    return " and ".join(parts) + " not yet indexed" if parts else ""


def _codex_line(codex: dict[str, Any]) -> str:
    if codex["problem"]:
        return paint(codex["problem"], "red")
    line = f"{codex['home']}: {codex['hooks']} of {codex['expected']} hooks, {codex['trusted']} trusted"
    line += ", MCP server" if codex["mcp_server"] else ", no MCP server"
    whole = codex["hooks"] == codex["trusted"] == codex["expected"] and codex["mcp_server"]
    return line if whole else paint(line, "yellow") + " (`claude-mem install --codex` sets it right)"


def _model_line(info: dict[str, Any]) -> str:
    if info["synthesizer"] == "heuristic":
        return f"{info['model']} (not used: synthesizer is heuristic)"
    login = info["credentials"]
    reach = login if login else paint("no credentials found", "yellow") + " (the heuristic synthesizer stands in)"
    if not login and info["codex"] and info["synthesizer"] == "auto":
        # A Codex-only user: the observer needs a Claude login, Codex's own does not serve it.
        reach = (paint("no Claude login", "yellow") + ": Claude Code's and Codex's sessions are remembered by the"
                 " heuristic synthesizer (a Claude login, `claude` then /login, lets the model observe them)")
    return f"{info['model']}, synthesizer {info['synthesizer']}; {reach}"


def _budget_line(info: dict[str, Any]) -> str:
    spent = info["observer_budget"]
    line = budget.describe(spent)
    if not spent["reached"]:
        return line
    then = {"auto": "the heuristic synthesizer takes the rest of today's events (`claude-mem reprocess --session ID` redoes"
                    " a session's with the model)",
            "model": "events wait for tomorrow (`claude-mem reprocess --session ID` sends a session's once the budget is"
                     " raised)"}.get(info["synthesizer"], "")
    when = f" at {local_stamp(spent['reached_at_epoch'])}" if spent["reached_at_epoch"] else ""
    return paint(f"budget reached{when}: {line}" + (f"; {then}" if then else ""), "yellow")


def withheld_line(counts: dict[str, Any]) -> str:
    """`3 memories withheld by the write guard (from web 2, read 1); `claude-mem withheld` lists them`."""
    sources = ", ".join(f"{source} {n}" for source, n in counts["by_source"].items())
    return (f"{plural(counts['total'], 'memory')} withheld by the write guard (from {sources});"
            " `claude-mem withheld` lists them")


def _print_status(info: dict[str, Any]) -> None:
    fields: list[tuple[str, Any]] = [("data dir", info["data_dir"])]
    if not info["database_exists"]:
        fields.append(("database", paint(f"none yet at {info['database']}", "yellow")
                       + " (nothing captured; `claude-mem install` sets up the hooks)"))
    else:
        c, q = info["counts"], info["queue"]
        fields += [
            ("database", f"{info['database']} ({human_bytes(info['database_bytes'])})"),
            ("stored", f"{plural(c['sessions'], 'session')}, {plural(c['prompts'], 'prompt')}, "
                       f"{plural(c['observations'], 'observation')}, {plural(c['summaries'], 'summary')}"),
            ("queue", ", ".join(paint(f"{q[s]} {s}", status_colour(s) if q[s] else None)
                                for s in QueueStatus)),
            ("index", _index_line(info["index"], info["service"].get("index_job"))),
            *([("embedder", _embedder_line(info["index"]))] if "embedder" in info["index"] else []),
            ("sharing", _sharing_line(info["sharing"])),
        ]
    workers = info["workers"]
    fields.append(("workers", f"{len(workers)} live" + (": " + ", ".join(
        f"pid {w['pid']} ({w['session_id'][:12]})" for w in workers[:5]) if workers else "")))
    waiting = info["waiting_sessions"]
    if waiting:
        fields.append(("waiting", paint(f"{len(waiting)} session(s) wait for a worker slot (setting max_workers), the oldest "
                                        f"{waiting[0]['session_id'][:12]} since {local_stamp(waiting[0]['waiting_since_epoch'])}",
                                        "yellow")))
    fields.append(("service", _service_line(info["service"])))
    if info["codex"]:
        fields.append(("codex", _codex_line(info["codex"])))
    fields.append(("model", _model_line(info)))
    if info["observer_budget"] is not None:
        fields.append(("observer", _budget_line(info)))
    for o in info["model_outages"][:3]:
        fields.append(("outage", paint(f"session {o['claude_session_id'][:12]}: {describe(o, local_stamp)}", "yellow")))
    skipped = info["skipped"]
    if skipped["count"]:
        fields.append(("skipped", paint(f"{skipped['count']} event{'s' if skipped['count'] != 1 else ''} skipped after"
                                        f" max_attempts failures of their own (last: {cut(skipped['last_error'] or '', 160)});"
                                        " `claude-mem retry` re-queues them", "yellow")))
    if info["withheld"]["total"]:
        fields.append(("withheld", paint(withheld_line(info["withheld"]), "yellow")))
    if info["workers_started"]:
        fields.append(("started", f"a worker for {len(info['workers_started'])} session(s) whose events were waiting"))
    qe = info["last_queue_error"]
    if qe:
        fields.append(("queue error", f"{local_stamp(qe['updated_at_epoch'])} event {qe['id']} ({qe['status']}): "
                                      f"{cut(qe['last_error'], 200)}"))
    if info["last_error"]:
        fields.append(("last error", paint(info["last_error"], "red")))
    echo_fields(fields)
