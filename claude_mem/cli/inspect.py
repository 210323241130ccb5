"""Looking at what is stored: sessions, show, observations, summaries, the queue."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from claude_mem.cli.app import AppContext, NotFound, cli, emit_json, pass_app
from claude_mem.cli.format import Column, echo_fields, echo_table, heading, paint, status_colour
from claude_mem.cli.params import UsageProblem, json_option, parse_when
from claude_mem.cli.withheld import agent_safe, withheld_block
from claude_mem.kinds import OBSERVATION_TYPES
from claude_mem.store import injections, outages, overview, queue_rows, revisions
from claude_mem.store.memory_rows import list_observations, list_summaries, with_marks
from claude_mem.store.outages import describe
from claude_mem.store.overview import Timeline
from claude_mem.store.queue import QueueStatus
from claude_mem.store.reads import json_list, parse_ref
from claude_mem.store.rows import MarkedObservation, Prompt, StoredObservation, StoredSummary, as_dict
from claude_mem.text.clock import local_stamp
from claude_mem.text.shorten import cut


def require_session(conn: Any, session_id: str | None) -> None:
    """An unknown --session is a mistake worth saying, not an empty list."""
    if session_id and overview.find_sessions(conn, session_id)[:1] != [session_id]:
        raise NotFound(f"no session {session_id!r} (list them with `claude-mem sessions`)")


@cli.command("sessions")
@click.option("--project", help="Only this project.")
@click.option("--since", help="Only sessions active since this date (YYYY-MM-DD[THH:MM] or an age like 7d).")
@click.option("--until", help="Only sessions started before this date.")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many, newest first.")
@json_option
@pass_app
def sessions_list(app: AppContext, project: str | None, since: str | None, until: str | None, limit: int | None,
                  as_json: bool) -> None:
    """List captured sessions (Claude Code's and Codex's), newest first."""
    rows = overview.list_sessions(app.db(), project=project, since_ms=parse_when(since, "--since"),
                                  until_ms=parse_when(until, "--until", until=True), limit=limit)
    if as_json:
        emit_json(rows)
        return
    echo_table(
        [Column("SESSION"), Column("HOST"), Column("PROJECT"), Column("STATUS", colour=status_colour),
         Column("PROMPTS", ">"), Column("OBS", ">"), Column("SUMS", ">"), Column("STARTED"), Column("FIRST PROMPT", fit=True)],
        [(r["claude_session_id"], r["host"], r["project"], r["status"], r["prompt_counter"], r["observations"],
          r["summaries"], local_stamp(r["started_at_epoch"]), r["user_prompt"] or "") for r in rows],
        empty="no sessions match" if (project or since or until) else "no sessions captured yet")


@cli.command("show", short_help="A session in order, or one observation.")
@click.argument("ref")
@json_option
@pass_app
def show(app: AppContext, ref: str, as_json: bool) -> None:
    """Show one session (its prompts, observations and summaries in order) or one row.

    REF is a session id (or its first characters), an observation id (`12` or `obs:12`), a
    summary (`sum:3`) or a prompt (`prompt:5`), or a teammate's memory found on a shared Chroma
    server (`obs:12@laptop-b`), shown from what their installation shared.
    """
    kind, row_id, origin = parse_ref(ref) or ("", 0, None)
    if origin:
        _show_remote(app, kind, row_id, origin, as_json)
        return
    conn = app.db()
    parsed = parse_ref(ref, loose=True)
    if parsed:
        _show_row(conn, *parsed[:2], as_json)
        return
    matches = overview.find_sessions(conn, ref)
    if not matches:
        raise NotFound(f"no session or observation {ref!r} (list sessions with `claude-mem sessions`)")
    if len(matches) > 1:
        shown = ", ".join(matches[:3]) + (", ..." if len(matches) > 3 else "")
        raise UsageProblem(f"{ref!r} starts {len(matches)} session ids ({shown}); give more of the id")
    timeline = overview.session_timeline(conn, matches[0])
    assert timeline is not None
    outage, given = outages.for_session(conn, matches[0]), injections.for_session(conn, matches[0])
    if as_json:
        data = timeline.as_dict()
        for key in ("observations", "summaries"):
            data[key] = [agent_safe(row) for row in data[key]]
        emit_json({**data, "outage": outage, "injections": given})
    else:
        _show_session(timeline, outage, given)


def _show_row(conn: Any, kind: str, row_id: int, as_json: bool) -> None:
    row = overview.get_row(conn, kind, row_id)
    if row is None:
        raise NotFound(f"no {kind} {row_id} (list them with `claude-mem {kind}s`)")
    if isinstance(row, StoredObservation):
        [marked] = with_marks(conn, [row])
        kept = revisions.of(conn, row_id)
        if as_json:
            emit_json({"kind": kind, **agent_safe({**marked.as_dict(), "revisions": kept})})
        else:
            _show_observation(marked, kept)
    elif as_json:
        emit_json({"kind": kind, **agent_safe(as_dict(row))})
    elif isinstance(row, StoredSummary):
        _show_summary(row)
    else:
        _show_prompt(row)


def _show_remote(app: AppContext, kind: str, row_id: int, origin: str, as_json: bool) -> None:
    from claude_mem.cli.params import open_index
    from claude_mem.index.chroma import IndexUnavailable
    from claude_mem.recall import teammates
    from claude_mem.service.search import remote_record

    index = open_index(app.config, create=False)
    try:
        rec = remote_record(app.config, kind, row_id, origin, index=index, in_process=True)
    except (IndexUnavailable, LookupError) as exc:
        raise click.ClickException(str(exc)) from None
    if rec is None:
        raise NotFound(f"no {kind} {row_id} of {origin!r} on {index.location if index else 'the shared server'}")
    if as_json:
        emit_json(rec)
        return
    first, *rest = teammates.record_lines(rec, local_stamp(rec["created_at_epoch"]))
    heading(first.removeprefix("## "))
    for line in rest:
        click.echo(line)


def _show_session(t: Timeline, outage: dict[str, Any] | None, given: list[dict[str, Any]]) -> None:
    s = t.session
    heading(f"session {s.claude_session_id}")
    echo_fields([("project", s.project), ("status", paint(s.status, status_colour(s.status))),
                 ("started", local_stamp(s.started_at_epoch)), ("last activity", local_stamp(s.updated_at_epoch)),
                 ("cwd", s.cwd), ("synthesizer", s.synthesizer),
                 ("model outage", describe(outage, local_stamp) if outage else None)])
    numbers = sorted({p.prompt_number for p in t.prompts} | {m.observation.prompt_number for m in t.observations}
                     | {s.prompt_number for s in t.summaries})
    if not numbers:
        click.echo("\n(nothing stored for this session yet)")
    for n in numbers:
        click.echo()
        prompt = next((p for p in t.prompts if p.prompt_number == n), None)
        title = f"prompt #{n}" if n else "before the first prompt"
        when = local_stamp(prompt.created_at_epoch) if prompt else ""
        heading(f"{title}  {paint(when, dim=True)}".rstrip())
        if prompt:
            click.echo(f"  > {cut(prompt.prompt_text, 300)}")
        for marked in (m for m in t.observations if m.observation.prompt_number == n):
            o = marked.observation
            source = paint(" (heuristic)", dim=True) if o.source == "heuristic" else ""
            mark = paint(f" [{marked.mark}]", "yellow") if marked.mark else ""
            mark += paint(" [withheld]", "red") if o.withheld else ""
            click.echo(f"  obs:{o.id:<5} {paint(o.type.ljust(9), 'magenta')} {o.title}{source}{mark}")
        for m in (m for m in t.summaries if m.prompt_number == n):
            click.echo(f"  sum:{m.id:<5} {paint('summary', 'blue')}")
            echo_fields([("request", cut(m.request, 300) or None), ("completed", cut(m.completed, 300) or None),
                         ("learned", cut(m.learned, 300) or None), ("next steps", cut(m.next_steps, 300) or None)],
                        indent="    ")
    if given:
        click.echo()
        heading("given to Claude  " + paint("(injected tokens are estimates: characters / 4)", dim=True))
        for i in given:
            what = f"{i['kind']} {i['note']}".strip() if i["kind"] in ("file", "command") else i["kind"]
            refs = " ".join(i["refs"]) or "-"
            click.echo(f"  {local_stamp(i['created_at_epoch'])}  {what:<28} ~{i['tokens']:>5} tokens  {refs}")



def _echo_list(label: str, items: list[str]) -> None:
    if items:
        click.echo(paint(label, dim=True))
        for item in items:
            click.echo(f"  - {item}")


def _show_observation(marked: MarkedObservation, kept: list[dict[str, Any]]) -> None:
    o = marked.observation
    heading(f"obs:{o.id}  {o.title}")
    echo_fields([("type", o.type + (f" (model said {o.raw_type!r})" if o.raw_type else "")),
                 ("subtitle", o.subtitle or None), ("session", o.session_id), ("project", o.project),
                 ("prompt", f"#{o.prompt_number}"), ("source", o.source + (f" ({o.model})" if o.model else "")),
                 ("made from", ", ".join(json_list(o.provenance)) or None),
                 ("created", local_stamp(o.created_at_epoch)),
                 ("status", paint(marked.mark, "yellow") if marked.mark else "current")])
    withheld_block(o, "observation")
    if o.narrative:
        click.echo()
        click.echo(o.narrative)
    click.echo()
    _echo_list("facts", o.facts)
    _echo_list("concepts", o.concepts)
    _echo_list("files read", o.files_read)
    _echo_list("files modified", o.files_modified)
    _echo_revisions(kept)


def _echo_revisions(kept: list[dict[str, Any]]) -> None:
    """The versions edits replaced, newest edit first: when, by whom, what changed, what it said."""
    if not kept:
        return
    click.echo(paint("earlier versions (newest first; `claude-mem edit REF --undo` puts the latest back)", dim=True))
    for r in kept:
        changed = ", ".join("text" if f == "narrative" else f for f in r["changed"])
        click.echo(f"  {local_stamp(r['created_at_epoch'])}  edited by {r['author']}: {changed}")
        click.echo(paint(f"    was: [{r['type']}] {cut(r['title'], 100)}"
                         + (f" — {cut(r['narrative'], 160)}" if r["narrative"] and "narrative" in r["changed"] else ""), dim=True))


def _show_summary(m: StoredSummary) -> None:
    heading(f"sum:{m.id}  summary of prompt #{m.prompt_number}")
    echo_fields([("session", m.session_id), ("project", m.project),
                 ("source", m.source + (f" ({m.model})" if m.model else "")), ("created", local_stamp(m.created_at_epoch))])
    withheld_block(m, "summary")
    click.echo()
    echo_fields([(name.replace("_", " "), text or None) for name, text in m.written()])
    _echo_list("files read", m.files_read)
    _echo_list("files edited", m.files_edited)


def _show_prompt(p: Prompt) -> None:
    heading(f"prompt:{p.id}  prompt #{p.prompt_number} of {p.session_id}")
    echo_fields([("created", local_stamp(p.created_at_epoch))])
    click.echo()
    click.echo(p.prompt_text)
    if p.reply_text.strip():
        click.echo()
        heading("Claude's reply")
        click.echo(p.reply_text)


def _memory_filters(f: Callable[..., Any]) -> Callable[..., Any]:
    for decorator in reversed([
        click.option("--session", "session_id", help="Only this Claude session id."),
        click.option("--project", help="Only this project."),
        click.option("--since", help="Only from this date/time on (YYYY-MM-DD[THH:MM], local time, or an age like 7d)."),
        click.option("--until", help="Only before this date/time."),
        click.option("--file", help="Only those touching a file path containing this text."),
        click.option("--limit", type=click.IntRange(min=1), help="At most this many (the newest)."),
        json_option,
    ]):
        f = decorator(f)
    return f


def _filters(conn: Any, session_id: str | None, project: str | None, since: str | None, until: str | None,
             file: str | None, limit: int | None) -> dict[str, Any]:
    require_session(conn, session_id)
    return {"session_id": session_id, "project": project, "since_ms": parse_when(since, "--since"),
            "until_ms": parse_when(until, "--until", until=True), "file": file, "limit": limit, "newest_first": bool(limit)}


def _no_match(what: str, *given: Any) -> str:
    return f"no {what} match" if any(given) else f"no {what} stored yet"


@cli.command("observations", short_help="List observations (filters, --json).")
@_memory_filters
@click.option("--type", "type_", type=click.Choice(OBSERVATION_TYPES), help="Only this type.")
@pass_app
def observations_list(app: AppContext, session_id: str | None, project: str | None, since: str | None, until: str | None,
                      file: str | None, limit: int | None, as_json: bool, type_: str | None) -> None:
    """List stored observations, oldest first (`show ID` prints one in full)."""
    conn = app.db()
    rows = with_marks(conn, list_observations(conn, type_=type_,
                                              **_filters(conn, session_id, project, since, until, file, limit)))
    if limit:
        rows.reverse()
    if as_json:
        emit_json([agent_safe(m.as_dict()) for m in rows])
        return
    echo_table([Column("ID", ">"), Column("WHEN"), Column("TYPE"), Column("SOURCE"), Column("PROJECT"), Column("TITLE", fit=True)],
               [_observation_cells(m) for m in rows],
               empty=_no_match("observations", session_id, project, since, until, file, type_))


def _observation_cells(marked: MarkedObservation) -> tuple[Any, ...]:
    o = marked.observation
    return (o.id, local_stamp(o.created_at_epoch), o.type, o.source, o.project,
            o.title + (f" [{marked.mark}]" if marked.mark else "")
            + (" [withheld]" if o.withheld else ""))


@cli.command("summaries", short_help="List per-turn summaries (filters, --json).")
@_memory_filters
@pass_app
def summaries_list(app: AppContext, session_id: str | None, project: str | None, since: str | None, until: str | None,
                   file: str | None, limit: int | None, as_json: bool) -> None:
    """List per-turn session summaries, oldest first (`show sum:ID` prints one in full)."""
    conn = app.db()
    rows = list_summaries(conn, **_filters(conn, session_id, project, since, until, file, limit))
    if limit:
        rows.reverse()
    if as_json:
        emit_json([agent_safe(as_dict(s)) for s in rows])
        return
    echo_table([Column("ID", ">"), Column("WHEN"), Column("SESSION"), Column("#", ">"), Column("REQUEST", fit=True),
                Column("COMPLETED", fit=True)],
               [(s.id, local_stamp(s.created_at_epoch), s.session_id[:12], s.prompt_number, s.request, s.completed)
                for s in rows],
               empty=_no_match("summaries", session_id, project, since, until, file))


@cli.command("queue")
@click.option("--session", "session_id", help="Only this Claude session id.")
@click.option("--status", type=click.Choice([s.value for s in QueueStatus]), help="Only this status.")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many.")
@json_option
@pass_app
def queue_list(app: AppContext, session_id: str | None, status: str | None, limit: int | None, as_json: bool) -> None:
    """Show queued hook events and their processing status."""
    conn = app.db()
    require_session(conn, session_id)
    rows = queue_rows.list_rows(conn, session_id=session_id, status=QueueStatus(status) if status else None, limit=limit)
    if as_json:
        # The write guard's note on an event's output is the viewer's to show: the queue lists what was queued.
        emit_json([{k: v for k, v in as_dict(r).items() if k != "guard_note"} for r in rows])
        return
    echo_table([Column("ID", ">"), Column("STATUS", colour=status_colour), Column("#", ">"), Column("SESSION"), Column("EVENT"),
                Column("TRIES", ">"), Column("LAST ERROR", fit=True)],
               [(r.id, r.status, r.prompt_number, r.session_id[:12],
                 f"{r.tool_name}{' (failed)' if r.is_error else ''}" if r.kind == "tool" else "(end of turn)",
                 r.attempts, r.last_error or "") for r in rows],
               empty="the queue is empty" if not (session_id or status) else "no queued events match")
