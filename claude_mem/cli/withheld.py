"""What the write guard withheld (issue 47), for a person: `withheld` lists it, `show` prints it
whole and marked (withheld_block), `release` gives it back to memory (recorded on the row, logged),
`release --undo` withholds it again.

A command an agent runs through its shell (Claude Code sets CLAUDECODE=1 there) is not a person
looking: it is shown that a memory is withheld and where it came from, never the withheld text,
and cannot release it.
"""

from __future__ import annotations

import json
import os
from typing import Any

import click

from claude_mem.cli.app import AppContext, NotFound, cli, emit_json, pass_app
from claude_mem.cli.format import Column, echo_table, paint
from claude_mem.cli.params import UsageProblem, json_option
from claude_mem.logs import log_line
from claude_mem.store import withheld
from claude_mem.store.db import transaction
from claude_mem.store.reads import parse_ref, ref
from claude_mem.store.rows import StoredObservation, StoredSummary
from claude_mem.text.clock import local_stamp
from claude_mem.text.shorten import cut
from claude_mem.writes.index import released_text

AGENT_SHELLS = ("CLAUDECODE",)  # set in the shell an agent runs commands in


def run_by_agent() -> bool:
    """This command runs in an agent's shell, not a person's terminal."""
    return any(os.environ.get(name) for name in AGENT_SHELLS)


def withheld_block(row: StoredObservation | StoredSummary, kind: str) -> None:
    """A memory's guard note, and (for a person) the text it withheld as written, marked."""
    if not row.guard_note:
        return
    released = row.released_at_epoch
    state = f"released {local_stamp(released)}" if released else "WITHHELD from what memory gives unasked"
    click.echo()
    click.echo(paint(f"write guard: {state}", "yellow" if released else "red"))
    click.echo(f"  {row.guard_note}")
    if run_by_agent():
        click.echo("  (its text is shown to a person only: run `claude-mem show` in your own terminal)")
        return
    written = withheld.withheld_text(row.withheld_text)
    pieces = written.get("withheld") if isinstance(written.get("withheld"), list) else []
    if released:
        click.echo(paint("  as the guard had kept it:", dim=True))
    elif pieces:
        click.echo(paint("  what was withheld, as written:", dim=True))
    for piece in pieces or [v for k, v in written.items() if k != "withheld"]:
        for line in (piece if isinstance(piece, list) else [piece]):
            click.echo(paint("  ▌ ", "red") + str(line).replace("\n", "\n" + paint("  ▌ ", "red")))
    if not released:
        click.echo(paint(f"  `claude-mem release {ref(kind, row.id)}` gives it back to memory, as written.", dim=True))


def agent_safe(row: dict[str, Any]) -> dict[str, Any]:
    """A memory's JSON (its record's `as_dict`) as an agent may see it: without the withheld text."""
    return {**row, "withheld_text": ""} if run_by_agent() and row.get("withheld_text") else row


@cli.command("withheld", short_help="What the write guard withheld, and from where.")
@click.option("--project", help="Only this project.")
@click.option("--released", is_flag=True, help="Also the memories a person released.")
@json_option
@pass_app
def withheld_list(app: AppContext, project: str | None, released: bool, as_json: bool) -> None:
    """List the memories the write guard withheld (text from a file, a page or a command's output
    that reads as instructions to an AI assistant): never given to Claude unasked until a person
    releases them. `claude-mem show REF` prints one whole."""
    conn = app.db()
    rows = []
    for kind in withheld.TABLES:
        rows += [{"ref": ref(kind, r["id"]), **r} for r in withheld.listed(conn, kind, project=project, released=released)]
    rows.sort(key=lambda r: -r["created_at_epoch"])
    if as_json:
        emit_json([{**r, "provenance": json.loads(r["provenance"] or "[]")} for r in rows])
        return
    echo_table([Column("REF"), Column("WHEN"), Column("PROJECT"), Column("FROM"), Column("STATE"), Column("NOTE", fit=True)],
               [(r["ref"], local_stamp(r["created_at_epoch"]), r["project"], ", ".join(json.loads(r["provenance"] or "[]")) or "-",
                 "released" if r["released_at_epoch"] else "withheld", cut(r["guard_note"], 400)) for r in rows],
               empty="nothing is withheld" + (f" in {project}" if project else ""))


@cli.command("release", short_help="Give a withheld memory back to memory (a person's call).")
@click.argument("ref_text", metavar="REF")
@click.option("--undo", is_flag=True, help="Withhold it again, with the guard's text.")
@pass_app
def release_command(app: AppContext, ref_text: str, undo: bool) -> None:
    """Release a memory the write guard withheld (REF: obs:12, 12 or sum:3): the text it withheld
    comes back as written, and pushes, the digest and the memory file may give it again. The
    release is recorded on the memory (`show` says when) and in the log."""
    parsed = parse_ref(ref_text, loose=True)
    if parsed is None or parsed[0] not in withheld.TABLES:
        raise UsageProblem(f"{ref_text!r} is not an observation or a summary; give obs:12, 12 or sum:3")
    if run_by_agent():
        raise click.ClickException("a person releases what the write guard withheld: run this in your own terminal")
    kind, row_id, _ = parsed
    conn = app.db()
    try:
        with transaction(conn):
            row = withheld.release(conn, kind, row_id, undo=undo)
    except withheld.NotWithheld as exc:
        raise click.ClickException(f"{ref(kind, row_id)} cannot be {'withheld again' if undo else 'released'}: {exc}") from None
    if row is None:
        raise NotFound(f"no {ref(kind, row_id)}")
    log_line(app.config.logs_dir, "release", f"{ref(kind, row_id)} {'withheld again' if undo else 'released'} by a person")
    released_text(app.config, kind, row_id)
    click.echo(f"{ref(kind, row_id)} {'withheld again' if undo else 'released: memory may give it again'}")
