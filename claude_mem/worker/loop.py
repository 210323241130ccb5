"""The per-session worker: claim queued events in order, have them observed, store the result.

Exactly once: a batch's observations are inserted and its queue rows marked done in ONE
transaction (marked stored, still processing, while the memory service indexes them: a drained
queue means search by meaning finds everything); observations carry a content hash unique per
session, so a batch replayed after a crash (or the CLI re-sending a failed message) inserts
nothing new. A worker killed at any point leaves rows pending or processing; the next worker
(holding the session's lock, so no other worker can own them) takes processing rows back, stored
ones ending done.

Model failures (worker/faults.py): a transient one (CLI killed or failing while it starts or
answers, timeout, 429, 5xx, 529, refused connection) is a session-level outage — the batch waits, backing off, and no attempt is counted.
A failure of the batch itself (rejected as invalid or too long, no parseable reply after a nudge)
splits the batch in halves until the event that fails alone is found; only that event uses up
attempts, and then gets heuristic observations (synthesizer=auto) or is skipped with its reason
(synthesizer=model). Any failure ends the observer CLI: the next one resumes the conversation cut
at the last stored batch, so nothing failed is ever in front of the model twice. A missing login
or a CLI that cannot start with synthesizer=auto hands the session to the heuristic synthesizer
so capture never stops; with synthesizer=model a CLI that cannot start gets the events skipped.
A worker exits idle even while its events wait out a backoff; stranded.py restarts one.
A worker that exits because its session ended rewrites the project's memory file (memory_file/)
when the setting is on: after the session's last summary, never on a hook's time.

Between bursts of work the observer sleeps: after `observer_idle_s` without a batch its CLI is
ended and the next batch resumes the same conversation. Once the day's observer tokens reach
`observer_daily_tokens`, no request goes out: synthesizer=auto stores heuristic observations
(`reprocess` redoes them), model lets the events wait for tomorrow. With `fold_subagents` a
subagent's own tool calls are settled without the model: its Task call's result stands for them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
from typing import Any

from claude_mem.jsonfile import write_json_atomic
from claude_mem.kinds import BatchOutcome, StopReason
from claude_mem.logs import log_line
from claude_mem.marks.apply import mark_stored_guarded, sweep_step
from claude_mem.memory_file import write as memory_file
from claude_mem.service import client as service
from claude_mem.settings import Config
from claude_mem.store import budget, outages, queue, queue_rows, records, runs
from claude_mem.store.db import connect, data_version, now_ms, transaction
from claude_mem.store.memories import insert_observation, upsert_summary
from claude_mem.store.outages import Failure
from claude_mem.store.rows import QueuedEvent
from claude_mem.store.spool import drain_spool
from claude_mem.worker import batching, checkpoint, echoes, faults, indexing, spawn
from claude_mem.worker.conversation import OVER_BUDGET, Conversation
from claude_mem.worker.events import Event
from claude_mem.worker.guarding import Guarding
from claude_mem.worker.synthesis import Outcome, Synthesis

POLL_S = 0.2
YIELD_CHECK_S = 2.0  # how often an idle worker looks for sessions waiting for its slot
SWEEP_S = 0.25  # an idle worker gives the marking rules slices this long over observations older than them


class Worker:
    # Made once the database is open (run): the connection, the observer conversation, and what uses it.
    conn: sqlite3.Connection
    conversation: Conversation
    synthesis: Synthesis
    guarding: Guarding

    def __init__(self, config: Config, session_id: str, *, idle_s: float | None = None, drain: bool = False,
                 synthesizer: str | None = None, lock_fd: int | None = None) -> None:
        self.config = config
        self.lock_fd = lock_fd  # the session's worker lock, when the process took it before loading this (main.py)
        self.session_id = session_id
        self.idle_s = config.worker_idle_s if idle_s is None else idle_s
        self.drain = drain  # exit as soon as the queue is empty (tests, reprocess, demo)
        self.mode = synthesizer or config.synthesizer
        self.worker_id = ""
        self.run_id: int | None = None
        self.stats = {"events": 0, "observations": 0}
        self.stop_requested = False
        self._outage_due: tuple[int, str] = (0, "")  # when the rows of the current outage are due, and why
        self._repeats: set[int] = set()  # of the rows in hand, those reading a file again as it was
        self._waiting = 0  # the first row of the batch that waits for more (logged once)
        self._slot_wanted = False  # another session waits for this worker's slot: no batch waits for more
        self._next_slot_check = 0.0  # when `_slot_asked` next looks (time.monotonic)
        self._stored: list[indexing.Stored] = []  # batches stored, their rows done once indexed

    # --- lifecycle ------------------------------------------------------------------------------

    def log(self, message: str) -> None:
        log_line(self.config.logs_dir, f"worker[{self.session_id[:12]}]", message)
        print(time.strftime("%H:%M:%S"), message, flush=True)

    async def run(self) -> StopReason:
        """Run until idle, drained, or stopped; returns why it stopped."""
        config = self.config
        config.ensure_dirs()
        lock_fd = self.lock_fd if self.lock_fd is not None else spawn.acquire_lock(config.workers_dir, self.session_id)
        if lock_fd is None:
            return StopReason.BUSY
        slot_fd = spawn.take_slot(config.workers_dir, config.max_workers)
        if slot_fd is None:
            os.close(lock_fd)
            return StopReason.NO_SLOT
        reason = StopReason.STOPPED
        try:
            self.conn = connect(config.db_path)
            self.conversation = Conversation(config, self.conn, self.session_id, self.log)
            self.synthesis = Synthesis(config, self.conn, self.session_id, self.mode, self.conversation, self.log)
            self.guarding = Guarding(self.conn, self.session_id)
            self._register()
            self.conversation.run_id = self.run_id
            released = queue.release_processing(self.conn, self.session_id)
            if released:
                self.log(f"took back {released} event(s) a previous worker left in processing")
            drain_spool(config, self.conn)
            if config.semantic_index:
                service.ensure_started(config.data_dir)  # it indexes what this worker commits
            task = asyncio.current_task()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    loop.add_signal_handler(sig, self._request_stop, task)
                except (NotImplementedError, RuntimeError):
                    pass
            try:
                reason = await self._loop()
            except asyncio.CancelledError:
                reason = StopReason.SIGNAL
            if reason is StopReason.SESSION_ENDED:
                memory_file.after_session(self.conn, self.config, self.session_id, self.log)
            self.log(f"exiting ({reason}): {self.stats['events']} events, {self.stats['observations']} observations")
            return reason
        finally:
            if hasattr(self, "conversation"):
                await self.conversation.close()
            if hasattr(self, "conn"):
                self._unregister(reason)
                self.conn.close()
            try:
                os.unlink(spawn.info_path(config.workers_dir, self.session_id))
            except OSError:
                pass
            os.close(lock_fd)
            os.close(slot_fd)
            if reason is not StopReason.SIGNAL:
                spawn.hand_off(config, self.session_id)

    def _sweep(self) -> bool:
        """A slice of the marking rules over observations stored before they existed (idle time
        only: events come first); False once there is nothing left, or it failed."""
        try:
            return sweep_step(self.conn, SWEEP_S) > 0
        except sqlite3.Error as exc:
            self.log(f"marking older observations failed ({exc}); the next worker tries again")
            return False

    def _request_stop(self, task: asyncio.Task | None) -> None:
        self.stop_requested = True
        if task is not None:
            task.cancel()

    def _register(self) -> None:
        import psutil

        pid = os.getpid()
        create_time = psutil.Process(pid).create_time()
        self.worker_id = f"{pid}:{create_time:.3f}"
        with transaction(self.conn):
            self.run_id = runs.start_run(self.conn, self.session_id, pid=pid, create_time=create_time,
                                         worker_id=self.worker_id, synthesizer=self.mode)
        info = {"session_id": self.session_id, "pid": pid, "create_time": create_time, "worker_id": self.worker_id,
                "started_at_epoch": now_ms(), "synthesizer": self.mode}
        write_json_atomic(spawn.info_path(self.config.workers_dir, self.session_id), info)

    def _unregister(self, reason: StopReason) -> None:
        try:
            with transaction(self.conn):
                runs.finish_run(self.conn, self.run_id, reason, events=self.stats["events"],
                                observations=self.stats["observations"])
        except sqlite3.Error:
            pass

    # --- the loop -------------------------------------------------------------------------------

    async def _loop(self) -> StopReason:
        conn = self.conn
        idle_since = time.monotonic()
        self._next_slot_check = idle_since + YIELD_CHECK_S
        last_version = None
        sweeping = True
        while True:
            if self.stop_requested:
                return StopReason.SIGNAL
            rows = queue_rows.next_pending(conn, self.session_id)
            if await self._checkpoint(rows):
                idle_since = time.monotonic()
                continue
            if not rows:
                if self.drain:
                    return StopReason.DRAINED
                if records.session_ended(conn, self.session_id):  # SessionEnd came (a resumed session is active again)
                    return StopReason.SESSION_ENDED
                if time.monotonic() - idle_since >= self.idle_s:
                    return StopReason.IDLE
                if time.monotonic() - idle_since >= self.config.observer_idle_s and await self.conversation.sleep():
                    self.log(f"observer CLI ended after {time.monotonic() - idle_since:.0f} s without work"
                             " (setting observer_idle_s); the next batch resumes its conversation")
                if self._slot_asked():
                    return StopReason.YIELDED
                if sweeping:
                    sweeping = self._sweep()
                    await asyncio.sleep(0)
                    continue
                # Sleep until another connection commits (data_version moves) or a poll passes.
                version = data_version(conn)
                if version == last_version:
                    await asyncio.sleep(POLL_S)
                last_version = version
                continue
            wait_ms = rows[0].next_attempt_epoch - now_ms()
            if wait_ms > 0:
                # Waiting out a backoff is idle time too: a long outage does not keep one worker
                # per session alive; whatever runs next once the rows are due starts another.
                if not self.drain and time.monotonic() - idle_since >= self.idle_s:
                    self.log(f"{len(rows)} event(s) wait for the model; the next hook or `status` starts a worker for them")
                    return StopReason.IDLE
                if self.drain and (rows[0].last_error or "").startswith(budget.WAITING_REASON):
                    return StopReason.DRAINED_BUT_BUDGET
                await asyncio.sleep(min(wait_ms / 1000, 1.0))
                continue
            take_open = self.drain or time.monotonic() - idle_since >= self.idle_s
            batch, self._repeats, wait = batching.choose(conn, self.config, self.session_id, rows, heuristic=not self.synthesis.use_model,
                                                         hold=not self.drain and not self._slot_wanted, take_open=take_open)
            if batch is None:  # the heuristic waits for the turn's end (worker/turns.py), its slot given up if wanted
                if self._slot_asked():
                    return StopReason.YIELDED
                await asyncio.sleep(POLL_S)
                continue
            if wait is not None:
                # Batch by cost: a request re-reads the whole conversation, so a batch that is not
                # full waits for its turn's end or more events (worker/batching.py).
                if self._waiting != batch[0].id:
                    self._waiting = batch[0].id
                    self.log(f"{len(batch)} event(s) wait up to {(wait - now_ms()) / 1000:.0f} s for their turn's end or"
                             " more events (setting batch_wait_s)")
                await self._wait_for_more(wait, idle_since)
                continue
            self._slot_wanted = False
            ids = [r.id for r in batch]
            with transaction(conn):
                queue.claim(conn, ids, self.worker_id)
            try:
                settled = await self._process(batch)
                await indexing.settle(conn, self.config, self._stored)
            except BaseException:
                # Cancelled (SIGTERM) or crashed mid-batch: hand back the rows not stored yet.
                with transaction(conn):
                    queue.release(conn, ids)
                raise
            if settled is not BatchOutcome.OUTAGE:
                idle_since = time.monotonic()

    async def _wait_for_more(self, until_ms: int, idle_since: float) -> None:
        """Sleep until another connection commits (data_version moves) or `until_ms`; the observer
        CLI sleeps meanwhile once it has had no batch for observer_idle_s."""
        version = data_version(self.conn)
        while not self.stop_requested and now_ms() < until_ms and data_version(self.conn) == version:
            if time.monotonic() - idle_since >= self.config.observer_idle_s and await self.conversation.sleep():
                self.log("observer CLI ended while a batch waits for more events (setting observer_idle_s)")
            if self._slot_asked():  # a session waits for this worker's slot: send what there is
                self._slot_wanted = True
                return
            await asyncio.sleep(min(POLL_S, max(until_ms - now_ms(), 0) / 1000))

    def _slot_asked(self) -> bool:
        """Whether another session waits for this worker's slot (spawn.slot_wanted), looked at no
        more often than every YIELD_CHECK_S."""
        if time.monotonic() < self._next_slot_check:
            return False
        self._next_slot_check = time.monotonic() + YIELD_CHECK_S
        return spawn.slot_wanted(self.conn, self.config.workers_dir, self.config.max_workers, self.session_id)

    async def _checkpoint(self, rows: list[QueuedEvent]) -> bool:
        """A compaction's checkpoint, once the events queued before it are taken."""
        due = checkpoint.due(self.conn, self.session_id, rows)
        if due is None:
            return False
        self.log(f"checkpoint for a compaction written ({await checkpoint.write(self.synthesis, due)})")
        return True

    async def _process(self, batch: list[QueuedEvent]) -> BatchOutcome:
        """Synthesise a claimed batch and settle every row of it; how it ended (BatchOutcome)."""
        synthesis = self.synthesis
        assert synthesis is not None
        if self.config.fold_subagents and synthesis.use_model:
            batch, folded = batching.fold_subagents(self.conn, batch)
            self.stats["events"] += folded
            if not batch:
                return BatchOutcome.DONE
        events = [Event.from_row(r) for r in batch]
        if synthesis.use_model and batching.fold_if_silent(self.conn, events, self._repeats):
            self.stats["events"] += len(events)  # a line with nothing to say: never a request of its own
            return BatchOutcome.DONE
        outcome = await synthesis.observe(events)
        if not outcome.error:
            self._store(events, outcome, "model" if synthesis.use_model else "heuristic")
            return BatchOutcome.DONE
        with transaction(self.conn):
            self._keep_raw_reply([e.id for e in events], outcome)
        if outcome.error == OVER_BUDGET:
            return self._over_budget(events, outcome)
        if outcome.error == Failure.CANNOT_START:
            # Only with synthesizer=model (auto has switched to heuristics): nothing will run the
            # model, so the events are skipped with the reason rather than waiting forever.
            reason = f"{outcome.error}: {outcome.detail}"
            with transaction(self.conn):
                queue.mark_failed(self.conn, [e.id for e in events], reason, max_attempts=1, backoff_s=0)
            self.log(f"{len(events)} event(s) skipped ({reason}); `claude-mem retry --session {self.session_id}` re-queues them")
            return BatchOutcome.FAILED
        if faults.is_transient(outcome.error):
            self._defer_for_outage([e.id for e in events], outcome)
            return BatchOutcome.OUTAGE
        if len(batch) > 1:
            # One bad event must not take its batch-mates down with it: split until it is alone.
            self.log(f"model failed on a batch of {len(batch)} ({outcome.error}: {outcome.detail}); splitting it")
            middle = len(batch) // 2
            first, second = batch[:middle], batch[middle:]
            if await self._process(first) is BatchOutcome.OUTAGE:
                self._defer_for_outage([r.id for r in second], None)
                return BatchOutcome.OUTAGE
            await self._process(second)
            return BatchOutcome.FAILED
        self._failed_alone(batch[0], events[0], outcome)
        return BatchOutcome.FAILED

    def _over_budget(self, events: list[Event], outcome: Outcome) -> BatchOutcome:
        """The day's observer tokens are spent: heuristic observations (auto), or the events wait
        for tomorrow's budget (model), the session's later ones with them."""
        if self.mode == "auto":
            self._store(events, self.synthesis.heuristic(events), "heuristic")
            return BatchOutcome.DONE
        with transaction(self.conn):
            budget.wait_for_tomorrow(self.conn, self.session_id, [e.id for e in events], outcome.detail)
        self.log(f"{len(events)} event(s) wait for tomorrow: {budget.WAITING_REASON} ({outcome.detail})")
        return BatchOutcome.OUTAGE

    def _store(self, events: list[Event], outcome: Outcome, synth: str, given_up: str | None = None) -> None:
        """Insert what was synthesised and mark its rows stored (done once indexed: worker/indexing.py),
        in one transaction; a model batch also moves where the observer conversation resumes past it."""
        ids = [e.id for e in events]
        session = records.get_session(self.conn, self.session_id)
        project = session.project if session else "unknown"
        prompts = outcome.prompts or [events[0].prompt_number] * len(outcome.observations)
        model = self.config.model if synth == "model" else None
        new_ids: list[int] = []
        summary_ids: list[int] = []
        shown = outcome.recap_titles if synth == "model" else frozenset()
        # Provenance and the write guard, turn by turn (a batch may span turns).
        guarded = self.guarding.batch(events, outcome.observations, prompts, outcome.summaries)
        with transaction(self.conn):
            refused = 0
            for obs, prompt_number in guarded:
                if echoes.repeats(self.conn, self.session_id, obs, shown):  # an echo of one this session holds
                    refused += 1
                    continue
                new_id = insert_observation(self.conn, self.session_id, project, obs, prompt_number=prompt_number,
                                            source=synth, model=model)
                if new_id is not None:
                    new_ids.append(new_id)
                    for relation, claimed in (("supersedes", obs.supersedes), ("conflicts", obs.conflicts)):
                        if claimed:  # the model's marks, checked (worker/recalled.py)
                            self.synthesis.recalled.accept(new_id, claimed, model, relation)
            if refused and self.run_id is not None:
                runs.add_echoes(self.conn, self.run_id, refused)
            mark_stored_guarded(self.conn, new_ids, self.log)  # what they make no longer true (marks/rules.py)
            for prompt_number, (summary, source) in sorted(outcome.summaries.items()):
                summary_ids.append(upsert_summary(self.conn, self.session_id, project, summary, prompt_number=prompt_number,
                                                  source=source, model=model if source == "model" else None))
            if outcome.summaries:
                records.complete_session(self.conn, self.session_id)
            self.guarding.settle(events)  # what the guard found in each event's output; Claude's reply screened
            self._keep_raw_reply(ids, outcome)
            conversation = self.conversation
            if synth == "model" and conversation.turn is not None:
                records.set_resume_point(self.conn, self.session_id, *conversation.turn)
                conversation.fresh = False
            # The turns are over: their prompts are indexed again with Claude's reply (the Stop hook kept it).
            replied = [i for n in outcome.summaries for i in records.replied_prompts(self.conn, self.session_id, n)]
            to_index = bool(self.config.semantic_index and (new_ids or summary_ids or replied))
            (queue.mark_stored if to_index else queue.mark_done)(self.conn, ids, synth, given_up)
        self.conversation.turn = None
        if to_index:  # the rows are done once the index holds what they gave, or cannot soon (indexing.settle)
            self._stored.append(indexing.Stored(ids, new_ids, summary_ids, replied))
        self.stats["events"] += len(ids)
        self.stats["observations"] += len(new_ids)

    def _keep_raw_reply(self, ids: list[int], outcome: Outcome) -> None:
        """Keep a reply that yielded nothing usable (call inside a transaction)."""
        if outcome.raw is None:
            return
        runs.keep_raw_reply(self.conn, self.session_id, ids, outcome.raw, outcome.raw_error or "no usable block")
        outcome.raw = None  # kept once, whichever way the batch is settled

    def _defer_for_outage(self, ids: list[int], outcome: Outcome | None) -> None:
        """The model is unreachable: the rows wait, no attempt counted, backing off per failed try
        in a row (outcome None: rows split off a batch whose first half met the outage)."""
        if not ids:
            return
        if outcome is not None:
            message = f"{outcome.error}: {outcome.detail}".strip(": ")
            with transaction(self.conn):
                failures, since = outages.record_failure(self.conn, self.session_id, message)
            wait = faults.outage_backoff_s(self.config, failures)
            self._outage_due = (now_ms() + int(wait * 1000), message)
            if failures == 1:
                log_line(self.config.logs_dir, "worker", f"session {self.session_id}: model unreachable ({message});"
                         " its events wait, none is given up", stderr=True)
            self.log(f"model failed ({message}); {len(ids)} event(s) wait {wait:.1f} s (try {failures} of an outage"
                     f" since {time.strftime('%H:%M:%S', time.localtime(since / 1000))}; no attempt counted)")
        due, message = self._outage_due
        with transaction(self.conn):
            queue.defer(self.conn, ids, message, due)
            queue.hold_session(self.conn, self.session_id, due)

    def _failed_alone(self, row: QueuedEvent, event: Event, outcome: Outcome) -> None:
        """An event that fails on its own: another attempt after a backoff, or, once
        max_attempts are used, heuristic observations (auto) or skipped with its reason (model)."""
        reason = f"{outcome.error}: {outcome.detail}".strip(": ")
        attempts, limit = row.attempts + 1, self.config.max_attempts
        if attempts < limit:
            backoff = faults.attempt_backoff_s(self.config, row.attempts)
            with transaction(self.conn):
                queue.mark_failed(self.conn, [event.id], reason, max_attempts=limit, backoff_s=backoff)
            self.log(f"model failed on event {event.id} ({reason}); attempt {attempts} of {limit}, next in {backoff:g} s")
        elif self.mode == "auto":
            note = f"the model failed on it {attempts} times; heuristic observations instead (last: {reason})"
            self._store([event], self.synthesis.heuristic([event]), "heuristic", note)
            self.log(f"event {event.id}: {note}; `claude-mem reprocess --session {self.session_id}` redoes it with the model")
        else:
            with transaction(self.conn):
                queue.mark_failed(self.conn, [event.id], reason, max_attempts=limit, backoff_s=0)
            self.log(f"event {event.id} skipped after {attempts} failed attempts ({reason});"
                     f" `claude-mem retry --session {self.session_id}` re-queues it")


def run_worker(config: Config, session_id: str, **kwargs: Any) -> StopReason:
    return asyncio.run(Worker(config, session_id, **kwargs).run())
