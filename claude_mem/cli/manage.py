"""Changing what is stored: forget, prune, export, import, and the settings."""

from __future__ import annotations

import difflib
import functools
import os
import sys
from typing import Any

import click

from claude_mem import settings as settings_mod
from claude_mem.cli.app import AppContext, NotFound, cli, emit_json, pass_app
from claude_mem.cli.format import Column, echo_table, paint, plural
from claude_mem.cli.inspect import require_session
from claude_mem.cli.params import (
    UsageProblem,
    acting,
    create_db,
    dry_run_option,
    index_new_rows,
    json_option,
    open_index,
    parse_when,
    warn_index_error,
    yes_option,
)
from claude_mem.cli.progress import FORGET_INTERRUPTED, IMPORT_INTERRUPTED, Bar
from claude_mem.jsonfile import replaced_atomically
from claude_mem.store import forget as forget_mod
from claude_mem.store.reads import parse_ref
from claude_mem.text.clock import local_stamp

# --- forget and prune ----------------------------------------------------------------------------

vacuum_option = click.option("--vacuum/--no-vacuum", default=True, show_default=True,
                             help="After removing, compact the database so the forgotten text leaves the file too.")


# Count keys as forget names them (its tables) and as export/import do (the row kinds).
_NOUNS = {"sessions": "session", "prompts": "prompt", "observations": "observation", "summaries": "summary",
          "queued_events": "queued event", "raw_replies": "raw model reply"}


def _describe(counts: dict[str, int]) -> str:
    return ", ".join(plural(n, _NOUNS.get(k, k)) for k, n in counts.items() if n) or "nothing"


def _live_sessions(app: AppContext) -> dict[str, int]:
    from claude_mem.worker.spawn import list_workers

    return {w.session_id: w.pid for w in list_workers(app.config.workers_dir) if w.alive}


def _preview(conn: Any, planned: forget_mod.Plan, limit: int = 10) -> None:
    if planned.sessions:
        sessions = forget_mod.session_lines(conn, planned.sessions[:limit])
        echo_table([Column("SESSION"), Column("PROJECT"), Column("STARTED"), Column("FIRST PROMPT", fit=True)],
                   [(s.session_id, s.project, local_stamp(s.started_at_epoch), s.first_prompt) for s in sessions])
        if len(planned.sessions) > limit:
            click.echo(f"... and {len(planned.sessions) - limit} more session(s)")
        return
    if planned.observations:
        ids = planned.observations[:limit]
        lines = forget_mod.observation_lines(conn, ids)
        echo_table([Column("ID", ">"), Column("TYPE"), Column("PROJECT"), Column("TITLE", fit=True)],
                   [(o.id, o.type, o.project, o.title) for o in lines])
        if len(planned.observations) > limit:
            click.echo(f"... and {len(planned.observations) - limit} more observation(s)")


def _apply(app: AppContext, planned: forget_mod.Plan, *, yes: bool, vacuum: bool, as_json: bool) -> None:
    """The dry run, or the removal from SQLite and the index together, then compaction."""
    conn = app.db()
    counts = planned.counts()
    if not yes:
        if as_json:
            emit_json({"dry_run": True, "counts": counts, "sessions": planned.sessions, "prompts": planned.prompts,
                       "observations": planned.observations, "summaries": planned.summaries})
            return
        click.echo(f"would forget {_describe(counts)}:")
        _preview(conn, planned)
        click.echo(paint("dry run: nothing was removed; run again with --yes to forget these", "yellow"))
        return
    with Bar("forgetting", as_json, interrupted=FORGET_INTERRUPTED) as bar:
        outcome = forget_mod.forget(conn, planned, open_index(app.config, create=False), progress=bar.progress)
        if vacuum:
            bar.note("compacting the database (VACUUM)")
        compact_error = forget_mod.compact(conn) if vacuum else None
    if as_json:
        emit_json({"dry_run": False, "counts": outcome.counts, "index_error": outcome.index_error,
                   "vacuumed": vacuum and compact_error is None, "vacuum_error": compact_error})
        return
    click.echo(f"forgot {_describe(outcome.counts)}")
    if outcome.index_error:
        click.echo(paint(f"warning: {outcome.index_error}; the semantic index drops these documents once it can be used"
                         " again (`claude-mem doctor --fix`)", "yellow", err=True), err=True)
    if compact_error:
        click.echo(paint(f"warning: could not compact the database ({compact_error}); forgotten text may stay in its free"
                         " pages until the next forget or prune", "yellow", err=True), err=True)
    elif vacuum:
        click.echo("database compacted")


