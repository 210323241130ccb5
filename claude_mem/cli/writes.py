"""Telling and correcting memory: `remember` (a memory you state, stored at once) and `edit` (an
observation's title, text, facts or type, or in $EDITOR; `--undo` puts the previous version back).
Each parses, calls its one core function in claude_mem/writes/, and says what was done."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from claude_mem.cli.app import AppContext, NotFound, cli, emit_json, pass_app
from claude_mem.cli.marks import echo_marked, marks_counts
from claude_mem.cli.params import OneLineErrors, UsageProblem, create_db, json_option
from claude_mem.kinds import OBSERVATION_TYPES, Source
from claude_mem.store import writes as stored
from claude_mem.store.writes import Fields
from claude_mem.writes.checks import Missing, Refused, observation_id
from claude_mem.writes.remember import DEFAULT_TYPE

FORM_TEXT = "--- text ---"
FORM_FACTS = '--- facts (one a line, each starting with "- ") ---'


def _ref(value: str) -> int:
    try:
        return observation_id(value)
    except Refused as exc:
        raise UsageProblem(str(exc)) from None


@cli.command("remember", cls=OneLineErrors, short_help="Keep a memory you state (stored at once, no model).")
@click.argument("text", nargs=-1, required=True)
@click.option("--project", help="File it under this project (default: the project of the current folder).")
@click.option("--type", "type_", type=click.Choice(OBSERVATION_TYPES), default=DEFAULT_TYPE, show_default=True,
              help="What kind of memory: discovery for a fact, decision for a choice made.")
@click.option("--file", "files", multiple=True, metavar="PATH",
              help="A file it is about (repeatable): it comes back when the file is read or edited.")
@click.option("--supersedes", metavar="REF", help="An observation this one replaces (obs:12): marked superseded by it.")
@json_option
@pass_app
def remember_command(app: AppContext, text: tuple[str, ...], project: str | None, type_: str, files: tuple[str, ...],
                     supersedes: str | None, as_json: bool) -> None:
    """Store TEXT (its words, or - to read it from stdin) as a memory of the project, stated by
    you: searchable at once, first in the next session's digest, pushed like any memory.

    `<private>` spans and secrets are removed first, as the hooks remove them; text over the
    remember_chars setting is refused. Without --supersedes the marking rules run on it."""
    from claude_mem.project import project_for
    from claude_mem.writes.remember import remember

    words = sys.stdin.read() if text == ("-",) else " ".join(text)
    old = _ref(supersedes) if supersedes else None
    conn = create_db(app)
    try:
        done = remember(app.config, conn, words, project=project or project_for(os.getcwd()), type_=type_,
                        files=[os.path.abspath(f) for f in files], supersedes=old, author=Source.PERSON)
    except Refused as exc:
        raise UsageProblem(str(exc)) from None
    except Missing as exc:
        raise NotFound(str(exc)) from None
    if as_json:
        emit_json({"ref": f"obs:{done.id}", "id": done.id, "project": done.project, "created": done.created,
                   "supersedes": f"obs:{done.superseded}" if done.superseded else None, "marked": marks_counts(done.marks)})
        return
    click.echo(f"{'remembered' if done.created else 'already remembered'} as obs:{done.id} in {done.project}")
    if done.superseded:
        click.echo(f"obs:{done.superseded} is now superseded by obs:{done.id}")
    echo_marked(done.marks)


@cli.command("edit", cls=OneLineErrors, short_help="Change an observation, or undo the last change.")
@click.argument("ref")
@click.option("--title", help="Its new title.")
@click.option("--text", help="Its new text (the narrative).")
@click.option("--fact", "facts", multiple=True, help="Its facts, all of them (repeatable; --fact '' removes them).")
@click.option("--type", "type_", type=click.Choice(OBSERVATION_TYPES), help="Its new type.")
@click.option("--undo", is_flag=True, help="Put back the version before the last edit.")
@json_option
@pass_app
def edit_command(app: AppContext, ref: str, title: str | None, text: str | None, facts: tuple[str, ...],
                 type_: str | None, undo: bool, as_json: bool) -> None:
    """Edit observation REF (obs:12), the observer's too; with no option, in $EDITOR. The version
    before is kept: `show REF` lists the versions, --undo puts the previous one back. Search
    follows at once."""
    from claude_mem.writes import edit as edit_mod

    row_id = _ref(ref)
    given = title is not None or text is not None or bool(facts) or type_ is not None
    if undo and given:
        raise UsageProblem("--undo restores the previous version: give it alone")
    conn = app.db()
    try:
        if undo:
            done = edit_mod.undo(app.config, conn, row_id)
        else:
            fields = {"title": title, "text": text, "facts": list(facts) if facts else None, "type_": type_} if given \
                else _in_editor(conn, row_id)
            done = edit_mod.edit(app.config, conn, row_id, **fields, author=Source.PERSON) if fields is not None \
                else edit_mod.Edited(row_id)
    except Refused as exc:
        raise UsageProblem(str(exc)) from None
    except Missing as exc:
        raise NotFound(f"{exc} (list them with `claude-mem observations`)") from None
    if as_json:
        emit_json({"ref": f"obs:{row_id}", "changed": done.changed, "undone": done.undone})
    elif done.undone:
        click.echo(f"obs:{row_id}: the version before the last edit is back ({', '.join(_named(done.changed))})")
    elif done.changed:
        click.echo(f"obs:{row_id}: changed {', '.join(_named(done.changed))}; `claude-mem edit {ref} --undo` puts it back")
    else:
        click.echo(f"obs:{row_id}: nothing changed")


def _named(fields: list[str]) -> list[str]:
    return ["text" if f == "narrative" else f for f in fields]


def _in_editor(conn: Any, row_id: int) -> dict[str, Any] | None:
    """The fields as the person left them in $EDITOR; None when the editor was closed unsaved."""
    found = stored.fields(conn, row_id)
    if found is None:
        raise NotFound(f"no observation obs:{row_id} (list them with `claude-mem observations`)")
    edited = click.edit(render_form(row_id, found), extension=".txt", require_save=True)
    return None if edited is None else parse_form(edited)


def render_form(row_id: int, row: Fields) -> str:
    facts = "".join(f"- {fact}\n" for fact in row.facts)
    return (f"# Editing obs:{row_id} ({row.project}). Lines starting with # are left out.\n"
            f"# Save and close to apply; close without saving to change nothing.\n"
            f"# type: one of {', '.join(OBSERVATION_TYPES)}\n"
            f"type: {row.type}\ntitle: {row.title}\n\n{FORM_TEXT}\n{row.narrative}\n\n{FORM_FACTS}\n{facts}")


def parse_form(text: str) -> dict[str, Any]:
    """The fields of a form `render_form` wrote and a person edited."""
    fields: dict[str, Any] = {"title": None, "type_": None, "text": None, "facts": []}
    section = "head"
    body: list[str] = []
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        if line.strip() in (FORM_TEXT, FORM_FACTS):
            section = "text" if line.strip() == FORM_TEXT else "facts"
        elif section == "head" and line.partition(":")[0].strip() in ("type", "title"):
            name, _, value = line.partition(":")
            fields["type_" if name.strip() == "type" else "title"] = value.strip()
        elif section == "text":
            body.append(line)
        elif section == "facts" and line.strip().startswith("- "):
            fields["facts"].append(line.strip()[2:])
        elif line.strip() and section != "text":
            raise UsageProblem(f"the form has a line it cannot place: {line.strip()[:60]!r}; nothing was changed")
    fields["text"] = "\n".join(body).strip() or None
    return fields
