"""`claude-mem import` of the npm claude-mem's database: its options and the per-project report.
The import itself is `claude_mem.store.npm_import`."""

from __future__ import annotations

import os

import click

from claude_mem.cli.app import AppContext, emit_json
from claude_mem.cli.format import Column, echo_table, plural
from claude_mem.cli.params import UsageProblem, create_db, index_new_rows, warn_index_error
from claude_mem.cli.progress import IMPORT_INTERRUPTED, Bar
from claude_mem.store.npm_import import NAME, NpmImport, NpmImportError, import_npm, is_sqlite_file

_COLUMNS = {"session": "SESSIONS", "prompt": "PROMPTS", "observation": "OBSERVATIONS", "summary": "SUMMARIES"}


def npm_database_path(file: str) -> str | None:
    """FILE as an SQLite database to import (its folder is accepted too), or None for an export."""
    if file == "-":
        return None
    path = os.path.join(file, "claude-mem.db") if os.path.isdir(file) else file
    return path if is_sqlite_file(path) else None


def parse_project_map(values: tuple[str, ...]) -> dict[str, str]:
    mapping: dict[str, str] = {}
    for value in values:
        old, sep, new = value.partition("=")
        old, new = old.strip(), new.strip()
        if not sep or not old or not new:
            raise UsageProblem(f"--project-map {value!r}: write OLD=NEW, e.g. --project-map webapp=github.com/acme/webapp")
        if old in mapping and mapping[old] != new:
            raise UsageProblem(f"--project-map names {old!r} twice")
        mapping[old] = new
    return mapping


def import_npm_database(app: AppContext, path: str, project_map: tuple[str, ...], *, dry_run: bool, no_index: bool,
                         as_json: bool) -> None:
    from claude_mem.cli.marks import echo_marked, marks_counts
    from claude_mem.marks.apply import mark_added
    from claude_mem.store.marking import last_id

    mapping = parse_project_map(project_map)
    conn = create_db(app)
    before = last_id(conn)
    with Bar("importing", as_json, interrupted=IMPORT_INTERRUPTED) as bar:
        try:
            imported = import_npm(conn, path, project_map=mapping, workdir=app.config.data_dir, dry_run=dry_run,
                                            progress=bar.progress("adding rows"))
        except NpmImportError as exc:
            raise click.ClickException(f"{exc}; nothing was imported") from None
        result = imported.result
        marks = mark_added(conn, before) if result.added["observation"] and not dry_run else []
        indexed, index_error = (None, None) if not result.total_added or dry_run or no_index else \
            index_new_rows(app.config, conn, bar.progress("indexing the new rows"))
    if as_json:
        emit_json({"dry_run": dry_run, "source": path, "format": "claude-mem-npm", "schema_version": imported.schema_version,
                   "added": result.added, "already_present": result.present, "indexed": indexed, "index_error": index_error,
                   "projects": [{"peer_project": p.peer, "project": p.project, "why": p.why, "added": p.added,
                                 "already_present": p.present,
                                 "skipped": [{"kind": s.kind, "ref": s.ref, "reason": s.reason} for s in p.skipped]}
                                for p in imported.projects.values()], "marked": marks_counts(marks)})
        return
    _report(imported, dry_run)
    echo_marked(marks)
    warn_index_error(index_error)


def _report(imported: NpmImport, dry_run: bool) -> None:
    schema = f", schema {imported.schema_version}" if imported.schema_version else ""
    click.echo(f"{NAME}{schema}: {imported.path}")
    heads = [Column("PEER PROJECT"), Column("FILED UNDER"), *(Column(head, ">") for head in _COLUMNS.values()),
             Column("ALREADY HERE", ">"), Column("SKIPPED", ">"), Column("WHY", fit=True)]
    echo_table(heads, [(p.peer, p.project, *(p.added[k] for k in _COLUMNS), sum(p.present.values()), len(p.skipped), p.why)
                       for p in imported.projects.values()], empty="the database holds no memories")
    for skip in imported.skipped:
        project = next(p.peer for p in imported.projects.values() if skip in p.skipped)
        click.echo(f"skipped {skip.ref} ({project}): {skip.reason}")
    result = imported.result
    present = sum(result.present.values())
    if not result.total_added:
        click.echo(f"nothing new: all {plural(present, 'row')} are already here" if present else "nothing to import")
        return
    added = ", ".join(plural(n, k) for k, n in result.added.items() if n)
    click.echo(f"{'would import' if dry_run else 'imported'} {added}" + (f" ({present} already here)" if present else ""))