def _refs(values: tuple[str, ...]) -> list[tuple[str, int]]:
    refs = []
    for value in values:
        ref = parse_ref(value, loose=True)
        if ref is None and "@" in value:
            raise UsageProblem(f"{value!r} is a teammate's memory: only the installation that recorded it can forget it")
        if ref is None:
            raise UsageProblem(f"{value!r} is not a row id; use an observation id like 12 or obs:12 (or sum:3, prompt:5)")
        refs.append(ref[:2])
    return refs


@cli.command("forget", short_help="Remove memories (only shown unless --yes).")
@click.argument("ids", nargs=-1)
@click.option("--session", "session_id", help="Forget this whole session.")
@click.option("--project", help="Forget everything of this project.")
@click.option("--before", help="Forget what is older than this date (YYYY-MM-DD[THH:MM], local time, or an age like 90d).")
@yes_option
@dry_run_option
@vacuum_option
@json_option
@pass_app
def forget(app: AppContext, ids: tuple[str, ...], session_id: str | None, project: str | None, before: str | None,
           yes: bool, dry_run: bool, vacuum: bool, as_json: bool) -> None:
    """Remove memories from the database, its keyword index and the semantic index together.

    Name observations by id (12 or obs:12; also sum:3, prompt:5), or a scope: --session, --project,
    --before (which combine). Without --yes, only lists what would go.
    """
    yes = acting(yes, dry_run)
    refs = _refs(ids)
    if refs and (session_id or project or before):
        raise UsageProblem("give either ids or --session/--project/--before, not both")
    if not refs and not (session_id or project or before):
        raise UsageProblem("say what to forget: observation ids, --session ID, --project NAME or --before DATE")
    before_ms = parse_when(before, "--before")
    conn = app.db()
    live = _live_sessions(app)
    try:
        planned = forget_mod.plan(conn, refs=refs, session_id=session_id, project=project, before_ms=before_ms,
                                  keep_sessions=live if before_ms is not None else ())
    except forget_mod.ForgetError as exc:
        raise NotFound(f"{exc} (nothing was forgotten)") from None
    busy = [s for s in planned.sessions if s in live]
    if busy:
        raise click.ClickException(f"session {busy[0]} has a live worker (pid {live[busy[0]]}); forget it once the worker"
                                   " has finished (`claude-mem workers`)")
    if planned.is_empty():
        raise NotFound("nothing to forget: no stored rows match")
    _apply(app, planned, yes=yes, vacuum=vacuum, as_json=as_json)


@cli.command("prune", short_help="Forget what is older than retention_days.")
@click.option("--before", help="Forget what is older than this instead: an age like 90d, or a date (as forget --before).")
@click.option("--days", type=click.IntRange(min=1), hidden=True)  # older versions' spelling of --before Nd
@yes_option
@dry_run_option
@vacuum_option
@json_option
@pass_app
def prune(app: AppContext, before: str | None, days: int | None, yes: bool, dry_run: bool, vacuum: bool, as_json: bool) -> None:
    """Forget everything older than the retention_days setting, or than --before (only shown
    unless --yes).

    Sessions with a live worker keep their session row; their old rows still go.
    """
    yes = acting(yes, dry_run)
    if before is None and (days or app.config.retention_days):
        before = f"{days or app.config.retention_days}d"
    if before is None:
        raise NotFound("retention_days is 0 (keep everything), so there is nothing to prune; set it with"
                       " `claude-mem settings set retention_days 90` or pass --before 90d")
    conn = app.db()
    planned = forget_mod.plan(conn, before_ms=parse_when(before, "--before"), keep_sessions=_live_sessions(app))
    if planned.is_empty():
        raise NotFound(f"nothing to prune: nothing is older than {before}")
    _apply(app, planned, yes=yes, vacuum=vacuum, as_json=as_json)


# --- export and import ---------------------------------------------------------------------------

