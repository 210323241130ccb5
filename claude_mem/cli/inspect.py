"""Looking at what is stored: sessions, the queue."""

from __future__ import annotations

from datetime import UTC

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


def _parse_when(value: str | None, name: str) -> int | None:
    """A date (YYYY-MM-DD) or datetime (ISO 8601) as epoch ms."""
    if value is None:
        return None
    from datetime import datetime

    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date like 2026-11-22 or 2026-11-22T14:30", param_hint=name) from None
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()  # local time, as a person typing a date means it
    return int(parsed.astimezone(UTC).timestamp() * 1000)


def _memory_filters(f):
    for decorator in reversed([
        click.option("--session", "session_id", help="Only this Claude session id."),
        click.option("--project", help="Only this project."),
        click.option("--since", help="Only from this date/time on (YYYY-MM-DD[THH:MM])."),
        click.option("--until", help="Only before this date/time."),
        click.option("--file", help="Only those touching a file path containing this text."),
        click.option("--limit", type=click.IntRange(min=1), help="At most this many (newest)."),
        click.option("--json", "as_json", is_flag=True, help="Print JSON."),
    ]):
        f = decorator(f)
    return f


@cli.command("observations")
@_memory_filters
@click.option("--type", "type_", type=click.Choice(["decision", "bugfix", "feature", "refactor", "discovery", "change"]))
@pass_app
def observations_list(app: AppContext, session_id, project, since, until, file, limit, as_json, type_) -> None:
    """List stored observations, oldest first."""
    from claude_mem.store.memories import list_observations

    rows = list_observations(app.db(), session_id=session_id, project=project, type_=type_,
                             since_ms=_parse_when(since, "--since"), until_ms=_parse_when(until, "--until"),
                             file=file, limit=limit, newest_first=bool(limit))
    if limit:
        rows.reverse()
    if as_json:
        emit_json(rows)
        return
    for o in rows:
        flag = " (heuristic)" if o["source"] == "heuristic" else ""
        click.echo(f"#{o['id']:<5} {o['created_at'][:16]} {o['type']:<9} {o['title']}{flag}")


@cli.command("summaries")
@_memory_filters
@pass_app
def summaries_list(app: AppContext, session_id, project, since, until, file, limit, as_json) -> None:
    """List per-turn session summaries, oldest first."""
    from claude_mem.store.memories import list_summaries

    rows = list_summaries(app.db(), session_id=session_id, project=project, since_ms=_parse_when(since, "--since"),
                          until_ms=_parse_when(until, "--until"), file=file, limit=limit, newest_first=bool(limit))
    if limit:
        rows.reverse()
    if as_json:
        emit_json(rows)
        return
    for s in rows:
        click.echo(f"#{s['id']:<5} {s['created_at'][:16]} {s['session_id'][:12]} #{s['prompt_number']} {s['request'][:80]}")
        if s["completed"]:
            click.echo(f"       completed: {s['completed'][:120]}")


@cli.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def status(app: AppContext, as_json: bool) -> None:
    """Data dir, counts, queue, workers, the model, the last error."""
    import os

    from claude_mem.logs import read_tail
    from claude_mem.worker.processes import list_workers

    config = app.config
    info: dict = {"data_dir": config.data_dir, "database": config.db_path, "model": config.model,
                  "synthesizer": config.synthesizer}
    if os.path.exists(config.db_path):
        conn = app.db()
        info["database_bytes"] = sum(os.path.getsize(p) for p in (config.db_path, config.db_path + "-wal") if os.path.exists(p))
        info["counts"] = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                          for t in ("sdk_sessions", "user_prompts", "observations", "session_summaries", "raw_replies")}
        info["queue"] = queue_mod.counts_by_status(conn)
        outages = [dict(r) for r in conn.execute(
            "SELECT claude_session_id, observer_error, observer_error_at_epoch FROM sdk_sessions"
            " WHERE observer_error IS NOT NULL ORDER BY observer_error_at_epoch DESC LIMIT 5")]
        info["model_outages"] = outages
    else:
        info["database_bytes"] = 0
        info["counts"] = {}
        info["queue"] = {}
        info["model_outages"] = []
    info["workers"] = [w.as_dict() for w in list_workers(config.workers_dir) if w.alive]
    errors = [line for line in read_tail(config.logs_dir, 200) if "error" in line]
    info["last_error"] = errors[-1] if errors else None
    if as_json:
        emit_json(info)
        return
    click.echo(f"data dir     {info['data_dir']}")
    click.echo(f"database     {info['database']} ({info['database_bytes'] / 1024:.0f} KiB)")
    if info["counts"]:
        c = info["counts"]
        click.echo(f"stored       {c['sdk_sessions']} sessions, {c['user_prompts']} prompts, {c['observations']} observations,"
                   f" {c['session_summaries']} summaries")
        q = info["queue"]
        click.echo(f"queue        {q['pending']} pending, {q['processing']} processing, {q['done']} done, {q['skipped']} skipped")
    click.echo(f"model        {info['model']} (synthesizer: {info['synthesizer']})")
    for o in info["model_outages"]:
        click.echo(f"  outage     session {o['claude_session_id'][:12]}: {o['observer_error']}")
    click.echo(f"workers      {len(info['workers'])} live")
    if info["last_error"]:
        click.echo(f"last error   {info['last_error']}")
