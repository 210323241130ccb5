"""`claude-mem stats`: what memory costs and what it is used for, per project and session."""

from __future__ import annotations

from typing import Any

import click

from claude_mem.cli.app import AppContext, cli, emit_json, pass_app
from claude_mem.cli.format import Column, echo_table, heading, paint
from claude_mem.cli.inspect import require_session
from claude_mem.cli.params import json_option, parse_when
from claude_mem.store import budget, costs
from claude_mem.store.injections import KINDS
from claude_mem.text.clock import local_stamp

KIND_HEADERS = {"digest": "DIGEST", "prompt": "PROMPT", "file": "FILE", "command": "COMMAND", "fetch": "FETCHED"}


def observer_in(o: dict[str, Any]) -> int:
    """Everything the observer's model read: fresh input and input served from the prompt cache."""
    return o["input_tokens"] + o["cache_read_input_tokens"] + o["cache_creation_input_tokens"]


def describe_bill(bill: dict[str, Any], echoes: int) -> str:
    """The observer's cost per 1,000 tool events, in one line."""
    read = bill["input_tokens"] + bill["cache_read_input_tokens"] + bill["cache_creation_input_tokens"]
    money = f", {bill['cost']:.2f} at observer_prices" if "cost" in bill else " (setting observer_prices adds money)"
    return (f"observer per 1,000 tool events ({bill['tool_events']:,} observed): {read:,} tokens in"
            f" ({bill['cache_read_input_tokens']:,} cache reads, {bill['cache_creation_input_tokens']:,} cache writes),"
            f" {bill['output_tokens']:,} out = {bill['billed_equivalent_tokens']:,} billed-equivalent input tokens{money};"
            f" {echoes:,} repeated observation(s) refused")


def _row(item: dict[str, Any]) -> list[Any]:
    tokens = item["injected_tokens"]
    return [*(tokens[k] for k in KINDS), observer_in(item["observer"]), item["observer"]["output_tokens"],
            item["pushed_observations"], f"{item['fetched_observations']} ({item['fetched_after_push']})"]


_NUMBERS = [*(Column(KIND_HEADERS[k], ">") for k in KINDS), Column("OBSERVER IN", ">"), Column("OUT", ">"),
            Column("PUSHED OBS", ">"), Column("READ (AFTER PUSH)", ">")]


@cli.command("stats", short_help="Tokens memory injected and the observer spent; what was read.")
@click.option("--project", help="Only this project.")
@click.option("--session", "session_id", help="Only this Claude session id.")
@click.option("--since", help="Only sessions active since this date (YYYY-MM-DD[THH:MM] or an age like 7d).")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="Sessions listed, newest first.")
@json_option
@pass_app
def stats(app: AppContext, project: str | None, session_id: str | None, since: str | None, limit: int, as_json: bool) -> None:
    """What memory costs and what it is used for, per project and per session: tokens put into
    Claude's context by kind (the SessionStart digest; prompt, file and command pushes; full
    records fetched through the MCP get_observations), tokens the observer's model spent (as the
    SDK reports them), the observations pushed, and how many the agent then read in full.
    Injected tokens are estimates (characters / 4)."""
    conn = app.db()
    require_session(conn, session_id)
    report = costs.usage(conn, project=project, session_id=session_id, since_ms=parse_when(since, "--since"))
    today = budget.state(conn, app.config.observer_daily_tokens)
    bill = costs.per_thousand_events(report["total"]["observer"], app.config.observer_prices)
    if as_json:
        emit_json({**report, "sessions": report["sessions"][:limit], "observer_today": today, "observer_per_1000_events": bill})
        return
    click.echo(("budget reached: " if today["reached"] else "") + budget.describe(today)
               + (f" (at {local_stamp(today['reached_at_epoch'])})" if today["reached_at_epoch"] else ""))
    if bill is not None:
        click.echo(describe_bill(bill, report["total"]["observer"]["echoes_refused"]))
    if not report["sessions"]:
        click.echo("nothing injected and no observer runs recorded" + (" for that filter" if project or session_id or since else ""))
        return
    heading("per project (injected tokens are estimates: characters / 4)")
    echo_table([Column("PROJECT"), Column("SESSIONS", ">"), *_NUMBERS],
               [[p["project"] or "-", p["sessions"], *_row(p)] for p in report["projects"]])
    click.echo()
    shown = report["sessions"][:limit]
    heading(f"per session, newest first ({len(shown)} of {len(report['sessions'])})")
    echo_table([Column("SESSION"), Column("LAST"), *_NUMBERS],
               [[s["session_id"] or paint("(no session)", dim=True), local_stamp(s["last_epoch"] or None), *_row(s)]
                for s in shown])
