"""The service's search threads: each request runs on the first idle one.

Each search thread has its own SQLite connection, and a connection's page cache holds what its
last searches read (the FTS index's busiest pages, the vectors' inner B-tree pages). A plain
ThreadPoolExecutor hands a run of requests to its threads in turn, so each connection saw every
other search: through the memory service at 100k observations, p95 1.4-2.7 ms slower than one
thread taking them all (docs/search-tuning.md, eighth day). Here a run of searches one after
another stays on the first thread, and a second thread serves only a request that comes while
the first is busy.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


class FirstIdle(Executor):
    """`threads` single threads; a call runs on the first with nothing to do (else the least busy)."""

    def __init__(self, threads: int, thread_name_prefix: str) -> None:
        self._threads = [ThreadPoolExecutor(1, thread_name_prefix=f"{thread_name_prefix}-{n}") for n in range(max(1, threads))]
        self._queued = [0] * len(self._threads)  # calls submitted to each and not yet finished
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        with self._lock:
            n = min(range(len(self._threads)), key=self._queued.__getitem__)  # the first of the idlest
            self._queued[n] += 1
        try:
            future = self._threads[n].submit(self._run, n, fn, *args, **kwargs)
        except BaseException:
            self._finished(n)
            raise
        future.add_done_callback(lambda done: self._cancelled(n, done))
        return future

    def _cancelled(self, n: int, future: Future[Any]) -> None:
        if future.cancelled():  # it never ran, so `_run` did not count it finished
            self._finished(n)

    def _run(self, n: int, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        # Counted as finished before its future is: whoever its result wakes finds the thread idle.
        try:
            return fn(*args, **kwargs)
        finally:
            self._finished(n)

    def _finished(self, n: int) -> None:
        with self._lock:
            self._queued[n] -= 1

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        for thread in self._threads:
            thread.shutdown(wait=False, cancel_futures=cancel_futures)
        if wait:
            for thread in self._threads:
                thread.shutdown(wait=True)
