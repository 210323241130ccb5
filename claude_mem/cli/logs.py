"""`claude-mem logs`: print or follow the main log or a session's worker log."""

from __future__ import annotations

import json
import os
from collections.abc import Callable

import click

from claude_mem.cli.app import AppContext, NotFound, cli, emit_json, pass_app
from claude_mem.cli.format import paint
from claude_mem.cli.params import json_option
from claude_mem.logs import follow as follow_log


def _log_path(app: AppContext, session_id: str | None) -> str:
    if session_id is None:
        return os.path.join(app.config.logs_dir, "claude-mem.log")
    from claude_mem.worker.spawn import session_key

    return os.path.join(app.config.logs_dir, f"worker-{session_key(session_id)}.log")


def _paint_log(line: str) -> str:
    lowered = line.lower()
    return paint(line, "red" if "error" in lowered else ("yellow" if "warning" in lowered else None))


@cli.command("logs", short_help="Print or follow (-f) the log.")
@click.option("-n", "--lines", "n", type=click.IntRange(min=0), default=40, show_default=True, help="How many of the last lines.")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until Ctrl-C.")
@click.option("--session", "session_id", help="The log of this session's worker process instead of the main log.")
@json_option
@pass_app
def logs(app: AppContext, n: int, follow: bool, session_id: str | None, as_json: bool) -> None:
    """Print the end of claude-mem's log (hooks, workers) from <data dir>/logs/.

    With --json, the lines are printed as one JSON list, or as one JSON string per line with -f.
    """
    path = _log_path(app, session_id)
    try:
        fh = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 (kept open to follow)
    except FileNotFoundError:
        where = f"for session {session_id} " if session_id else ""
        raise NotFound(f"no log {where}yet at {path} (it is written once hooks or workers run)") from None
    except OSError as exc:
        raise click.ClickException(f"cannot read {path}: {exc.strerror}") from None
    text = fh.read()
    lines = text.splitlines()[-n:] if n else []
    if not follow:
        fh.close()
        if as_json:
            emit_json({"path": path, "lines": lines})
            return
    emit: Callable[[str], None] = (lambda line: click.echo(json.dumps(line, ensure_ascii=False))) if as_json else (
        lambda line: click.echo(_paint_log(line)))
    for line in lines:
        emit(line)
    if follow:
        follow_log(fh, path, emit)
