"""How far a long job is: what it does, how much of it is done, and from that its rate and the
time left. Core, no click: the memory service keeps one per indexing job for `status` and the
viewer, and the commands draw theirs as a bar on a terminal (cli/progress.py).

Standard library only.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

MIN_ELAPSED_S = 1.0  # a rate measured over less than this says little


class Progress:
    """Counts of one job, safe to read from another thread. `on_change` is called after each
    step (from the thread doing the work)."""

    def __init__(self, what: str, total: int = 0, on_change: Callable[[Progress], None] | None = None) -> None:
        self.what = what
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self.on_change = on_change
        self.stopping = False  # asked to stop: the work ends after its current step, what it did kept
        self._lock = threading.Lock()

    def grow(self, n: int) -> None:
        """More work found (a job that learns its size as it goes)."""
        with self._lock:
            self.total += n
        self._changed()

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change(self)

    def rate(self) -> float | None:
        """Units per second so far, once there is enough to say."""
        elapsed = time.monotonic() - self.started
        return self.done / elapsed if self.done and elapsed >= MIN_ELAPSED_S else None

    def seconds_left(self) -> float | None:
        rate = self.rate()
        return max(self.total - self.done, 0) / rate if rate else None

    def as_dict(self) -> dict[str, Any]:
        rate, left = self.rate(), self.seconds_left()
        return {"what": self.what, "done": self.done, "total": self.total,
                "rate_per_s": round(rate, 1) if rate is not None else None,
                "seconds_left": round(left) if left is not None else None,
                "elapsed_s": round(time.monotonic() - self.started, 1)}


def describe(job: dict[str, Any], unit: str = "rows") -> str:
    """One line for people: "rebuilding the index: 1,234 of 7,000 rows (17%), 45 rows/s, about 2 min left"."""
    done, total = int(job.get("done") or 0), int(job.get("total") or 0)
    line = f"{job.get('what') or 'working'}: {done:,} of {total:,} {unit}"
    if total:
        line += f" ({100 * done // total}%)"
    if job.get("rate_per_s"):
        line += f", {job['rate_per_s']:,.0f} {unit}/s"
    if job.get("seconds_left") is not None:
        line += f", about {duration(job['seconds_left'])} left"
    return line


def duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"
