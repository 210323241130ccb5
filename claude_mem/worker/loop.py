"""The per-session worker: claim queued events in order, have them observed, store the result.

Exactly once: a batch's observations are inserted and its queue rows marked done in ONE
transaction; observations carry a content hash unique per session, so a batch replayed after a
crash (or the CLI re-sending a failed message) inserts nothing new. A worker killed at any
point leaves rows pending or processing; the next worker (holding the session's lock, so no
other worker can own them) takes processing rows back.

Model failures (worker/faults.py): a transient one (CLI killed, timeout, 429, 5xx, 529, refused
connection) is a session-level outage — the batch waits, backing off, and no attempt is counted.
A failure of the batch itself (rejected as invalid or too long, no parseable reply after a nudge)
splits the batch in halves until the event that fails alone is found; only that event uses up
attempts, and then gets heuristic observations (synthesizer=auto) or is skipped with its reason
(synthesizer=model). Any failure ends the observer CLI: the next one resumes the conversation cut
at the last stored batch, so nothing failed is ever in front of the model twice. A missing login
with synthesizer=auto hands the session to the heuristic synthesizer so capture never stops.
A worker exits idle even while its events wait out a backoff; stranded.py restarts one.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import time
from dataclasses import dataclass, field
from typing import Any

from claude_mem.logs import log_line
from claude_mem.service import client as service
from claude_mem.settings import Config
from claude_mem.store import outages, queue, records, runs
from claude_mem.store.db import connect, data_version, now_ms, transaction
from claude_mem.store.memories import Observation, Summary, insert_observation, list_observations, upsert_summary
from claude_mem.store.reads import cut
from claude_mem.store.spool import drain_spool
from claude_mem.worker import faults, heuristic, spawn
from claude_mem.worker.parse import ParseResult, parse_reply
from claude_mem.worker.render import Event, files_touched, fill, render_batch, render_event

POLL_S = 0.2
# A fresh conversation (with a recap) after this many turns keeps each request's history, and
# so its cost, bounded.
MAX_TURNS_PER_CONVERSATION = 40
NOTHING_MARK = "<nothing/>"  # compared with whitespace removed
YIELD_CHECK_S = 2.0  # how often an idle worker looks for sessions waiting for its slot
NOTIFY_TIMEOUT_S = 0.5  # telling the memory service about new rows; it finds them by itself anyway


class Stopping(Exception):
    """Raised inside the loop when a stop was requested between batches."""


@dataclass
class Outcome:
    observations: list[Observation] = field(default_factory=list)
    summary: Summary | None = None
    summary_source: str = "model"
    raw: str | None = None  # a reply kept because it yielded nothing usable
    raw_error: str = ""
    error: str | None = None  # a model failure category
    detail: str = ""


class Worker:
    def __init__(self, config: Config, session_id: str, *, idle_s: float | None = None, drain: bool = False,
                 synthesizer: str | None = None) -> None:
        self.config = config
        self.session_id = session_id
        self.idle_s = config.worker_idle_s if idle_s is None else idle_s
        self.drain = drain  # exit as soon as the queue is empty (tests, reprocess, demo)
        self.mode = synthesizer or config.synthesizer
        self.use_model = self.mode != "heuristic"
        self.conn: sqlite3.Connection | None = None
        self.observer: Any = None
        self.turns = 0
        self.last_request_number = -1
        self.worker_id = ""
        self.run_id: int | None = None
        self.stats = {"events": 0, "observations": 0}
        self.stop_requested = False

    # --- lifecycle ------------------------------------------------------------------------------

    def log(self, message: str) -> None:
        log_line(self.config.logs_dir, f"worker[{self.session_id[:12]}]", message)
        print(time.strftime("%H:%M:%S"), message, flush=True)

    async def run(self) -> str:
        """Run until idle, drained, or stopped; returns why it stopped."""
        config = self.config
        config.ensure_dirs()
        lock_fd = spawn.acquire_lock(config.workers_dir, self.session_id)
        if lock_fd is None:
            return "another worker is running for this session"
        slot_fd = spawn.take_slot(config.workers_dir, config.max_workers)
        if slot_fd is None:
            os.close(lock_fd)
            return f"waiting: {config.max_workers} workers already run (setting max_workers); an exiting one starts this session's"
        reason = "stopped"
        try:
            self.conn = connect(config.db_path)
            self._register()
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
            except (asyncio.CancelledError, Stopping):
                reason = "signal"
            self.log(f"exiting ({reason}): {self.stats['events']} events, {self.stats['observations']} observations")
            return reason
        finally:
            await self._close_observer()
            if self.conn is not None:
                self._unregister(reason)
                self.conn.close()
            try:
                os.unlink(spawn.info_path(config.workers_dir, self.session_id))
            except OSError:
                pass
            os.close(lock_fd)
            os.close(slot_fd)
            if reason != "signal":
                self._hand_off()

    def _hand_off(self) -> None:
        """With its slot free, start the session that has waited longest, this one first: events
        that came after the last look found this worker's lock held and started no worker."""
        if not self.config.worker_autostart:
            return
        try:
            conn = connect(self.config.db_path)
            try:
                waiting = [w["session_id"] for w in queue.waiting_sessions(conn, due_by=now_ms())]
            finally:
                conn.close()
        except sqlite3.Error:
            return
        order = sorted(waiting, key=lambda sid: sid != self.session_id)
        for session_id in order:
            if spawn.ensure_worker(self.config.data_dir, self.config.workers_dir, self.config.logs_dir, session_id,
                                   self.config.max_workers) is not None:
                return

    def _others_waiting(self) -> bool:
        """Sessions with due events and no worker while every slot is taken: an idle worker then
        gives its slot up instead of idling in it."""
        config = self.config
        if spawn.slots_in_use(config.workers_dir, config.max_workers) < config.max_workers:
            return False
        return any(sid != self.session_id and not spawn.worker_alive(config.workers_dir, sid)
                   for sid in (w["session_id"] for w in queue.waiting_sessions(self.conn, due_by=now_ms())))

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
        path = spawn.info_path(self.config.workers_dir, self.session_id)
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(info, fh)
        os.replace(path + ".tmp", path)

    def _unregister(self, reason: str) -> None:
        try:
            with transaction(self.conn):
                runs.finish_run(self.conn, self.run_id, reason, events=self.stats["events"],
                                observations=self.stats["observations"])
        except sqlite3.Error:
            pass

    # --- the loop -------------------------------------------------------------------------------

    async def _loop(self) -> str:
        conn = self.conn
        idle_since = time.monotonic()
        next_yield_check = idle_since + YIELD_CHECK_S
        last_version = None
        while True:
            if self.stop_requested:
                return "signal"
            rows = queue.next_pending(conn, self.session_id)
            if not rows:
                if self.drain:
                    return "drained"
                if self._session_ended():
                    return "session ended"
                if time.monotonic() - idle_since >= self.idle_s:
                    return "idle"
                if time.monotonic() >= next_yield_check:
                    next_yield_check = time.monotonic() + YIELD_CHECK_S
                    if self._others_waiting():
                        return "idle, yielding its slot to a waiting session"
                # Sleep until another connection commits (data_version moves) or a poll passes.
                version = data_version(conn)
                if version == last_version:
                    await asyncio.sleep(POLL_S)
                last_version = version
                continue
            wait_ms = rows[0]["next_attempt_epoch"] - now_ms()
            if wait_ms > 0:
                # Waiting out a backoff is idle time too: a long outage does not keep one worker
                # per session alive; whatever runs next once the rows are due starts another.
                if not self.drain and time.monotonic() - idle_since >= self.idle_s:
                    self.log(f"{len(rows)} event(s) wait for the model; the next hook or `status` starts a worker for them")
                    return "idle"
                await asyncio.sleep(min(wait_ms / 1000, 1.0))
                continue
            batch = self._take_batch(rows)
            ids = [r["id"] for r in batch]
            with transaction(conn):
                queue.claim(conn, ids, self.worker_id)
            try:
                settled = await self._process(batch)
            except BaseException:
                # Cancelled (SIGTERM) or crashed mid-batch: hand back the rows not settled yet.
                with transaction(conn):
                    queue.release(conn, ids)
                raise
            if settled != "outage":
                idle_since = time.monotonic()

    def _session_ended(self) -> bool:
        """Claude Code sent SessionEnd: nothing more will come (a resumed session sets it active again)."""
        return records.session_ended(self.conn, self.session_id)

    def _take_batch(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A finalize alone, an event that failed on its own before alone, or consecutive ready
        tool rows of one prompt up to batch_chars."""
        first = rows[0]
        if first["kind"] == "finalize" or first["attempts"]:
            return [first]
        batch = [first]
        size = len(render_event(Event.from_row(first)))
        now = now_ms()
        for row in rows[1:]:
            if (row["kind"] != "tool" or row["prompt_number"] != first["prompt_number"] or row["next_attempt_epoch"] > now
                    or row["attempts"]):
                break
            cost = len(render_event(Event.from_row(row)))
            if size + cost > self.config.batch_chars:
                break
            batch.append(row)
            size += cost
        return batch

    async def _process(self, batch: list[dict[str, Any]]) -> str:
        """Synthesise a claimed batch and settle every row of it. Returns "done" (stored),
        "outage" (all deferred: the model is unreachable) or "failed" (the batch failed on its
        own: split, and its events settled one way or another)."""
        events = [Event.from_row(r) for r in batch]
        session = records.get_session(self.conn, self.session_id) or {}
        if events[0].kind == "finalize":
            outcome = await self._summarize(events[0], session)
        else:
            outcome = await self._observe(events, session)
        if not outcome.error:
            self._store(events, outcome, "model" if self.use_model else "heuristic")
            return "done"
        with transaction(self.conn):
            self._keep_raw_reply([e.id for e in events], outcome)
        if faults.is_transient(outcome.error):
            self._defer_for_outage([e.id for e in events], outcome)
            return "outage"
        if len(batch) > 1:
            # One bad event must not take its batch-mates down with it: split until it is alone.
            self.log(f"model failed on a batch of {len(batch)} ({outcome.error}: {outcome.detail}); splitting it")
            middle = len(batch) // 2
            first, second = batch[:middle], batch[middle:]
            if await self._process(first) == "outage":
                self._defer_for_outage([r["id"] for r in second], None)
                return "outage"
            await self._process(second)
            return "failed"
        self._failed_alone(batch[0], events[0], outcome)
        return "failed"

    def _store(self, events: list[Event], outcome: Outcome, synth: str, given_up: str | None = None) -> None:
        """Insert what was synthesised and mark its rows done, in one transaction; a model
        batch also moves the point the observer conversation resumes from past it."""
        ids = [e.id for e in events]
        project = (records.get_session(self.conn, self.session_id) or {}).get("project") or "unknown"
        prompt_number = events[0].prompt_number
        model = self.config.model if synth == "model" else None
        new_ids: list[int] = []
        summary_ids: list[int] = []
        with transaction(self.conn):
            for obs in outcome.observations:
                new_id = insert_observation(self.conn, self.session_id, project, obs, prompt_number=prompt_number,
                                            source=synth, model=model)
                if new_id is not None:
                    new_ids.append(new_id)
            if outcome.summary is not None:
                summary_model = model if outcome.summary_source == "model" else None
                summary_ids.append(upsert_summary(self.conn, self.session_id, project, outcome.summary, prompt_number=prompt_number,
                                                  source=outcome.summary_source, model=summary_model))
                records.complete_session(self.conn, self.session_id)
            self._keep_raw_reply(ids, outcome)
            if synth == "model" and self._turn is not None:
                records.set_resume_point(self.conn, self.session_id, *self._turn)
                self._fresh = False
            queue.mark_done(self.conn, ids, synth, given_up)
        self._turn = None
        # The turn is over: its prompt is indexed again with Claude's reply (the Stop hook kept it).
        replied = records.replied_prompts(self.conn, self.session_id, prompt_number) if events[0].kind == "finalize" else []
        if self.config.semantic_index and (new_ids or summary_ids or replied):
            self._notify_index(new_ids, summary_ids, replied)
        self.stats["events"] += len(ids)
        self.stats["observations"] += len(new_ids)

    def _notify_index(self, observation_ids: list[int], summary_ids: list[int], prompt_ids: list[int] = ()) -> None:
        """Tell the memory service what was committed. A hint: it finds new rows by their ids and
        catches up on start; rows rewritten in place (a summary replaced, a prompt given its reply)
        it learns of here."""
        try:
            service.call(self.config.data_dir, "index", {"observations": observation_ids, "summaries": summary_ids,
                                                         "prompts": list(prompt_ids),
                                                         "settings": service.index_settings(self.config)},
                         timeout_s=NOTIFY_TIMEOUT_S)
        except (service.ServiceUnavailable, service.ServiceError):
            pass

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

    def _failed_alone(self, row: dict[str, Any], event: Event, outcome: Outcome) -> None:
        """An event that fails on its own: another attempt after a backoff, or, once
        max_attempts are used, heuristic observations (auto) or skipped with its reason (model)."""
        reason = f"{outcome.error}: {outcome.detail}".strip(": ")
        attempts, limit = row["attempts"] + 1, self.config.max_attempts
        if attempts < limit:
            backoff = faults.attempt_backoff_s(self.config, row["attempts"])
            with transaction(self.conn):
                queue.mark_failed(self.conn, [event.id], reason, max_attempts=limit, backoff_s=backoff)
            self.log(f"model failed on event {event.id} ({reason}); attempt {attempts} of {limit}, next in {backoff:g} s")
        elif self.mode == "auto":
            note = f"the model failed on it {attempts} times; heuristic observations instead (last: {reason})"
            self._store([event], self._heuristic(event), "heuristic", note)
            self.log(f"event {event.id}: {note}; `claude-mem reprocess --session {self.session_id}` redoes it with the model")
        else:
            with transaction(self.conn):
                queue.mark_failed(self.conn, [event.id], reason, max_attempts=limit, backoff_s=0)
            self.log(f"event {event.id} skipped after {attempts} failed attempts ({reason});"
                     f" `claude-mem retry --session {self.session_id}` re-queues it")

    def _heuristic(self, event: Event) -> Outcome:
        if event.kind != "finalize":
            return Outcome(observations=heuristic.observe([event]))
        request, turn_events, last_message = self._turn_context(event)
        return Outcome(summary=heuristic.summarize(request, turn_events, last_message), summary_source="heuristic")

    # --- model and heuristic synthesis -----------------------------------------------------------

    async def _observe(self, events: list[Event], session: dict[str, Any]) -> Outcome:
        if not self.use_model:
            return Outcome(observations=heuristic.observe(events))
        body = render_batch(events)
        prompt_number = events[0].prompt_number
        header = ""
        if prompt_number != self.last_request_number:
            request = self._prompt_text(prompt_number)
            header = f"User's request #{prompt_number}: {request}\n\n" if request else ""
        message = fill("observation", request_line=header, events=body)
        reply = await self._send(message)
        if reply.error:
            return await self._model_failed(reply, lambda: Outcome(observations=heuristic.observe(events)))
        self.last_request_number = prompt_number
        result = parse_reply(reply.text)
        if result.usable() or NOTHING_MARK in "".join(reply.text.split()):
            return Outcome(observations=result.observations, **self._keep_raw(reply.text, result))
        # Nothing usable: ask once, firmly, before counting it against these events.
        retry = await self._send(fill("observation_retry"))
        if retry.error:
            failed = await self._model_failed(retry, lambda: Outcome(observations=heuristic.observe(events)))
            failed.raw, failed.raw_error = reply.text, f"no usable block; the nudge failed ({retry.error})"
            return failed
        second = parse_reply(retry.text)
        both = reply.text + "\n---\n" + retry.text
        if second.usable() or NOTHING_MARK in "".join(retry.text.split()):
            return Outcome(observations=second.observations, raw=both, raw_error="first reply unusable; answered after a nudge")
        problems = "; ".join(second.problems)[:300] or "no usable block"
        self._turn = None
        await self._close_observer()  # the next try resumes the conversation before this batch
        return Outcome(error="unparseable", detail=f"no usable reply after a nudge ({problems})", raw=both,
                       raw_error=problems)

    def _turn_context(self, finalize: Event) -> tuple[str, list[Event], str]:
        """What a turn's summary is made from: the request, the turn's events, Claude's last message."""
        request = self._prompt_text(finalize.prompt_number)
        last_message = ""
        if isinstance(finalize.tool_response, dict):
            last_message = str(finalize.tool_response.get("last_assistant_message") or "")
        return request, self._turn_events(finalize.prompt_number), last_message

    async def _summarize(self, finalize: Event, session: dict[str, Any]) -> Outcome:
        prompt_number = finalize.prompt_number
        request, turn_events, last_message = self._turn_context(finalize)
        read, edited = files_touched(turn_events)
        if not self.use_model:
            return self._heuristic(finalize)
        message = fill("summary", prompt_number=prompt_number, request=request or "(unknown)",
                       last_message=cut(last_message, 1500) or "(none)")
        reply = await self._send(message)
        if reply.error:
            return await self._model_failed(reply, lambda: self._heuristic(finalize))
        result = parse_reply(reply.text)
        observations = list(result.observations)
        extra: dict[str, Any] = {}
        if result.summary is None:
            # Models sometimes answer a summary request with observations: ask once, firmly.
            # (If that fails, the summary is derived: the conversation resumes after the first reply.)
            retry = await self._send(fill("summary_retry"))
            if not retry.error:
                second = parse_reply(retry.text)
                observations += second.observations
                result = second if second.summary is not None else result
                if second.summary is None:
                    extra = self._keep_raw(reply.text + "\n---\n" + retry.text, second)
        summary, source = result.summary, "model"
        if summary is None:
            summary, source = self._derive_summary(prompt_number, request, observations), "derived"
        summary.files_read, summary.files_edited = read, edited
        return Outcome(observations=observations, summary=summary, summary_source=source, **extra)

    def _derive_summary(self, prompt_number: int, request: str, fresh: list[Observation]) -> Summary:
        """A summary built from the turn's observations when the model would not write one."""
        stored = list_observations(self.conn, session_id=self.session_id)
        titles = [o["title"] for o in stored if o["prompt_number"] == prompt_number] + [o.title for o in fresh]
        learned = [o["title"] for o in stored if o["prompt_number"] == prompt_number and o["type"] == "discovery"]
        return Summary(request=request, completed="; ".join(dict.fromkeys(titles))[:2000], learned="; ".join(learned)[:2000],
                       notes="Derived from this turn's observations: the model did not return a <summary>.")

    def _keep_raw(self, text: str, result: ParseResult) -> dict[str, Any]:
        """Replies are kept raw when they yield nothing usable (unless the model said there was
        nothing to keep), or when some of their blocks had to be dropped."""
        if result.usable():
            dropped = [p for p in result.problems if "drop" in p.lower()]
            return {"raw": text, "raw_error": "; ".join(dropped)[:500]} if dropped else {}
        if NOTHING_MARK in "".join(text.split()):
            return {}
        return {"raw": text, "raw_error": "; ".join(result.problems)[:500] or "no usable block"}

    async def _model_failed(self, reply: Any, fallback) -> Outcome:
        # No login, or a CLI that cannot even start: with synthesizer=auto carry on without a
        # model so capture never stops (reported once). Otherwise it is an outage like any
        # transient failure: the events wait for the model (faults.py).
        cannot_start = reply.error == "crashed" and "could not start" in (reply.detail or "")
        if (reply.error == "auth" or cannot_start) and self.mode == "auto":
            message = f"{reply.error}: {reply.detail}"
            known = (records.get_session(self.conn, self.session_id) or {}).get("observer_error")
            with transaction(self.conn):
                outages.record_failure(self.conn, self.session_id, message)
            if known != message:  # reported once per session, not per worker
                log_line(self.config.logs_dir, "worker", f"session {self.session_id}: the model cannot be used ({message})",
                         stderr=True)
            self.use_model = False
            self.log("no usable model; switching this session to the heuristic synthesizer")
            return fallback()
        return Outcome(error=reply.error, detail=reply.detail)

    def _prompt_text(self, prompt_number: int) -> str:
        return cut(records.prompt_text(self.conn, self.session_id, prompt_number) or "", 1500)

    def _turn_events(self, prompt_number: int) -> list[Event]:
        rows = queue.list_rows(self.conn, session_id=self.session_id)
        return [Event.from_row(r) for r in rows if r["kind"] == "tool" and r["prompt_number"] == prompt_number]

    # --- the observer conversation ----------------------------------------------------------------

    async def _send(self, text: str) -> Any:
        """One turn of the observer conversation. A failed turn ends the CLI: the next one
        resumes the conversation cut at the last stored batch (sdk_resume_at), so the failed
        message is never merged into a later request (PLATFORM-NOTES)."""
        if self.observer is None or self.turns >= MAX_TURNS_PER_CONVERSATION:
            await self._open_observer(fresh=self._fresh or self.turns >= MAX_TURNS_PER_CONVERSATION)
            text = self._recap_prefix + text
            self._recap_prefix = ""
        reply = await self.observer.send(text)
        self.turns += 1
        self._record_usage(reply)
        if reply.error:
            self._turn = None
            await self._close_observer()
            return reply
        self._turn = (reply.session_id, reply.uuid)
        with transaction(self.conn):
            since = outages.clear(self.conn, self.session_id)
        if since is not None:
            self.log(f"the model answers again (unreachable for {(now_ms() - since) / 1000:.0f} s)")
        return reply

    _recap_prefix = ""
    _fresh = False  # a new conversation was started and nothing of it is stored yet
    _turn: tuple[str | None, str | None] | None = None  # (conversation, last good message) of the batch under way
    _outage_due: tuple[int, str] = (0, "")

    def _record_usage(self, reply: Any) -> None:
        """Add the tokens the SDK says this reply cost to the run's row, at once: a worker killed
        later has still reported what it spent (`claude-mem stats`)."""
        usage = getattr(reply, "usage", None) or {}
        if self.conn is None or self.run_id is None:
            return
        try:
            with transaction(self.conn):
                runs.add_usage(self.conn, self.run_id, usage)
        except sqlite3.Error as exc:
            self.log(f"could not record the observer's token usage: {exc}")

    async def _open_observer(self, fresh: bool) -> None:
        from claude_mem.worker.observer import Observer

        await self._close_observer()
        session = records.get_session(self.conn, self.session_id) or {}
        resume = None if fresh else session.get("sdk_session_id")
        observer_dir = os.path.join(self.config.data_dir, "observer")
        os.makedirs(observer_dir, mode=0o700, exist_ok=True)
        system = fill("init", project=session.get("project") or "unknown", date=time.strftime("%Y-%m-%d"))
        self.observer = Observer(model=self.config.model, system_prompt=system, cwd=observer_dir,
                                 cli_path=self.config.cli_path or None, resume=resume, resume_at=session.get("sdk_resume_at"),
                                 turn_timeout_s=self.config.observer_timeout_s)
        await self.observer.start()
        self.turns = 0
        self.last_request_number = -1
        if self.observer.resume_failed:
            self.log(f"could not resume the observer conversation ({self.observer.resume_failed}); starting a new one")
        self._fresh = resume is None or bool(self.observer.resume_failed)
        self._recap_prefix = ""
        if self._fresh:
            titles = [o["title"] for o in list_observations(self.conn, session_id=self.session_id)][-40:]
            if titles:
                self._recap_prefix = fill("recap", titles="\n".join(f"- {t}" for t in titles)) + "\n"

    async def _close_observer(self) -> None:
        if self.observer is not None:
            observer, self.observer = self.observer, None
            try:
                await observer.close()
            except Exception as exc:  # closing must never keep the worker from exiting
                self.log(f"observer close failed: {exc}")



def run_worker(config: Config, session_id: str, **kwargs: Any) -> str:
    return asyncio.run(Worker(config, session_id, **kwargs).run())
