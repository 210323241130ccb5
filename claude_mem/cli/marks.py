"""Marks from the command line: which observations are no longer current, and why, and which
decisions conflict; running the rules over what is stored (a dry run unless --yes, like
`forget`); a person's own marks and undos."""

from __future__ import annotations

from typing import Any

import click

from claude_mem.cli.app import AppContext, NotFound, cli, emit_json, pass_app
from claude_mem.cli.format import Column, echo_table, paint, plural
from claude_mem.cli.params import UsageProblem, acting, dry_run_option, json_option, yes_option
from claude_mem.store import marks, titles
from claude_mem.store import writes as stored
from claude_mem.store.db import transaction
from claude_mem.store.reads import parse_ref
from claude_mem.text.clock import local_stamp


def marks_counts(made: list[Any]) -> dict[str, int]:
    found: dict[str, int] = {}
    for m in made:
        found[m.rule] = found.get(m.rule, 0) + 1
    return found


def echo_marked(made: list[Any]) -> None:
    """One line: how many older observations the new ones make no longer current."""
    if made:
        rules = ", ".join(f"{n} {rule}" for rule, n in sorted(marks_counts(made).items()))
        click.echo(f"marked {plural(len(made), 'older observation')} as no longer current ({rules});"
                   " `claude-mem marks` lists them")


def _observation_id(value: str) -> int:
    ref = parse_ref(value, loose=True)
    if ref is None or ref[0] != "observation":
        raise UsageProblem(f"{value!r} is not an observation; give its id like 12 or obs:12")
    return ref[1]


def _require(conn: Any, *ids: int) -> None:
    for row_id in ids:
        if not stored.existing(conn, [row_id]):
            raise NotFound(f"no observation obs:{row_id}")


@cli.group("marks", invoke_without_command=True, short_help="Which observations are no longer current, and why.")
@click.option("--project", help="Only this project's marks.")
@click.option("--undone", is_flag=True, help="Also the marks a person took back.")
@click.option("--limit", type=click.IntRange(min=1), default=50, show_default=True, help="Most marks shown.")
@json_option
@click.pass_context
def marks_group(ctx: click.Context, project: str | None, undone: bool, limit: int, as_json: bool) -> None:
    """List the marks: older observations another one superseded or repeated (newest mark first),
    who said so (model, rule, person) and why. Subcommands change them."""
    if ctx.invoked_subcommand is not None:
        return
    app = ctx.ensure_object(AppContext)
    rows = marks.list_marks(app.db(), project=project, include_undone=undone, limit=limit)
    if as_json:
        emit_json([{"old": f"obs:{r['old_id']}", "new": f"obs:{r['new_id']}", "relation": r["relation"], "author": r["author"],
                    "rule": r["rule"], "reason": r["reason"], "project": r["project"], "marked_at_epoch": r["created_at_epoch"],
                    "undone_at_epoch": r["undone_at_epoch"], "old_title": r["old_title"], "new_title": r["new_title"]}
                   for r in rows])
        return
    echo_table([Column("OLD"), Column("NEW"), Column("HOW"), Column("BY"), Column("MARKED"), Column("WHY", fit=True),
                Column("OLD TITLE", fit=True)],
               [(f"obs:{r['old_id']}", f"obs:{r['new_id']}", r["relation"] + (" (undone)" if r["undone_at_epoch"] else ""),
                 r["author"] + (f":{r['rule']}" if r["rule"] and r["author"] == "rule" else ""), local_stamp(r["created_at_epoch"]),
                 r["reason"], r["old_title"]) for r in rows],
               empty="no marks: every observation is current")


