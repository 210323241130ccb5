"""Recall from the command line: `search`, `ask`, `reindex`, and `mcp` (the MCP server on stdio).

`search` calls the same search function as the MCP server and the viewer. Exit codes: 0 with
matches, 1 when nothing matched (or nothing is stored yet), 2 for bad input. `ask` answers with
the MCP tool's core (ask/answer.py); "I don't know" is an answer (exit 0).
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict
from typing import Any

import click

from claude_mem.cli.app import AppContext, NotFound, cli, emit_json, pass_app
from claude_mem.cli.format import Column, echo_table, paint
from claude_mem.cli.params import OneLineErrors, SearchModeChoice, UsageProblem, json_option, open_index, parse_when
from claude_mem.cli.progress import Bar, say_interrupted
from claude_mem.kinds import OBSERVATION_TYPES, SearchMode
from claude_mem.store.reads import ref
from claude_mem.text.clock import local_stamp

REINDEX_TIMEOUT_S = 3600.0  # a rebuild embeds every row: minutes at 100k observations
PROGRESS_POLL_S = 0.3  # how often a command asks the memory service how far its work is
_FILES_SHOWN = 2


@cli.command("search", cls=OneLineErrors)
@click.argument("query")
@click.option("--project", help="Only this project.")
@click.option("--type", "type_", type=click.Choice(OBSERVATION_TYPES), help="Only observations of this type.")
@click.option("--session", "session_id", help="Only this Claude session id.")
@click.option("--since", help="From this date/time on (2026-11-22, 2026-11-22T14:30, today, 30d).")
@click.option("--until", help="Before this date/time.")
@click.option("--file", help="Only memories touching a file path containing this text.")
@click.option("--limit", type=click.IntRange(1, 500), default=20, show_default=True, help="Most results.")
@click.option("--mode", type=SearchModeChoice(), default=SearchMode.HYBRID.value, show_default=True,
              help="hybrid: words and meaning; keyword: words only; semantic: meaning only.")
@json_option
@pass_app
def search_command(app: AppContext, query: str, project: str | None, type_: str | None, session_id: str | None,
                   since: str | None, until: str | None, file: str | None, limit: int, mode: SearchMode, as_json: bool) -> None:
    """Search observations, summaries and prompts by words and meaning."""
    from claude_mem.service.search import search_memory

    if not query.strip():
        raise UsageProblem("QUERY is empty: give some words to look for")
    since_ms, until_ms = parse_when(since, "--since"), parse_when(until, "--until", until=True)
    if since_ms is not None and until_ms is not None and since_ms >= until_ms:
        raise UsageProblem("--since must be before --until")
    conn = app.db()
    started = time.perf_counter()
    result = search_memory(app.config, conn, query, project=project, type_=type_, session_id=session_id, since_ms=since_ms,
                           until_ms=until_ms, file=file, limit=limit, mode=mode)
    elapsed_ms = (time.perf_counter() - started) * 1000
    note = result.note
    if as_json:
        emit_json({"query": query, "mode": result.mode, "note": note, "took_ms": round(elapsed_ms, 1),
                   "hits": [asdict(h) for h in result.hits]})
    else:
        if note:
            click.echo(paint(f"note: {note}", "yellow", err=True), err=True)
        if result.hits:
            from claude_mem.recall.views import superseded_notes

            notes = superseded_notes(conn, result.hits)
            rows = [(ref(h.kind, h.id, h.origin), local_stamp(h.created_at_epoch), h.kind_label(),
                     (paint("[withheld] ", "red") if h.withheld else "") + (h.title or h.snippet)
                     + (f" [{notes[h.id]}]" if h.id in notes and h.origin is None else ""),
                     ", ".join(h.provenance) or "-", _files(h.files)) for h in result.hits]
            echo_table([Column("REF"), Column("DATE"), Column("TYPE"), Column("TITLE", fit=True), Column("FROM"),
                        Column("FILES", fit=True)], rows)
            click.echo(paint(f"{len(result.hits)} result(s), {result.mode}, {elapsed_ms:.0f} ms."
                             " `claude-mem show REF` prints one in full.", dim=True))
    if not result.hits:
        raise NotFound(f"nothing matches {query!r}" + (" with these filters" if _filtered(project, type_, session_id, since,
                                                                                           until, file) else ""))


@cli.command("ask", cls=OneLineErrors)
@click.argument("question")
@click.option("--project", help="Only this project's memory (default: every project).")
@json_option
@pass_app
def ask_command(app: AppContext, question: str, project: str | None, as_json: bool) -> None:
    """Answer a question from memory in a few sentences, with the refs it rests on: written by the
    observer's model when one is usable, else the best sentences of the memories found."""
    from claude_mem.ask.answer import ask
    from claude_mem.ask.model import answer_with_model

    if not question.strip():
        raise UsageProblem("QUESTION is empty: ask something")
    conn = app.db()
    answer = ask(app.config, conn, question, project=project, model=answer_with_model)
    if as_json:
        emit_json(answer.as_json())
        return
    if answer.note:
        click.echo(paint(f"note: {answer.note}", "yellow", err=True), err=True)
    click.echo(answer.answer)
    if answer.refs:
        click.echo(paint(f"{answer.source} answer from {len(answer.refs)} memor{'y' if len(answer.refs) == 1 else 'ies'}"
                         + (f", {answer.tokens:,} tokens" if answer.tokens else "")
                         + ". `claude-mem show REF` prints one in full.", dim=True))


