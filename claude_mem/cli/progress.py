"""Progress bars for the long commands (reindex, import, reprocess, forget, prune), on a terminal
only: click's progress bar on stderr, saying what is being done, how far it is, the rate and the
time left. Piped or redirected output, `--json`, NO_COLOR and TERM=dumb get no bar at all: the
command's one final line, as before.
"""

from __future__ import annotations

import os
import sys
from types import TracebackType
from typing import Any

import click

from claude_mem.progress import Progress, duration

INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C (128 + SIGINT)


def bars_wanted(as_json: bool) -> bool:
    if as_json or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return sys.stderr.isatty()
    except ValueError:  # a closed stream
        return False


class Bar:
    """One bar, drawn once there is a total: `update(job)` with a Progress's `as_dict()` (work in
    another process), or `progress()` for work in this one. A no-op where bars are not wanted."""

    def __init__(self, label: str, as_json: bool, unit: str = "rows") -> None:
        self.label = label
        self.unit = unit
        self.enabled = bars_wanted(as_json)
        self._bar: Any = None
        self._what = ""
        self._note = ""

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.render_finish()  # the line ends; what the command says next starts on its own

    def complete(self) -> None:
        """The work is done: the bar shows its whole length (the last step may not have been seen)."""
        if self._bar is not None and self._bar.length and self._bar.pos < self._bar.length:
            self._note = ""
            self._bar.update(self._bar.length - self._bar.pos)

    def progress(self, what: str | None = None) -> Progress:
        """A Progress that redraws this bar at each step."""
        return Progress(what or self.label, on_change=lambda p: self.update(p.as_dict()))

    def update(self, job: dict[str, Any]) -> None:
        total, done = int(job.get("total") or 0), int(job.get("done") or 0)
        if not self.enabled or not total:
            return
        what = job.get("what") or self.label
        if self._bar is not None and (what != self._what or done < self._bar.pos):
            self._bar.render_finish()  # another job (the service's catch-up done, its rebuild begun): a bar of its own
            self._bar = None
        if self._bar is None:
            self._what = what
            self._bar = click.progressbar(length=total, label=what, file=sys.stderr, show_pos=True, show_percent=True,
                                          show_eta=False, item_show_func=lambda _: self._note)
            self._bar.render_progress()
        self._bar.length = total
        parts = []
        if job.get("rate_per_s"):
            parts.append(f"{job['rate_per_s']:,.0f} {self.unit}/s")
        if job.get("seconds_left") is not None:
            parts.append(f"{duration(job['seconds_left'])} left")
        self._note = ", ".join(parts)
        step = min(done, total) - self._bar.pos
        if step > 0:
            self._bar.update(step)
        else:
            self._bar.render_progress()


def say_interrupted(message: str) -> None:
    """Ctrl-C: one line on what was kept and how to go on, then exit status 130."""
    from claude_mem.cli.format import paint

    click.echo(paint(f"interrupted: {message}", "yellow", err=True), err=True)
    raise SystemExit(INTERRUPTED)
