"""The per-session worker: claim queued events in order, have them observed, store the result.

Exactly once: a batch's observations are inserted and its queue rows marked done in ONE
transaction; observations carry a content hash unique per session, so a batch replayed after a
crash (or the CLI re-sending a failed message) inserts nothing new. A worker killed at any
point leaves rows pending or processing; the next worker (holding the session's lock, so no
other worker can own them) takes processing rows back.

Model failures count an attempt with a backoff; after `max_attempts` a row is skipped with its
reason (`claude-mem retry` re-queues it). A missing login is a whole-session outage: it is
recorded once on the session and, with synthesizer=auto, the heuristic synthesizer takes over
so capture never stops.
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

from claude_mem.hooks import drain_spool
from claude_mem.logs import log_line
from claude_mem.settings import Config
from claude_mem.store import queue, records
from claude_mem.store.db import connect, now_ms, transaction
from claude_mem.store.memories import Observation, Summary, insert_observation, list_observations, upsert_summary
from claude_mem.store.reads import cut
from claude_mem.worker import heuristic, spawn
from claude_mem.worker.indexer import Indexer
from claude_mem.worker.parse import ParseResult, parse_reply
from claude_mem.worker.render import Event, files_touched, fill, render_batch, render_event

POLL_S = 0.2
# A fresh conversation (with a recap) after this many turns keeps each request's history, and
# so its cost, bounded.
MAX_TURNS_PER_CONVERSATION = 40
NOTHING_MARK = "<nothing/>"  # compared with whitespace removed
# How long an exiting worker lets the indexer finish: what it leaves is indexed by the next one.
INDEX_WAIT_S = 60.0
INDEX_WAIT_ON_SIGNAL_S = 3.0


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
        self.indexer: Indexer | None = None

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
        reason = "stopped"
        try:
            self.conn = connect(config.db_path)
            self._register()
            released = queue.release_processing(self.conn, self.session_id)
            if released:
                self.log(f"took back {released} event(s) a previous worker left in processing")
            drain_spool(config, self.conn)
            if config.semantic_index:
                self.indexer = Indexer(config, self.session_id, self.log)
                self.indexer.start()
            task = asyncio.current_task()
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                try:
                    loop.add_signal_handler(sig, self._request_stop, task)
                except (NotImplementedError, RuntimeError):
                    pass
            try:
                reason = await self._loop()
                # Events that arrive while the indexer finishes would find this worker's lock
                # held and start no worker of their own: let it finish, then look again.
                while self.indexer is not None and reason in ("idle", "drained", "session ended"):
                    await asyncio.to_thread(self.indexer.wait_idle, INDEX_WAIT_S)
                    if not queue.next_pending(self.conn, self.session_id, limit=1):
                        break
                    reason = await self._loop()
            except (asyncio.CancelledError, Stopping):
                reason = "signal"
            self.log(f"exiting ({reason}): {self.stats['events']} events, {self.stats['observations']} observations")
            return reason
        finally:
            await self._close_observer()
            self._close_indexer(INDEX_WAIT_ON_SIGNAL_S if reason == "signal" else INDEX_WAIT_S)
            if self.conn is not None:
                self._unregister(reason)
                self.conn.close()
            try:
                os.unlink(spawn.info_path(config.workers_dir, self.session_id))
            except OSError:
                pass
            os.close(lock_fd)

    def _close_indexer(self, timeout_s: float) -> None:
        if self.indexer is not None and not self.indexer.close(timeout_s):
            self.log(f"indexing not finished after {timeout_s:g} s; the next worker indexes the rest")

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
            self.run_id = self.conn.execute(
                "INSERT INTO worker_runs (session_id, pid, create_time, worker_id, synthesizer, started_at_epoch)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (self.session_id, pid, create_time, self.worker_id, self.mode, now_ms()),
            ).lastrowid
        info = {"session_id": self.session_id, "pid": pid, "create_time": create_time, "worker_id": self.worker_id,
                "started_at_epoch": now_ms(), "synthesizer": self.mode}
        path = spawn.info_path(self.config.workers_dir, self.session_id)
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            json.dump(info, fh)
        os.replace(path + ".tmp", path)

    def _unregister(self, reason: str) -> None:
        try:
            with transaction(self.conn):
                self.conn.execute(
                    "UPDATE worker_runs SET ended_at_epoch = ?, exit_reason = ?, events_done = ?, observations_stored = ?"
                    " WHERE id = ?",
                    (now_ms(), reason, self.stats["events"], self.stats["observations"], self.run_id),
                )
        except sqlite3.Error:
            pass

    # --- the loop -------------------------------------------------------------------------------

    async def _loop(self) -> str:
        conn = self.conn
        idle_since = time.monotonic()
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
                # Sleep until another connection commits (data_version moves) or a poll passes.
                version = conn.execute("PRAGMA data_version").fetchone()[0]
                if version == last_version:
                    await asyncio.sleep(POLL_S)
                last_version = version
                continue
            wait_ms = rows[0]["next_attempt_epoch"] - now_ms()
            if wait_ms > 0:
                await asyncio.sleep(min(wait_ms / 1000, 1.0))
                continue
            batch = self._take_batch(rows)
            ids = [r["id"] for r in batch]
            with transaction(conn):
                queue.claim(conn, ids, self.worker_id)
            try:
                await self._process(batch)
            except BaseException:
                # Cancelled (SIGTERM) or crashed mid-batch: hand the rows back untouched.
                with transaction(conn):
                    queue.release(conn, ids)
                raise
            idle_since = time.monotonic()

    def _session_ended(self) -> bool:
        """Claude Code sent SessionEnd: nothing more will come (a resumed session sets it active again)."""
        row = self.conn.execute("SELECT status FROM sdk_sessions WHERE claude_session_id = ?", (self.session_id,)).fetchone()
        return row is not None and row[0] == "ended"

    def _take_batch(self, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """A finalize alone, or consecutive ready tool rows of one prompt up to batch_chars."""
        first = rows[0]
        if first["kind"] == "finalize":
            return [first]
        batch = [first]
        size = len(render_event(Event.from_row(first)))
        now = now_ms()
        for row in rows[1:]:
            if row["kind"] != "tool" or row["prompt_number"] != first["prompt_number"] or row["next_attempt_epoch"] > now:
                break
            cost = len(render_event(Event.from_row(row)))
            if size + cost > self.config.batch_chars:
                break
            batch.append(row)
            size += cost
        return batch

    async def _process(self, batch: list[dict[str, Any]]) -> None:
        events = [Event.from_row(r) for r in batch]
        ids = [e.id for e in events]
        session = records.get_session(self.conn, self.session_id) or {}
        project = session.get("project") or "unknown"
        if events[0].kind == "finalize":
            outcome = await self._summarize(events[0], session)
        else:
            outcome = await self._observe(events, session)
        if outcome.error:
            await self._fail(ids, outcome)
            return
        prompt_number = events[0].prompt_number
        synth = "model" if self.use_model else "heuristic"
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
                self.conn.execute(
                    "UPDATE sdk_sessions SET status = CASE status WHEN 'ended' THEN 'ended' ELSE 'completed' END,"
                    " completed_at_epoch = ? WHERE claude_session_id = ?",
                    (now_ms(), self.session_id))
            if outcome.raw is not None:
                self.conn.execute(
                    "INSERT INTO raw_replies (session_id, queue_ids, reply, error, created_at, created_at_epoch)"
                    " VALUES (?, ?, ?, ?, datetime('now'), ?)",
                    (self.session_id, json.dumps(ids), outcome.raw, outcome.raw_error or "no usable block", now_ms()))
            queue.mark_done(self.conn, ids, synth)
        if self.indexer is not None:
            # The turn is over: its prompt is indexed again with Claude's reply (the Stop hook kept it).
            replied = [] if events[0].kind != "finalize" else [r[0] for r in self.conn.execute(
                "SELECT id FROM user_prompts WHERE session_id = ? AND prompt_number = ? AND reply_text != ''",
                (self.session_id, prompt_number))]
            self.indexer.committed(new_ids, summary_ids, replied)
        self.stats["events"] += len(ids)
        self.stats["observations"] += len(new_ids)

    async def _fail(self, ids: list[int], outcome: Outcome) -> None:
        attempts = self.conn.execute(
            f"SELECT MAX(attempts) FROM observation_queue WHERE id IN ({','.join('?' * len(ids))})", ids).fetchone()[0] or 0
        backoff = self.config.retry_backoff_s * (4 ** attempts)
        with transaction(self.conn):
            skipped = queue.mark_failed(self.conn, ids, f"{outcome.error}: {outcome.detail}".strip(": "),
                                        max_attempts=self.config.max_attempts, backoff_s=backoff)
        self.log(f"model failed ({outcome.error}: {outcome.detail}); {len(ids)} event(s) back in the queue"
                 + (f", {skipped} skipped after {self.config.max_attempts} attempts" if skipped else ""))

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
        return Outcome(observations=result.observations, **self._keep_raw(reply.text, result))

    async def _summarize(self, finalize: Event, session: dict[str, Any]) -> Outcome:
        prompt_number = finalize.prompt_number
        request = self._prompt_text(prompt_number)
        turn_events = self._turn_events(prompt_number)
        read, edited = files_touched(turn_events)
        last_message = ""
        if isinstance(finalize.tool_response, dict):
            last_message = str(finalize.tool_response.get("last_assistant_message") or "")
        if not self.use_model:
            return Outcome(summary=heuristic.summarize(request, turn_events, last_message), summary_source="heuristic")
        message = fill("summary", prompt_number=prompt_number, request=request or "(unknown)",
                       last_message=cut(last_message, 1500) or "(none)")
        reply = await self._send(message)
        if reply.error:
            return await self._model_failed(
                reply, lambda: Outcome(summary=heuristic.summarize(request, turn_events, last_message), summary_source="heuristic"))
        result = parse_reply(reply.text)
        observations = list(result.observations)
        extra: dict[str, Any] = {}
        if result.summary is None:
            # Models sometimes answer a summary request with observations: ask once, firmly.
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
        # No login, or a CLI that cannot even start, is an outage of the whole session, not a
        # property of these events: report it once, and with synthesizer=auto carry on without
        # a model so capture never stops.
        cannot_start = reply.error == "crashed" and "could not start" in (reply.detail or "")
        if reply.error == "auth" or cannot_start:
            self._record_outage(f"{reply.error}: {reply.detail}")
            if self.mode == "auto":
                self.use_model = False
                await self._close_observer()
                self.log("no usable model; switching this session to the heuristic synthesizer")
                return fallback()
        if reply.error in ("crashed", "timeout"):
            await self._close_observer()  # the next batch resumes the conversation in a new CLI
        return Outcome(error=reply.error, detail=reply.detail)

    def _record_outage(self, message: str) -> None:
        row = self.conn.execute("SELECT observer_error FROM sdk_sessions WHERE claude_session_id = ?",
                                (self.session_id,)).fetchone()
        if row and row[0] == message:
            return  # reported once per session, not per event
        with transaction(self.conn):
            self.conn.execute(
                "UPDATE sdk_sessions SET observer_error = ?, observer_error_at_epoch = ? WHERE claude_session_id = ?",
                (message, now_ms(), self.session_id))
        log_line(self.config.logs_dir, "worker", f"session {self.session_id}: the model cannot be used ({message})", stderr=True)

    def _prompt_text(self, prompt_number: int) -> str:
        row = self.conn.execute("SELECT prompt_text FROM user_prompts WHERE session_id = ? AND prompt_number = ?",
                                (self.session_id, prompt_number)).fetchone()
        return cut(row[0], 1500) if row else ""

    def _turn_events(self, prompt_number: int) -> list[Event]:
        rows = queue.list_rows(self.conn, session_id=self.session_id)
        return [Event.from_row(r) for r in rows if r["kind"] == "tool" and r["prompt_number"] == prompt_number]

    # --- the observer conversation ----------------------------------------------------------------

    async def _send(self, text: str) -> Any:
        if self.observer is None or self.turns >= MAX_TURNS_PER_CONVERSATION:
            await self._open_observer(fresh=self.turns >= MAX_TURNS_PER_CONVERSATION)
            text = self._recap_prefix + text
            self._recap_prefix = ""
        reply = await self.observer.send(text)
        self.turns += 1
        if not reply.error and self.conn is not None:
            row = records.get_session(self.conn, self.session_id) or {}
            updates = {}
            if reply.session_id and reply.session_id != row.get("sdk_session_id"):
                updates["sdk_session_id"] = reply.session_id
            if row.get("observer_error"):
                updates["observer_error"] = None
            if updates:
                sets = ", ".join(f"{k} = ?" for k in updates)
                with transaction(self.conn):
                    self.conn.execute(f"UPDATE sdk_sessions SET {sets} WHERE claude_session_id = ?",
                                      (*updates.values(), self.session_id))
        return reply

    _recap_prefix = ""

    async def _open_observer(self, fresh: bool) -> None:
        from claude_mem.worker.observer import Observer

        await self._close_observer()
        session = records.get_session(self.conn, self.session_id) or {}
        resume = None if fresh else session.get("sdk_session_id")
        observer_dir = os.path.join(self.config.data_dir, "observer")
        os.makedirs(observer_dir, mode=0o700, exist_ok=True)
        system = fill("init", project=session.get("project") or "unknown", date=time.strftime("%Y-%m-%d"))
        self.observer = Observer(model=self.config.model, system_prompt=system, cwd=observer_dir,
                                 cli_path=self.config.cli_path or None, resume=resume,
                                 turn_timeout_s=self.config.observer_timeout_s)
        await self.observer.start()
        self.turns = 0
        self.last_request_number = -1
        if self.observer.resume_failed:
            self.log(f"could not resume the observer conversation ({self.observer.resume_failed}); starting a new one")
        if resume is None or self.observer.resume_failed:
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
