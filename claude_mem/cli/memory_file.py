"""`memory-file`: the project's memory section in CLAUDE.md or AGENTS.md (setting memory_file)."""

from __future__ import annotations

import os

import click

from claude_mem.cli.app import AppContext, cli, pass_app
from claude_mem.cli.params import dry_run_option
from claude_mem.memory_file.section import MemoryFileError
from claude_mem.memory_file.write import is_off, update


@cli.command("memory-file")
@click.option("--project-dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="A folder of the project (default: the current one); the file goes at its root.")
@dry_run_option
@pass_app
def memory_file(app: AppContext, project_dir: str | None, dry_run: bool) -> None:
    """Write the project's memory between two marker lines of the file the memory_file setting
    names (CLAUDE.md, AGENTS.md, ...), at the project's root; the rest of the file is kept as it is.
    Each session's end rewrites it too, while the setting is on. --dry-run prints the file as it
    would be."""
    config = app.config
    if is_off(config.memory_file):
        raise click.ClickException("the memory_file setting is off: `claude-mem settings set memory_file CLAUDE.md`"
                                   " (or AGENTS.md) turns it on")
    start = os.path.abspath(project_dir or os.getcwd())
    try:
        outcome = update(app.db(), setting=config.memory_file, lines=config.memory_file_lines, start_dir=start,
                         data_dir=config.data_dir, dry_run=dry_run)
    except MemoryFileError as exc:
        raise click.ClickException(str(exc)) from None
    if outcome is None:
        click.echo("nothing remembered for this project yet: no file written")
        return
    if dry_run:
        click.echo(outcome.text, nl=False)
        click.echo(f"(dry run: {outcome.path} would {'change' if outcome.changed else 'stay as it is'})", err=True)
        return
    state = f"wrote {outcome.section_lines} lines of memory" if outcome.changed else "unchanged"
    click.echo(f"{outcome.path}: {state}")
