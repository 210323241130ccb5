"""The click group every command joins, and what the commands of one run share: the settings
and the database (opened on first use), one-line errors, JSON output."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import click

from claude_mem import __version__
from claude_mem import settings as settings_mod

if TYPE_CHECKING:
    import sqlite3


class AppContext:
    """Lazily loaded configuration and database, shared by the commands of one run."""

    def __init__(self) -> None:
        self._config: settings_mod.Config | None = None
        self._conn: sqlite3.Connection | None = None
        self.refused: str | None = None  # why the database was refused, once said

    @property
    def config(self) -> settings_mod.Config:
        if self._config is None:
            try:
                self._config = settings_mod.load(strict=True)
            except settings_mod.SettingsError as exc:
                raise click.ClickException(f"bad setting: {exc}") from None
        return self._config

    def db(self, create: bool = False):
        """The migrated database; without `create`, a missing one is an error (exit 1)."""
        if self._conn is None:
            import os

            from claude_mem.store.db import SchemaTooNewError, connect

            config = self.config
            if not create and not os.path.exists(config.db_path):
                raise NotFound(f"no database at {config.db_path} yet (nothing captured; run `claude-mem install`)")
            config.ensure_dirs()
            try:
                self._conn = connect(config.db_path)
            except SchemaTooNewError as exc:
                self.refused = str(exc)
                raise click.ClickException(str(exc)) from None
        return self._conn

    def warn_if_npm_database(self) -> None:
        """A command that never opened the database still says, in one line, when the data dir
        holds the npm claude-mem's database instead of ours (the others said it as their error)."""
        if self._conn is not None or self.refused is not None:
            return
        import os

        from claude_mem.store.db import npm_database_at, npm_database_message

        path = self._config.db_path if self._config else os.path.join(settings_mod.data_dir_from_env(), "claude-mem.db")
        if npm_database_at(path):
            click.echo(f"warning: {npm_database_message(path)}", err=True)


class NotFound(click.ClickException):
    exit_code = 1


pass_app = click.make_pass_decorator(AppContext, ensure=True)


def emit_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False, default=str))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="claude-mem")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Persistent memory for Claude Code."""
    app = ctx.ensure_object(AppContext)
    ctx.call_on_close(app.warn_if_npm_database)


@cli.group("hook", hidden=True)
def hook_group() -> None:
    """The hook commands Claude Code and the Codex CLI run (`install` writes them; each reads the
    event's JSON on stdin and always exits 0). Plumbing: not for typing."""


def _hook_command(group: click.Group, name: str, event: str, *, hidden: bool) -> None:
    # entry.py runs a hook before click is imported; these are for --help and for a mistyped line.
    @group.command(name, hidden=hidden, help=f"Hook for the {event} event (reads its JSON on stdin).")
    @click.option("--host", type=click.Choice(["codex"]), help="The agent that runs it, when not Claude Code.")
    def command(host: str | None) -> None:
        from claude_mem.hooks import main as run_hook

        sys.exit(run_hook(name, host=host or ""))


def _hook_commands() -> None:
    from claude_mem.hosts.hook_table import HOOK_EVENTS

    for name, events in HOOK_EVENTS.items():
        _hook_command(hook_group, name, " / ".join(events), hidden=False)
        _hook_command(cli, name, " / ".join(events), hidden=True)  # as older installs wrote them


_hook_commands()