@cli.command("export", short_help="Write memory as JSON Lines.")
@click.option("--project", help="Only this project's sessions.")
@click.option("--session", "session_id", help="Only this session.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write to this file (default: stdout).")
@json_option
@pass_app
def export(app: AppContext, project: str | None, session_id: str | None, output: str | None, as_json: bool) -> None:
    """Write sessions, prompts, observations and summaries as JSON Lines (a backup, or a move to
    another machine with `claude-mem import`)."""
    from claude_mem.store.transfer import write_export

    conn = app.db()
    require_session(conn, session_id)
    from claude_mem.store.overview import count_sessions

    if not count_sessions(conn, project=project, session_id=session_id):
        raise NotFound("nothing to export: no sessions match" if project else "nothing to export: no sessions stored yet")
    if output is None:
        counts = write_export(conn, sys.stdout, project=project, session_id=session_id)
    else:
        counts = _export_to_file(conn, output, project, session_id)
    if as_json and output is not None:
        emit_json({"path": os.path.abspath(output), "counts": counts})
        return
    described = _describe(counts)
    click.echo(f"exported {described}" + (f" to {output}" if output else ""), err=output is None)


def _export_to_file(conn: Any, output: str, project: str | None, session_id: str | None) -> dict[str, int]:
    from claude_mem.store.transfer import write_export

    # Memory is private: the file is created 0600, and appears whole or not at all.
    try:
        with replaced_atomically(output) as tmp:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                counts = write_export(conn, fh, project=project, session_id=session_id)
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror}") from None
    return counts


def _read_lines(path: str) -> list[str]:
    from claude_mem.text.storable import decode, split_lines

    try:
        if path == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(path, "rb") as fh:
                data = fh.read()
    except FileNotFoundError:
        raise NotFound(f"no file {path}") from None
    except OSError as exc:
        raise click.ClickException(f"cannot read {path}: {exc.strerror}") from None
    try:
        # Split at \n only: str.splitlines() breaks inside a line at U+2028 and its kin.
        return split_lines(decode(data))
    except UnicodeDecodeError as exc:
        # A file cut inside a character is named by its line, like one cut between characters.
        line = data.count(b"\n", 0, exc.start) + 1
        raise click.ClickException(f"{path}: line {line}: not UTF-8 text (is it a claude-mem export?); "
                                   "nothing was imported") from None


@cli.command("import", short_help="Add an export's rows, or the npm claude-mem's memories (idempotent).")
@click.argument("file")
@click.option("--project-map", "project_map", multiple=True, metavar="OLD=NEW",
              help="The npm claude-mem's database: file its project OLD under NEW (repeatable).")
@dry_run_option
@click.option("--no-index", is_flag=True, help="Do not add the imported rows to the semantic index now.")
@json_option
@pass_app
def import_(app: AppContext, file: str, project_map: tuple[str, ...], dry_run: bool, no_index: bool, as_json: bool) -> None:
    """Add the rows of an export file (FILE, or - for stdin) that are not here yet, or the
    memories of the npm claude-mem (FILE: its database, ~/.claude-mem/claude-mem.db, or its folder).

    An export: every line is checked first, and one bad line (named by its number) imports
    nothing. The npm claude-mem's database is read from a copy, never changed; its projects go
    to ours of the same folder name unless --project-map says otherwise, and the report says
    per project what was imported and what was skipped, and why.
    Importing the same file twice adds nothing the second time. --dry-run checks the file and
    counts what would be added.
    """
    from claude_mem.cli import npm_import

    npm_path = npm_import.npm_database_path(file)
    if npm_path is not None:
        npm_import.import_npm_database(app, npm_path, project_map, dry_run=dry_run, no_index=no_index, as_json=as_json)
        return
    if project_map:
        raise UsageProblem("--project-map applies to the npm claude-mem's database only; an export keeps its projects")
    from claude_mem.cli.marks import echo_marked, marks_counts
    from claude_mem.marks.apply import mark_added
    from claude_mem.store.marking import last_id
    from claude_mem.store.transfer import BadImportLine, import_lines
    from claude_mem.writes.checks import stated_row

    lines = _read_lines(file)
    conn = create_db(app)
    before = last_id(conn)
    with Bar("importing", as_json, interrupted=IMPORT_INTERRUPTED) as bar:
        try:
            result = import_lines(conn, lines, dry_run=dry_run, progress=bar.progress("adding rows"),
                                  stated=functools.partial(stated_row, limit=app.config.remember_chars))
        except BadImportLine as exc:
            raise click.ClickException(f"{file}: {exc}; nothing was imported") from None
        marks = mark_added(conn, before) if result.added["observation"] and not dry_run else []
        indexed, index_error = (None, None) if not result.total_added or dry_run or no_index else \
            index_new_rows(app.config, conn, bar.progress("indexing the new rows"))
    if as_json:
        emit_json({"dry_run": dry_run, "added": result.added, "already_present": result.present, "indexed": indexed,
                   "index_error": index_error, "marked": marks_counts(marks)})
        return
    added = _describe(result.added)
    present = sum(result.present.values())
    if not result.total_added:
        click.echo(f"nothing new: all {plural(present, 'row')} of {file} are already here")
        return
    click.echo(f"{'would import' if dry_run else 'imported'} {added}" + (f" ({present} already here)" if present else ""))
    echo_marked(marks)
    warn_index_error(index_error)


