"""Looking at what is stored: sessions, the queue."""

from __future__ import annotations

import click

from claude_mem.cli import AppContext, cli, emit_json, pass_app
from claude_mem.store import queue as queue_mod
from claude_mem.store import records


@cli.command("sessions")
@click.option("--project", help="Only this project.")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many, newest first.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def sessions_list(app: AppContext, project: str | None, limit: int | None, as_json: bool) -> None:
    """List captured Claude Code sessions."""
    rows = records.list_sessions(app.db(), project=project, limit=limit)
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        click.echo(f"{r['claude_session_id']}  {r['status']:<9} prompts={r['prompt_counter']:<3} {r['project']}")


@cli.command("queue")
@click.option("--session", "session_id", help="Only this Claude session id.")
@click.option("--status", type=click.Choice(["pending", "processing", "done", "skipped"]))
@click.option("--limit", type=click.IntRange(min=1))
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def queue_list(app: AppContext, session_id: str | None, status: str | None, limit: int | None, as_json: bool) -> None:
    """Show queued hook events and their processing status."""
    rows = queue_mod.list_rows(app.db(), session_id=session_id, status=status, limit=limit)
    if as_json:
        emit_json(rows)
        return
    for r in rows:
        what = r["tool_name"] if r["kind"] == "tool" else "(end of turn)"
        err = f"  {r['last_error']}" if r.get("last_error") else ""
        click.echo(f"{r['id']:>6} {r['status']:<10} #{r['prompt_number']:<3} {what}{err}")