@marks_group.command("apply")
@click.option("--project", help="Only this project's observations.")
@yes_option
@dry_run_option
@json_option
@pass_app
def marks_apply(app: AppContext, project: str | None, yes: bool, dry_run: bool, as_json: bool) -> None:
    """Run the marking rules over every stored observation, oldest first: repeats fold under their
    newest copy, failures later passed or fixed are resolved, changed values superseded. A dry
    run unless --yes; marks already there (and ones a person undid) are kept as they are."""
    from claude_mem.marks.apply import mark_all

    yes = acting(yes, dry_run)
    conn = app.db()
    applied = mark_all(conn, project=project, dry_run=not yes)
    if as_json:
        emit_json({"dry_run": not yes, "checked": applied.checked, "marked": applied.counts(),
                   "marks": [{"old": f"obs:{m.old_id}", "new": f"obs:{m.new_id}", "relation": m.relation, "rule": m.rule,
                              "reason": m.reason} for m in applied.marks]})
        return
    if not applied.marks:
        click.echo(f"checked {plural(applied.checked, 'observation')}: nothing new to mark")
        return
    old_titles = titles.by_id(conn, [m.old_id for m in applied.marks])
    echo_table([Column("OLD"), Column("NEW"), Column("RULE"), Column("WHY", fit=True), Column("OLD TITLE", fit=True)],
               [(f"obs:{m.old_id}", f"obs:{m.new_id}", m.rule, m.reason, old_titles.get(m.old_id, "")) for m in applied.marks])
    verb = "marked" if yes else "would mark"
    click.echo(f"{verb} {plural(len(applied.marks), 'observation')} of {applied.checked} checked")
    if not yes:
        click.echo(paint("dry run: nothing was marked; run again with --yes to record these", "yellow"))


@marks_group.command("add")
@click.argument("old")
@click.argument("new")
@click.option("--duplicate", is_flag=True, help="NEW is the same claim again (fold OLD under it), not a change.")
@click.option("--conflicts", is_flag=True,
              help="OLD and NEW are rival claims, neither replacing the other: both stay current, shown together.")
@click.option("--reason", default="", help="Why, in a few words.")
@json_option
@pass_app
def marks_add(app: AppContext, old: str, new: str, duplicate: bool, conflicts: bool, reason: str, as_json: bool) -> None:
    """Say that observation NEW makes observation OLD no longer true (e.g. `marks add 12 40`), or
    with --conflicts that the two disagree and neither is newer."""
    old_id, new_id = _observation_id(old), _observation_id(new)
    if old_id == new_id:
        raise UsageProblem("an observation cannot supersede or conflict with itself")
    if duplicate and conflicts:
        raise UsageProblem("--duplicate and --conflicts say different things: give one")
    conn = app.db()
    _require(conn, old_id, new_id)
    relation = "duplicates" if duplicate else "conflicts" if conflicts else "supersedes"
    if conflicts:
        old_id, new_id = min(old_id, new_id), max(old_id, new_id)  # a conflict has no newer side: kept in id order
    with transaction(conn):
        marks.add(conn, old_id, new_id, relation, "person", reason=reason)
    if as_json:
        emit_json({"old": f"obs:{old_id}", "new": f"obs:{new_id}", "relation": relation, "author": "person"})
        return
    said = {"duplicates": "a repeat of", "conflicts": "in conflict with", "supersedes": "superseded by"}[relation]
    click.echo(f"obs:{old_id} is now {said} obs:{new_id}")


@marks_group.command("undo")
@click.argument("old")
@click.argument("new", required=False)
@json_option
@pass_app
def marks_undo(app: AppContext, old: str, new: str | None, as_json: bool) -> None:
    """Take back the marks on observation OLD (only NEW's, when given): it is current again, no
    longer in conflict, and no rule marks that pair again. A conflict is undone from either side."""
    old_id = _observation_id(old)
    new_id = _observation_id(new) if new else None
    conn = app.db()
    _require(conn, old_id)
    with transaction(conn):
        undone = marks.undo(conn, old_id, new_id)
        if new_id is not None and not undone and marks.undo(conn, new_id, old_id, relation="conflicts"):
            undone = [new_id]
    if not undone:
        raise NotFound(f"obs:{old_id} has no mark" + (f" by obs:{new_id}" if new_id else "") + " to undo")
    if as_json:
        emit_json({"old": f"obs:{old_id}", "undone": [f"obs:{n}" for n in undone]})
        return
    click.echo(f"obs:{old_id} is current again (undid the mark by {', '.join(f'obs:{n}' for n in undone)})")
