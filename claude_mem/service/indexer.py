"""Keeps the semantic index in step with SQLite, inside the memory service, off its event loop.

One background thread with its own SQLite connection. The first job catches up every row not
yet indexed (SQLite is the truth: rows committed while the service was down, or killed before
it indexed them, are found here). After that, new rows are found by id: ids only grow (migration
0004), so every row above the highest one seen is new, whoever wrote it (a worker, an import,
a hook storing a prompt). The highest ids are read before a catch-up starts, so that rows
committed while it runs are new to the next job (issue 51: taken after it, they were skipped
until a restart or the full catch-up, minutes later), and a commit seen while a job runs queues
the next one. A worker's notice adds the ids of rows it rewrote (a summary replaced for the same
prompt keeps its id); a notice it could not deliver waits in a file, taken on the next poll
(notices.py); rows an edit rewrote are marked stale in index_state (migration 0018) and taken on
the next pass, notice or not. Jobs that queue up while one runs go in a single pass. When the
index fails, the failure is logged once and the next job after a pause catches up fully.
The job under way (a catch-up, a rebuild, a batch of new rows) keeps a `Progress` that `status`
and the viewer show; a rebuild asked for while one is under way is that one, not another.
"""

from __future__ import annotations

import asyncio
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Literal

from claude_mem.index.chroma import IndexUnavailable
from claude_mem.index.embedders import Choice, choose
from claude_mem.index.semantic_index import Index
from claude_mem.progress import Progress
from claude_mem.service import notices
from claude_mem.settings import Config
from claude_mem.store import to_index
from claude_mem.store.db import connect, data_version
from claude_mem.store.reads import KINDS
from claude_mem.text.shorten import cut

RETRY_S = 30.0  # after a failure, jobs within this time only wait (a dead server can take seconds per try)
FULL_CATCH_UP_S = 900.0  # a full catch-up now and then finds what a lost notice left (rewritten rows)
MAX_WAIT_S = 30.0  # the longest a worker's notice waits for its rows to be indexed (indexed_within)


@dataclass(frozen=True)
class Job:
    """One piece of work for the indexing thread. "catch-up" and "rows" both index what is new
    (the ids are rows a worker rewrote in place, which the highest id seen would miss); "rebuild"
    answers through `done`; "stop" ends the thread."""

    kind: Literal["catch-up", "rows", "stop", "rebuild"]
    observation_ids: Sequence[int] = ()
    summary_ids: Sequence[int] = ()
    prompt_ids: Sequence[int] = ()
    done: Future[dict[str, int]] | None = None
    indexed: Future[bool] | None = None  # "rows": True once a pass took them, False if it failed