def _files(files: list[str]) -> str:
    shown = ", ".join(files[:_FILES_SHOWN])
    return shown + (f" +{len(files) - _FILES_SHOWN}" if len(files) > _FILES_SHOWN else "")


def _filtered(*values: str | None) -> bool:
    return any(v for v in values)


@cli.command("reindex", cls=OneLineErrors)
@json_option
@pass_app
def reindex_command(app: AppContext, as_json: bool) -> None:
    """Rebuild the semantic index from the database (the source of truth).

    On a terminal a bar shows how far it is. Ctrl-C keeps what is rebuilt; running it again goes
    on from there."""
    from claude_mem.index.chroma import IndexUnavailable
    from claude_mem.service import client

    config = app.config
    if not config.semantic_index:
        raise click.ClickException("the semantic index is off (setting semantic_index); turn it on to build it")
    conn = app.db()
    in_service = True
    try:
        with Bar("rebuilding the index", as_json) as bar:
            # The memory service indexes; the rebuild runs there, between its own catch-ups. Without
            # one that answers, this process rebuilds (the file lock keeps the two apart).
            try:
                done = _rebuild_in_service(config, bar)
                counts, location, seconds, resumed = done, done["location"], done["seconds"], done.get("resumed", False)
            except client.ServiceError as exc:
                raise click.ClickException(str(exc)) from None
            except client.ServiceUnavailable:
                in_service = False
                index = open_index(config, create=True, conn=conn)
                assert index is not None
                started = time.perf_counter()
                try:
                    counts = index.reindex(conn, bar.progress())
                except IndexUnavailable as exc:
                    raise click.ClickException(str(exc)) from None
                location, seconds, resumed = index.location, time.perf_counter() - started, index.resumed
            bar.complete()
    except KeyboardInterrupt:
        say_interrupted("the memory service goes on rebuilding the index in the background (`claude-mem status` shows"
                        " how far); `claude-mem reindex` again waits for it" if in_service else
                        "the rows rebuilt so far stay indexed and searchable; `claude-mem reindex` again goes on from"
                        " there (the memory service also catches up by itself)")
    if as_json:
        emit_json({"location": location, "seconds": round(seconds, 2), "resumed": bool(resumed),
                   **{k: v for k, v in counts.items() if k in ("observation", "summary", "prompt")}})
        return
    click.echo(f"{'finished the interrupted rebuild: ' if resumed else ''}reindexed {counts['observation']} observations,"
               f" {counts['summary']} summaries and {counts['prompt']} prompts into {location} in {seconds:.1f} s")


def _rebuild_in_service(config: Any, bar: Bar) -> dict[str, Any]:
    """Ask the memory service to rebuild, drawing its progress meanwhile. A rebuild already under
    way there (a `reindex` stopped by Ctrl-C) is joined, not started again."""
    from claude_mem.service import client

    answer: dict[str, Any] = {}

    def ask() -> None:
        try:
            answer["done"] = client.call(config.data_dir, "reindex", {"settings": client.index_settings(config)},
                                         timeout_s=REINDEX_TIMEOUT_S, wait=True)
        except Exception as exc:  # handed to the main thread, which reports it
            answer["error"] = exc

    asking = threading.Thread(target=ask, name="reindex", daemon=True)
    asking.start()
    while asking.is_alive():
        asking.join(PROGRESS_POLL_S)
        if bar.enabled and asking.is_alive():
            try:
                job = client.call(config.data_dir, "progress", timeout_s=PROGRESS_POLL_S, start=False)["job"]
            except (client.ServiceUnavailable, client.ServiceError, TypeError):
                continue  # still loading, or a service from before this op: no bar, the same result
            if job:
                bar.update(job)
    if "error" in answer:
        raise answer["error"]
    return answer["done"]


@cli.command("mcp")
def mcp_command() -> None:
    """Serve memory to Claude Code as an MCP server on stdio (search, timeline, get_observations,
    recent_sessions, ask, and remember, the one that writes). `claude-mem install` registers it."""
    # entry.py runs it before click is loaded; this is the same server, for `claude-mem mcp` reached here.
    from claude_mem.mcp.shim import serve

    raise SystemExit(serve())
