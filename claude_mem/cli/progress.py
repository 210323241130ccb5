"""Progress bars for the long commands (reindex, import, reprocess, forget, prune), on a terminal
only: click's progress bar on stderr, saying what is being done, how far it is, the rate and the
time left. Piped or redirected output, `--json`, NO_COLOR and TERM=dumb get no bar at all: the
command's one final line, as before.
"""

from __future__ import annotations

import os
import sys
import time
from types import TracebackType
from typing import Any

import click

from claude_mem.progress import Progress, duration

INTERRUPTED = 130  # the exit status of a command stopped by Ctrl-C (128 + SIGINT)
REDRAW_S = 0.1
# What Ctrl-C during an import leaves, by its phase (Bar's `interrupted`).
IMPORT_INTERRUPTED = {
    "adding rows": "nothing was imported (an import is all or nothing); run the same `claude-mem import` again",
    "indexing the new rows": "the rows are imported and searchable by keyword; the memory service adds the rest of them to"
                             " the semantic index by itself (`claude-mem doctor --fix` does it now)",
}
# ... and during forget or prune.
FORGET_INTERRUPTED = {
    "forgetting rows": "nothing was forgotten (the rows go all at once or not at all); run the same command again",
    "dropping their documents from the semantic index": "the rows are forgotten; their documents leave the semantic index by"
                                                        " themselves (the memory service's catch-up, or `claude-mem doctor --fix`)",
    "compacting the database (VACUUM)": "the rows are forgotten; the database was not compacted, so their text may stay in its"
                                        " free pages until the next forget or prune",
}


def bars_wanted(as_json: bool) -> bool:
    if as_json or os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return sys.stderr.isatty()
    except ValueError:  # a closed stream
        return False


class Bar:
    """One bar, drawn once there is a total: `update(job)` with a Progress's `as_dict()` (work in
    another process), or `progress(what)` for work in this one; a new `what` starts a new line. A
    no-op where bars are not wanted. `interrupted` maps a `what` to what Ctrl-C during it leaves
    and how to go on: said in one line, then exit status 130."""

    def __init__(self, label: str, as_json: bool, unit: str = "rows", interrupted: dict[str, str] | None = None) -> None:
        self.label = label
        self.unit = unit
        self.enabled = bars_wanted(as_json)
        self.interrupted = interrupted or {}
        self.phase = label  # the `what` of the latest progress, drawn or not
        self._bar: Any = None
        self._what = ""
        self._note = ""
        self._drawn = 0.0

    def __enter__(self) -> Bar:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.render_finish()  # the line ends; what the command says next starts on its own
        if kind is KeyboardInterrupt and self.phase in self.interrupted:
            say_interrupted(self.interrupted[self.phase])

    def note(self, what: str) -> None:
        """A step that cannot say how far it is (VACUUM): its name on a line of its own."""
        self.phase = what
        if self._bar is not None:
            self._bar.render_finish()
            self._bar = None
        if self.enabled:
            click.echo(f"{what}…", err=True)

    def complete(self) -> None:
        """The work is done: the bar shows its whole length (the last step may not have been seen)."""
        if self._bar is not None and self._bar.length and self._bar.pos < self._bar.length:
            self._note = ""
            self._bar.update(self._bar.length - self._bar.pos)

    def progress(self, what: str | None = None) -> Progress:
        """A Progress that redraws this bar at each step."""
        self.phase = what or self.label
        return Progress(self.phase, on_change=lambda p: self.update(p.as_dict()))

    def update(self, job: dict[str, Any]) -> None:
        total, done = int(job.get("total") or 0), int(job.get("done") or 0)
        if not self.enabled or not total:
            return
        what = self.phase = job.get("what") or self.label
        now = time.monotonic()
        if self._bar is not None and what == self._what and done < total and now - self._drawn < REDRAW_S:
            return  # steps come per row at times: the terminal needs a few frames a second, not thousands
        self._drawn = now
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
        if job.get("seconds_left") is not None and done < total:
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