class Indexer:
    def __init__(self, config: Config, index: Index, log: Callable[[str], None], choice: Choice | None = None,
                 answering: Index | None = None) -> None:
        """`choice`: why `index`'s embedder (embedders.choose), judged again as prompts and
        observations arrive; `answering`: another embedder's index, which serves searches until
        this one holds every row."""
        self.config = config
        self.index = index
        self.log = log
        self.choice = choice
        self.switch_to: Choice | None = None  # the embedder the store calls for now (the service switches)
        # Looked at more closely on the indexing thread before the first catch-up (_holds).
        self.previous = answering if answering is not None and answering.embedder != index.embedder and answering.built else None
        self.caught_up = False  # the first full catch-up is done: the index holds every row
        self.jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.conn: sqlite3.Connection | None = None  # the thread's own
        self.failing = False  # the failure was logged; log again only on recovery
        self.behind = True  # the next job catches up fully first
        self.retry_at = 0.0
        self.last_full = time.monotonic()  # the catch-up on start is the first full one
        self.high: dict[str, int] = {}  # per kind, the highest row id indexed or checked
        self.indexed = 0
        self.last_error: str | None = None
        self._unfinished = 0
        self._unfinished_lock = threading.Condition()  # notified as jobs end (wait_first_catch_up)
        self._poll_conn: sqlite3.Connection | None = None  # the event loop's, for data_version only
        self._version: int | None = None
        self._moved = False  # a commit seen while a job ran: the next poll queues a job
        self.job: Progress | None = None  # the indexing under way, when it has rows to do
        self._rebuilding: Future[dict[str, int]] | None = None

    def start(self) -> None:
        self.thread = threading.Thread(target=self._run, name="claude-mem-indexer", daemon=True)
        self.thread.start()
        self._put(Job("catch-up"))

    def notify(self, observation_ids: Sequence[int], summary_ids: Sequence[int], prompt_ids: Sequence[int] = ()) -> Future[bool]:
        """Index these rows (and whatever else is new); the future says whether the pass that took
        them indexed them."""
        indexed: Future[bool] = Future()
        self._put(Job("rows", observation_ids, summary_ids, prompt_ids, indexed=indexed))
        return indexed

    async def indexed_within(self, indexed: Future[bool], wait_s: float) -> bool:
        """Whether the pass that takes a notice's rows indexed them within `wait_s` (at most
        MAX_WAIT_S): a worker holds its queue rows until then, so a drained queue means the index
        holds every row. Not waited for while the index is first filled or rebuilt (minutes at
        100k rows: every batch would wait its whole time); `status` shows that lag."""
        rebuilding = self._rebuilding is not None and not self._rebuilding.done()
        if not self.caught_up or rebuilding:
            return False
        try:
            return await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(indexed)), min(max(wait_s, 0.0), MAX_WAIT_S))
        except TimeoutError:
            return False

    def rebuild(self) -> Future[dict[str, int]]:
        """Rebuild the whole index from SQLite on the indexing thread (nothing else indexes meanwhile,
        so the counts are this rebuild's own)."""
        with self._unfinished_lock:
            if self._rebuilding is not None and not self._rebuilding.done():
                return self._rebuilding  # asked again (a second `reindex`): the same rebuild, not a new one
            done: Future[dict[str, int]] = Future()
            self._rebuilding = done
            self._unfinished += 1
            if self.job is not None:
                self.job.stopping = True  # a catch-up under way would index rows the rebuild indexes again
        self.jobs.put(Job("rebuild", done=done))
        return done

    def poll(self) -> None:
        """Called about once a second: another connection committed (PRAGMA data_version moved),
        so there may be new rows."""
        try:
            if self._poll_conn is None:
                self._poll_conn = connect(self.config.db_path)
            version = data_version(self._poll_conn)
        except (sqlite3.Error, OSError):  # the data folder is gone or unreadable: nothing to index
            return
        for notice in notices.take(self.config.data_dir):
            self.notify(notice["observations"], notice["summaries"], notice["prompts"])
        due = self.failing and time.monotonic() >= self.retry_at
        stale = not self.failing and time.monotonic() - self.last_full > FULL_CATCH_UP_S
        if version != self._version or due or stale:
            self._version = version
            self._moved = True
            if stale:
                self.behind = True
        if self._moved and self.idle():
            self._moved = False
            self._put(Job("rows"))

    def wait_first_catch_up(self, timeout_s: float) -> None:
        """Until the first catch-up is done or failed, at most `timeout_s`. A fresh store has no
        index until it writes one (a first `remember` started this service: the model loads
        meanwhile), and a search that may wait (the CLI's, the MCP tools'; a hook's push never
        does) is answered by meaning then rather than by keywords at once."""
        with self._unfinished_lock:
            self._unfinished_lock.wait_for(lambda: self.caught_up or self.failing, timeout=max(timeout_s, 0.0))

    def answering(self) -> Index:
        """The index searches read: the previous one, if it holds documents, until this one
        holds every row."""
        previous = self.previous  # the indexing thread may drop it meanwhile
        if previous is not None and self.caught_up:
            self.previous = previous = None
            self.log(f"the {self.index.embedder} index holds every row: it answers searches now")
        return previous if previous is not None else self.index

    def embedder(self) -> dict[str, Any]:
        """The embedder chosen and why, and the one answering searches now."""
        return {"name": self.index.embedder, "reason": self.choice.reason if self.choice else "", "answering": self.answering().embedder}

    def idle(self) -> bool:
        with self._unfinished_lock:
            return self._unfinished == 0

    def state(self) -> dict[str, Any]:
        job = self.job
        return {"indexed": self.indexed, "failing": self.failing, "last_error": self.last_error, "busy": not self.idle(),
                "job": job.as_dict() if job is not None and job.total else None}

    def close(self, timeout_s: float) -> bool:
        if self._poll_conn is not None:
            self._poll_conn.close()
        if self.thread is None:
            return True
        self.jobs.put(Job("stop"))
        self.thread.join(timeout_s)
        return not self.thread.is_alive()

    def _put(self, job: Job) -> None:
        with self._unfinished_lock:
            self._unfinished += 1
        self.jobs.put(job)

    def _run(self) -> None:
        stopping = False
        try:
            while not stopping:
                jobs = [self.jobs.get()]
                while True:  # what queued up meanwhile goes in one pass: a slow index never falls further behind
                    try:
                        jobs.append(self.jobs.get_nowait())
                    except queue.Empty:
                        break
                stopping = any(job.kind == "stop" for job in jobs)
                indexed = False
                try:
                    for job in jobs:
                        if job.done is not None:
                            self._rebuild(job.done)
                    rows = [job for job in jobs if job.kind in ("catch-up", "rows")]
                    if rows and not stopping:
                        indexed = self._handle(rows)
                finally:
                    for job in jobs:
                        if job.indexed is not None:
                            job.indexed.set_result(indexed)
                    with self._unfinished_lock:
                        self._unfinished -= sum(job.kind != "stop" for job in jobs)
                        self._unfinished_lock.notify_all()
        finally:
            if self.conn is not None:
                self.conn.close()

    def _rebuild(self, done: Future[dict[str, int]]) -> None:
        try:
            if self.conn is None:
                self.conn = connect(self.config.db_path)
            self.job = Progress("rebuilding the index")
            counts = self.index.reindex(self.conn, self.job)
        except Exception as exc:
            self.behind = True  # whatever is not indexed now, the next job catches up
            done.set_exception(exc)
            return
        finally:
            self.job = None
        self.behind, self.failing, self.last_error = False, False, None
        self.last_full = time.monotonic()
        self.high = {kind: to_index.newest_id(self.conn, kind) for kind in KINDS}
        self.indexed += sum(v for k, v in counts.items() if k != "removed")
        self.caught_up = True
        done.set_result(counts)

    def _handle(self, jobs: list[Job]) -> bool:
        """True when the jobs' rows are indexed."""
        if self.failing and time.monotonic() < self.retry_at:
            self.behind = True
            return False  # the index is down: a job after the pause catches up
        try:
            if self.conn is None:
                self.conn = connect(self.config.db_path)
            self._index(self.conn, [i for job in jobs for i in job.observation_ids], [i for job in jobs for i in job.summary_ids],
                        [i for job in jobs for i in job.prompt_ids])
        except Exception as exc:  # IndexUnavailable mostly; whatever it is, the service goes on
            self._failed(exc)
            return False
        if self.failing:
            self.failing = False
            self.last_error = None
            self.log("semantic index is back")
        return True

    def _index(self, conn: sqlite3.Connection, observation_ids: list[int], summary_ids: list[int],
               prompt_ids: list[int]) -> None:
        if self.behind:
            if self.previous is not None and not self.caught_up and not self._holds(self.previous):
                self.previous = None
            self.job = Progress("catching up")
            before = {kind: to_index.newest_id(conn, kind) for kind in KINDS}  # what is committed from now on is new to the next job
            try:
                counts = self.index.index_missing(conn, self.job)
            finally:
                self.job = None
            caught_up = sum(counts.get(kind, 0) for kind in KINDS)
            self.indexed += caught_up
            if caught_up or counts.get("removed") or counts.get("vectors"):
                self.log(f"index caught up: {caught_up} row(s) indexed, {counts.get('removed', 0)} removed"
                         + (f", vectors kept in SQLite for {counts['vectors']} more" if counts.get("vectors") else ""))
            self.behind = False
            self.last_full = time.monotonic()
            self.high = before
            self.caught_up = True
            if caught_up:
                self._judge(conn)
            return
        wanted = {"observation": set(observation_ids), "summary": set(summary_ids), "prompt": set(prompt_ids)}
        grown = False
        for kind in KINDS:
            # Rows marked stale (an edit rewrote them, migration 0018; forget could not reach the
            # index): their documents are made again, or dropped if the row is gone, though no
            # notice named them.
            wanted[kind].update(to_index.stale(conn, kind))
            top = to_index.newest_id(conn, kind)
            above = self.high.get(kind, top)
            if top > above:
                wanted[kind].update(to_index.ids_above(conn, kind, above))
                grown = grown or kind != "summary"
            if wanted[kind]:
                self.job = Progress(f"indexing new {kind}s", len(wanted[kind]))
                try:
                    self.indexed += self.index.index_rows(conn, kind, wanted[kind], self.job)
                finally:
                    self.job = None
            self.high[kind] = max(top, above)
        if grown:
            self._judge(conn)

    def _judge(self, conn: sqlite3.Connection) -> None:
        """Whether the store, grown, calls for another embedder (auto; multilingual is kept)."""
        if self.choice is None or self.choice.name == "multilingual" or self.switch_to is not None:
            return
        choice = choose(self.config, conn, record=False)  # recorded when the service switches
        if choice.name != self.choice.name:
            self.switch_to = choice

    def _holds(self, index: Index) -> bool:
        """Whether the previous index holds documents, to answer meanwhile (its model is loaded now)."""
        try:
            if not index.built or index.count() == 0:
                return False
            index.embed_query("warm up")
            return True
        except IndexUnavailable:
            return False

    def _failed(self, exc: BaseException) -> None:
        self.behind = True
        self.retry_at = time.monotonic() + RETRY_S
        self.last_error = cut(str(exc), 300) or type(exc).__name__
        if not self.failing:
            self.failing = True
            self.log(f"semantic index unavailable, rows are indexed later: {self.last_error}")