# --- settings ----------------------------------------------------------------------------------

def _load_settings() -> settings_mod.Config:
    # Not strict: a broken value must not stop `settings set` from repairing it.
    config = settings_mod.load(strict=False)
    for warning in config.warnings:
        click.echo(paint(f"warning: {warning}", "yellow", err=True), err=True)
    return config


def _setting(key: str) -> settings_mod.Setting:
    setting = settings_mod.SETTINGS.get(key)
    if setting is None:
        close = difflib.get_close_matches(key, settings_mod.SETTINGS, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UsageProblem(f"unknown setting {key!r}; {hint}`claude-mem settings list` shows them all")
    return setting


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _show_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(_show_value(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


@cli.group("settings", short_help="Get, set and list settings.")
def settings_group() -> None:
    """Read and change settings (<data dir>/settings.json; CLAUDE_MEM_<KEY> variables win)."""


@settings_group.command("list")
@json_option
def settings_list(as_json: bool) -> None:
    """Every setting with its value and where the value comes from (default, file or env)."""
    config = _load_settings()
    rows = [{"key": s.key, "value": config.values[s.key], "source": config.sources[s.key], "default": s.default,
             "env": s.env, "help": s.help} for s in settings_mod.SETTINGS.values()]
    if as_json:
        emit_json(rows)
        return
    echo_table([Column("KEY"), Column("VALUE", fit=True), Column("SOURCE", colour=lambda v: None if v == "default" else "cyan"),
                Column("MEANING", fit=True)],
               [(r["key"], _show_value(r["value"]) or '""', r["source"], r["help"]) for r in rows])


@settings_group.command("get")
@click.argument("key")
@json_option
def settings_get(key: str, as_json: bool) -> None:
    """Print one setting's value."""
    setting = _setting(key)
    config = _load_settings()
    if as_json:
        emit_json({"key": key, "value": config.values[key], "source": config.sources[key]})
        return
    click.echo(_show_value(config.values[setting.key]))


@settings_group.command("set")
@click.argument("key")
@click.argument("value")
@json_option
def settings_set(key: str, value: str, as_json: bool) -> None:
    """Check VALUE and write it to settings.json (lists: comma-separated or a JSON list)."""
    setting = _setting(key)
    if not _utf8(value):  # argv's undecodable bytes: settings.json could not hold them
        raise UsageProblem(f"the value for {key} is not UTF-8 text; nothing was changed")
    config = settings_mod.load(strict=False)
    try:
        settings_mod.read_settings_file(config.settings_path)
    except settings_mod.SettingsError as exc:
        raise click.ClickException(f"{exc}; fix or remove the file, then try again") from None
    _load_settings()  # its warnings: what else is wrong in the file
    try:
        parsed = settings_mod.write_setting(config, key, value)
    except settings_mod.SettingsError as exc:
        raise UsageProblem(f"{exc}; nothing was changed") from None
    except OSError as exc:
        raise click.ClickException(f"cannot write {config.settings_path}: {exc.strerror}") from None
    overridden = bool(os.environ.get(setting.env))
    if as_json:
        emit_json({"key": key, "value": parsed, "path": config.settings_path, "overridden_by_env": overridden})
        return
    click.echo(f"{key} = {_show_value(parsed)} (in {config.settings_path})")
    if overridden:
        click.echo(paint(f"warning: {setting.env} is set and wins over the file", "yellow", err=True), err=True)

