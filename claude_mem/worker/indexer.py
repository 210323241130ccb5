"""Keeps the semantic index in step with what a worker commits, off the worker's event loop.

One background thread per worker, with its own SQLite connection: importing chromadb and
loading the embedding model (~1.5 s) and embedding a batch must never hold up the queue. Jobs
are handed over after each commit; the first job catches up rows missed earlier (Chroma down,
a worker killed before it indexed). Jobs that queue up while one runs go in a single pass. When
the index fails, the failure is logged once, the worker goes on, and a job after a pause (or the
next worker) catches up everything still missing: SQLite is the source of truth, so nothing is
lost while Chroma is away.
"""

from __future__ import annotations

import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable

from claude_mem.recall.index import Index
from claude_mem.settings import Config
from claude_mem.store.db import connect
from claude_mem.store.reads import cut

_CATCH_UP = "catch-up"
RETRY_S = 30.0  # after a failure, jobs within this time only wait (a dead server can take seconds per try)
_STOP = "stop"

# This session's prompts not yet sent to the index (the hooks store prompts, the worker indexes them).
_UNINDEXED_PROMPTS = ("SELECT p.id FROM user_prompts p LEFT JOIN index_state s ON s.kind = 'prompt' AND s.row_id = p.id"
                      " WHERE p.session_id = ? AND s.row_id IS NULL")


class Indexer:
    def __init__(self, config: Config, session_id: str, log: Callable[[str], None]) -> None:
        self.config = config
        self.session_id = session_id
        self.log = log
        self.jobs: queue.SimpleQueue[tuple[str, list[int], list[int], list[int]]] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.conn: sqlite3.Connection | None = None  # the thread's own
        self.failing = False  # the index failed and the failure was logged; log again only on recovery
        self.behind = True  # rows may be missing from the index: the next job catches up first
        self.retry_at = 0.0
        self._unfinished = 0  # jobs handed over and not yet done
        self._done = threading.Condition()

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="claude-mem-indexer", daemon=True)
        self.thread.start()
        self._put((_CATCH_UP, [], [], []))

    def committed(self, observation_ids: Iterable[int], summary_ids: Iterable[int], prompt_ids: Iterable[int] = ()) -> None:
        """Rows a worker transaction just committed (prompts of the session never indexed are
        picked up too; `prompt_ids` are prompts to index again, as their reply came)."""
        self._put(("rows", list(observation_ids), list(summary_ids), list(prompt_ids)))

    def wait_idle(self, timeout_s: float) -> bool:
        """Wait until every job handed over so far is done; True when it is."""
        with self._done:
            return self._done.wait_for(lambda: self._unfinished == 0, timeout_s)

    def _put(self, job: tuple[str, list[int], list[int], list[int]]) -> None:
        with self._done:
            self._unfinished += 1
        self.jobs.put(job)

    def close(self, timeout_s: float) -> bool:
        """Let queued jobs finish for up to `timeout_s`; True when the thread is done."""
        if self.thread is None:
            return True
        self.jobs.put((_STOP, [], [], []))  # not counted: wait_idle is about the work
        self.thread.join(timeout_s)
        return not self.thread.is_alive()

    def _run(self) -> None:
        index = Index(self.config)
        stopping = False
        try:
            while not stopping:
                jobs = [self.jobs.get()]
                while True:  # what queued up meanwhile goes in one pass: a slow index never falls further behind
                    try:
                        jobs.append(self.jobs.get_nowait())
                    except queue.Empty:
                        break
                stopping = any(job[0] == _STOP for job in jobs)
                try:
                    self._handle(index, jobs)
                finally:
                    with self._done:
                        self._unfinished -= sum(job[0] != _STOP for job in jobs)
                        self._done.notify_all()
        finally:
            if self.conn is not None:
                self.conn.close()

    def _handle(self, index: Index, jobs: list[tuple[str, list[int], list[int], list[int]]]) -> None:
        if all(job[0] == _STOP for job in jobs) or (self.failing and time.monotonic() < self.retry_at):
            return  # while the index is down, a later job (or the next worker) catches up
        try:
            if self.conn is None:
                self.conn = connect(self.config.db_path)
            self._index(index, self.conn, *([i for job in jobs for i in job[part]] for part in (1, 2, 3)))
        except Exception as exc:  # IndexUnavailable mostly; whatever it is, capture must not stop
            self._failed(exc)
            return
        if self.failing:
            self.failing = False
            self.log("semantic index is back")

    def _index(self, index: Index, conn: sqlite3.Connection, observation_ids: list[int], summary_ids: list[int],
               prompt_ids: list[int]) -> None:
        if self.behind:
            counts = index.index_missing(conn)
            caught_up = sum(v for k, v in counts.items() if k != "removed")
            if caught_up or counts.get("removed"):
                self.log(f"index caught up: {caught_up} row(s) indexed, {counts.get('removed', 0)} removed")
            self.behind = False
            return
        index.index_observations(conn, observation_ids)
        index.index_summaries(conn, summary_ids)
        index.index_prompts(conn, [*prompt_ids, *(r[0] for r in conn.execute(_UNINDEXED_PROMPTS, (self.session_id,)))])

    def _failed(self, exc: BaseException) -> None:
        self.behind = True
        self.retry_at = time.monotonic() + RETRY_S
        if not self.failing:
            self.failing = True
            self.log(f"semantic index unavailable, capture goes on and rows are indexed later: {cut(str(exc), 300) or type(exc).__name__}")

