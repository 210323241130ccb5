"""What the commands share besides formatting: dates typed by people, usage errors on one line, and the semantic index when there is one."""

from __future__ import annotations

import re
import time
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

import click

from claude_mem.kinds import SearchMode

if TYPE_CHECKING:
    from claude_mem.cli.app import AppContext
    from claude_mem.index.semantic_index import Index
    from claude_mem.settings import Config

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_AGE = re.compile(r"^(\d+)\s*([mhdw])$")
_AGE_MS = {"m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 7 * 86_400_000}


class UsageProblem(click.ClickException):
    """Bad input, reported on one line (click's UsageError prints the whole usage block)."""

    exit_code = 2


class OneLineErrors(click.Command):
    """Bad options reported as one `Error:` line (exit 2), not click's whole usage block."""

    def make_context(self, info_name: str | None, args: list[str], parent: click.Context | None = None,
                     **extra: object) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:
            raise UsageProblem(f"{exc.format_message()} (see `claude-mem {info_name} --help`)") from None


# One spelling and one meaning per flag, whatever the command (a command's docstring says what its
# JSON holds or what its preview lists).
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON, for scripts.")
dry_run_option = click.option("--dry-run", is_flag=True, help="Show what would change; change nothing.")
# The commands that remove or mark memory preview unless told: --yes does it, --dry-run (or neither)
# only shows it.
yes_option = click.option("--yes", is_flag=True, help="Do it (without it, only show what would change, as --dry-run).")


class SearchModeChoice(click.Choice):
    """hybrid, keyword or semantic; fts and vector, their names before 0.2.0, are still taken
    (scripts and habits), though help lists only the three."""

    def __init__(self) -> None:
        super().__init__([mode.value for mode in SearchMode])

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> SearchMode:
        try:
            return SearchMode(value)
        except ValueError:
            return SearchMode(super().convert(value, param, ctx))  # click's own error, naming the choices


def acting(yes: bool, dry_run: bool) -> bool:
    """Whether a command of --yes and --dry-run is to act, or only show (a usage error for both)."""
    if yes and dry_run:
        raise UsageProblem("--yes and --dry-run say opposite things: give one")
    return yes


def parse_when(value: str | None, name: str, *, until: bool = False) -> int | None:
    """A date, a date and time (local unless it says otherwise) or an age like 30d, as epoch ms.
    With `until`, a bare day (2026-11-22, today, yesterday) means the end of that day, so
    `--since D --until D` is that whole day (as the MCP tools read it)."""
    if value is None:
        return None
    text = value.strip()
    day: date | None = None
    if text.lower() in ("today", "yesterday"):
        day = date.today() - timedelta(days=1 if text.lower() == "yesterday" else 0)
    elif _DAY.match(text):
        try:
            day = date.fromisoformat(text)
        except ValueError:
            day = None  # reported below with the other bad dates
    if day is not None:
        day += timedelta(days=1 if until else 0)
        return int(datetime.combine(day, datetime.min.time()).astimezone().timestamp() * 1000)
    age = _AGE.match(text.lower())
    if age:
        return int(time.time() * 1000) - int(age.group(1)) * _AGE_MS[age.group(2)]
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise UsageProblem(f"{name}: {value!r} is not a date; use 2026-11-22, 2026-11-22T14:30, today, yesterday"
                           " or an age like 30d") from None
    if parsed.tzinfo is None:
        parsed = parsed.astimezone()  # local time, as a person typing a date means it
    return int(parsed.astimezone(UTC).timestamp() * 1000)


def open_index(config: Config, *, create: bool, conn: Any = None) -> Index | None:
    """The semantic index, or None when the setting is off; without `create`, also None when the
    embedded one was never built (a read-only command must not create an empty one). With
    `conn`, the store is judged first (embedders.choose), as the memory service would: rows
    indexed here then go where the service will look for them."""
    from claude_mem.index.embedders import choose
    from claude_mem.index.semantic_index import Index, readable_index

    if create:
        if config.semantic_index and conn is not None:
            choose(config, conn)
        return Index(config) if config.semantic_index else None
    return readable_index(config)[0]


def index_new_rows(config: Config, conn: Any, progress: Any = None) -> tuple[dict[str, int] | None, str | None]:
    """Add the rows the semantic index lacks (after an import): (counts indexed, why it could not)."""
    from claude_mem.index.chroma import IndexUnavailable

    if not config.semantic_index:
        return None, None
    try:
        return open_index(config, create=True, conn=conn).index_missing(conn, progress), None  # type: ignore[union-attr]
    except IndexUnavailable as exc:
        return None, str(exc)


def create_db(app: AppContext) -> Any:
    """The database, created if need be (the commands that add rows)."""
    try:
        return app.db(create=True)
    except OSError as exc:
        raise click.ClickException(f"cannot create the data dir {app.config.data_dir}: {exc.strerror}") from None


def warn_index_error(index_error: str | None) -> None:
    from claude_mem.cli.format import paint

    if index_error:
        click.echo(paint(f"warning: {index_error}; the rows are stored and searchable by keyword, and are added to the"
                         " semantic index by `claude-mem doctor --fix`", "yellow", err=True), err=True)
