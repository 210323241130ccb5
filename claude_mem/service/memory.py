"""Giving the C heap's free memory back (processes/malloc.py) once the service is idle.

Searches allocate and free numpy arrays, Chroma's results and SQLite pages on several threads;
glibc keeps what they freed in its arenas, so the service's RSS grew by ~30 MiB over 200 searches
at 100k observations (591 MiB), and `malloc_trim(0)` gave it back in ~3 ms (561 MiB). Done after
every request, it would hold the heap's locks while the next search allocates; done once the
service has been idle for TRIM_AFTER_S, a burst of searches pays nothing (docs/search-tuning.md,
"Speed").
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from concurrent.futures import Executor
from contextlib import contextmanager

from claude_mem.processes.malloc import release_free_memory

TRIM_AFTER_S = 0.25


class IdleTrim:
    """Calls release_free_memory on `pool` once no request has started or ended for TRIM_AFTER_S."""

    def __init__(self, pool: Executor, after_s: float = TRIM_AFTER_S) -> None:
        self.pool = pool
        self.after_s = after_s
        self.active = 0
        self.trims = 0  # how many were done (status)
        self._pending: asyncio.TimerHandle | None = None

    def started(self) -> None:
        self.active += 1
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def ended(self) -> None:
        self.active = max(0, self.active - 1)
        if self._pending is not None:
            self._pending.cancel()
        self._pending = asyncio.get_running_loop().call_later(self.after_s, self._trim)

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Around one request: no trim while it runs, the idle clock restarted when it ends."""
        self.started()
        try:
            yield
        finally:
            self.ended()

    def _trim(self) -> None:
        self._pending = None
        if self.active == 0:
            self.trims += 1
            self.pool.submit(release_free_memory)
