"""A session's observer conversation, as the worker holds it: opened on the first turn (resumed
where the last stored batch left it, or fresh with a recap), renewed once a request carries
`observer_context_tokens` (at or past the size the bill per event is lowest at,
bench/observer_bill.py --sweep), ended by any failed turn, put to sleep between bursts of work
(its CLI ended; the next turn resumes the same conversation), and each reply's token usage
written to the worker's run and to the day's total at once. Once the day's total reaches the
budget (setting observer_daily_tokens), no request is sent: every turn answers "budget".

A CLI that fails to start again and again (killed, exiting, hanging while it starts) is an
outage like any other, until it has failed for `observer_start_give_up_s` and at least
GIVE_UP_MIN_STARTS times in a row with no start that worked: then the failure is reported as
"cannot_start" (worker/faults.py), so no event waits forever. The run of failed starts is kept in
a file beside the session's worker lock: it outlives the workers that an outage comes and goes
through.

The model is reached only through an `ObserverLike`: worker/observer.py's Observer (the
claude-agent-sdk client, imported on first use) in production; tests reach the same seam with
the fake Claude CLI behind it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from claude_mem.jsonfile import write_json_atomic
from claude_mem.logs import log_line
from claude_mem.processes.census import observer_dir
from claude_mem.settings import Config
from claude_mem.store import budget, outages, records, runs
from claude_mem.store.db import now_ms, transaction
from claude_mem.store.memory_rows import list_observations
from claude_mem.store.outages import Failure
from claude_mem.worker import echoes, spawn
from claude_mem.worker.render import fill

if TYPE_CHECKING:
    from claude_mem.worker.observer import Reply

# The error of a turn not sent because the day's token budget is spent.
OVER_BUDGET = Failure.OVER_BUDGET
GIVE_UP_MIN_STARTS = 3  # a run of failed starts this short is not "without end", however long it took


@runtime_checkable
class ObserverLike(Protocol):
    """What the worker needs of an observer: one conversation, a turn at a time."""

    resume_failed: str | None  # why the conversation asked for could not be resumed
    failed_to_start: bool  # start() ended without a running CLI

    async def start(self) -> None: ...

    async def send(self, text: str) -> Reply: ...

    async def close(self) -> None: ...


class Conversation:
    def __init__(self, config: Config, conn: sqlite3.Connection, session_id: str, log: Callable[[str], None]) -> None:
        self.config = config
        self.conn = conn
        self.session_id = session_id
        self.log = log
        self.observer: ObserverLike | None = None
        self.turns = 0
        self.context_tokens = 0  # what the conversation's last request and reply held: the next request re-reads it
        self.last_request_number = -1  # the prompt whose text the conversation has seen last
        self.run_id: int | None = None  # the worker run its token usage is added to
        self.fresh = False  # a new conversation was started and nothing of it is stored yet
        # (conversation, last good message) of the batch under way: where to resume once it is stored
        self.turn: tuple[str | None, str | None] | None = None
        self._recap_prefix = ""
        self._asleep = False  # the CLI was ended between batches: the next one resumes where it was
        # The titles the recap showed as recorded, for the reply to the message that carried it:
        # a careless model writes them down again there. Later, a title may well recur for a new event.
        self.recap_titles: frozenset[str] = frozenset()
        self._recap_titles: frozenset[str] = frozenset()  # of the recap not sent yet

    async def send(self, text: str, request: tuple[int, str] | None = None) -> Reply:
        """One turn of the observer conversation. A failed turn ends the CLI: the next one
        resumes the conversation cut at the last stored batch (sdk_resume_at), so the failed
        message is never merged into a later request (PLATFORM-NOTES).

        `request` (its number, its header line) goes in front of the text when this conversation
        has not seen it: decided here, after the CLI is opened, since a conversation that could
        not be resumed or was renewed starts without it."""
        over = budget.reached(self.conn, self.config.observer_daily_tokens)
        if over is not None:
            from claude_mem.worker.observer import Reply

            await self.sleep()
            return Reply(text="", session_id=None, error=OVER_BUDGET,
                         detail=f"{over['total']:,} of {self.config.observer_daily_tokens:,} tokens spent today")
        # Every request re-reads the whole conversation (from the prompt cache at best): past
        # observer_context_tokens a fresh one with a recap costs less per event.
        renew = self.context_tokens >= self.config.observer_context_tokens
        if self.observer is None or renew:
            await self._open(fresh=self.fresh or renew)
        if request is not None and request[0] != self.last_request_number:
            text = request[1] + text
        text, self._recap_prefix = self._recap_prefix + text, ""
        self.recap_titles, self._recap_titles = self._recap_titles, frozenset()
        assert self.observer is not None
        observer = self.observer
        reply = await observer.send(text)
        self.turns += 1
        self._record_usage(reply)
        if reply.error:
            await self.drop()
            return self._given_up(reply) if observer.failed_to_start else reply
        self.turn = (reply.session_id, reply.uuid)
        if request is not None:
            self.last_request_number = request[0]
        with transaction(self.conn):
            since = outages.clear(self.conn, self.session_id)
        if since is not None:
            self.log(f"the model answers again (unreachable for {(now_ms() - since) / 1000:.0f} s)")
        return reply

    async def drop(self) -> None:
        """Forget the batch under way and end the CLI: the next turn resumes the conversation
        before it."""
        self.turn = None
        self._asleep = False
        await self.close()

    async def sleep(self) -> bool:
        """End the CLI between batches (call only with no batch under way). The conversation
        stays as it is: the next turn resumes it where the last stored batch left it, which is
        where it ended, and sends nothing it already holds. Returns whether a CLI was running."""
        if self.observer is None:
            return False
        await self.close()
        self._asleep = True
        return True

    def _record_usage(self, reply: Reply) -> None:
        """Add the tokens the SDK says this reply cost to the run's row and to today's total, at
        once: a worker killed later has still reported what it spent (`claude-mem stats`), and
        every worker sees the day's budget as spent so far."""
        usage = getattr(reply, "usage", None) or {}
        if usage:
            self.context_tokens = sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_read_input_tokens",
                                                                       "cache_creation_input_tokens", "output_tokens"))
        limit = self.config.observer_daily_tokens
        try:
            with transaction(self.conn):
                if self.run_id is not None:
                    runs.add_usage(self.conn, self.run_id, usage)
                budget.add(self.conn, usage)
                crossed = budget.mark_reached(self.conn, limit)
        except sqlite3.Error as exc:
            self.log(f"could not record the observer's token usage: {exc}")
            return
        if crossed is not None:
            then = ("the heuristic synthesizer takes the rest of today's events (`claude-mem reprocess --session ID`"
                    " redoes a session's with the model)") if self.config.synthesizer == "auto" else "events wait for tomorrow"
            log_line(self.config.logs_dir, "worker", f"observer_daily_tokens reached: {crossed['total']:,} of {limit:,}"
                     f" tokens today; {then}", stderr=True)

    async def _open(self, fresh: bool) -> None:
        from claude_mem.worker.observer import Observer

        waking, self._asleep = self._asleep and not fresh, False
        await self.close()
        session = records.get_session(self.conn, self.session_id)
        resume = None if fresh or session is None else session.sdk_session_id
        folder = observer_dir(self.config.data_dir)
        os.makedirs(folder, mode=0o700, exist_ok=True)
        system = fill("init", project=session.project if session else "unknown", date=time.strftime("%Y-%m-%d"))
        observer = Observer(model=self.config.model, system_prompt=system, cwd=folder,
                            cli_path=self.config.cli_path or None, resume=resume, resume_at=session.sdk_resume_at if session else None,
                            turn_timeout_s=self.config.observer_timeout_s)
        self.observer = observer
        await observer.start()
        self._count_start(observer.failed_to_start)
        if observer.resume_failed:
            self.log(f"could not resume the observer conversation ({observer.resume_failed}); starting a new one")
        self.fresh = resume is None or bool(observer.resume_failed)
        if not waking or self.fresh:
            # Woken from sleep, the conversation is the one left: its size counts on towards
            # renewal, and the request it saw last needs no header again.
            self.turns = 0
            self.context_tokens = 0
            self.last_request_number = -1
        self._recap_prefix, self._recap_titles = "", frozenset()
        if self.fresh:
            titles = [o.title for o in list_observations(self.conn, session_id=self.session_id, given=True)][-40:]
            self._recap_titles = echoes.shown_titles(titles)
            if titles:
                self._recap_prefix = fill("recap", titles="\n".join(f"- {t}" for t in titles)) + "\n"

    # --- a CLI that keeps failing to start ------------------------------------------------------

    def _starts_path(self) -> str:
        return os.path.join(self.config.workers_dir, spawn.session_key(self.session_id) + ".starts")

    def _count_start(self, failed: bool) -> None:
        """One more failed start in the run, or the run ended by a start that worked."""
        path = self._starts_path()
        try:
            if not failed:
                if os.path.exists(path):
                    os.unlink(path)
                return
            run = self._failed_starts() or {"since": now_ms(), "failures": 0}
            run["failures"] += 1
            write_json_atomic(path, run)
        except OSError as exc:  # the count is a safeguard: never a reason to stop the worker
            self.log(f"could not keep the count of failed observer starts: {exc}")

    def _failed_starts(self) -> dict[str, int] | None:
        try:
            with open(self._starts_path(), encoding="utf-8") as fh:
                run = json.load(fh)
            return {"since": int(run["since"]), "failures": int(run["failures"])}
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _given_up(self, reply: Reply) -> Reply:
        """A start failure, as "cannot_start" once the CLI has kept failing to start long enough."""
        run = self._failed_starts()
        if reply.error == Failure.CANNOT_START or run is None or run["failures"] < GIVE_UP_MIN_STARTS:
            return reply
        minutes = (now_ms() - run["since"]) / 60_000
        if minutes * 60 < self.config.observer_start_give_up_s:
            return reply
        detail = (f"the Claude CLI has failed to start {run['failures']} times in a row over {minutes:.0f} min"
                  f" (setting observer_start_give_up_s); last: {reply.error}: {reply.detail}")
        return dataclasses.replace(reply, error=Failure.CANNOT_START, detail=detail)

    async def close(self) -> None:
        if self.observer is not None:
            observer, self.observer = self.observer, None
            try:
                await observer.close()
            except Exception as exc:  # closing must never keep the worker from exiting
                self.log(f"observer close failed: {exc}")
