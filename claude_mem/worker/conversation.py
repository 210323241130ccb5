"""A session's observer conversation, as the worker holds it: opened on the first turn (resumed
where the last stored batch left it, or fresh with a recap), renewed every
MAX_TURNS_PER_CONVERSATION turns, ended by any failed turn, and each reply's token usage
written to the worker's run at once.

The model is reached only through an `ObserverLike`: worker/observer.py's Observer (the
claude-agent-sdk client, imported on first use) in production; tests reach the same seam with
the fake Claude CLI behind it.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from claude_mem.settings import Config
from claude_mem.store import outages, records, runs
from claude_mem.store.db import now_ms, transaction
from claude_mem.store.memories import list_observations
from claude_mem.worker.render import fill

if TYPE_CHECKING:
    from claude_mem.worker.observer import Reply

# A fresh conversation (with a recap) after this many turns keeps each request's history, and
# so its cost, bounded.
MAX_TURNS_PER_CONVERSATION = 40


@runtime_checkable
class ObserverLike(Protocol):
    """What the worker needs of an observer: one conversation, a turn at a time."""

    resume_failed: str | None  # why the conversation asked for could not be resumed

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
        self.last_request_number = -1  # the prompt whose text the conversation has seen last
        self.run_id: int | None = None  # the worker run its token usage is added to
        self.fresh = False  # a new conversation was started and nothing of it is stored yet
        # (conversation, last good message) of the batch under way: where to resume once it is stored
        self.turn: tuple[str | None, str | None] | None = None
        self._recap_prefix = ""

    async def send(self, text: str) -> Reply:
        """One turn of the observer conversation. A failed turn ends the CLI: the next one
        resumes the conversation cut at the last stored batch (sdk_resume_at), so the failed
        message is never merged into a later request (PLATFORM-NOTES)."""
        if self.observer is None or self.turns >= MAX_TURNS_PER_CONVERSATION:
            await self._open(fresh=self.fresh or self.turns >= MAX_TURNS_PER_CONVERSATION)
            text = self._recap_prefix + text
            self._recap_prefix = ""
        assert self.observer is not None
        reply = await self.observer.send(text)
        self.turns += 1
        self._record_usage(reply)
        if reply.error:
            await self.drop()
            return reply
        self.turn = (reply.session_id, reply.uuid)
        with transaction(self.conn):
            since = outages.clear(self.conn, self.session_id)
        if since is not None:
            self.log(f"the model answers again (unreachable for {(now_ms() - since) / 1000:.0f} s)")
        return reply

    async def drop(self) -> None:
        """Forget the batch under way and end the CLI: the next turn resumes the conversation
        before it."""
        self.turn = None
        await self.close()

    def _record_usage(self, reply: Reply) -> None:
        """Add the tokens the SDK says this reply cost to the run's row, at once: a worker killed
        later has still reported what it spent (`claude-mem stats`)."""
        usage = getattr(reply, "usage", None) or {}
        if self.run_id is None:
            return
        try:
            with transaction(self.conn):
                runs.add_usage(self.conn, self.run_id, usage)
        except sqlite3.Error as exc:
            self.log(f"could not record the observer's token usage: {exc}")

    async def _open(self, fresh: bool) -> None:
        from claude_mem.worker.observer import Observer

        await self.close()
        session = records.get_session(self.conn, self.session_id) or {}
        resume = None if fresh else session.get("sdk_session_id")
        observer_dir = os.path.join(self.config.data_dir, "observer")
        os.makedirs(observer_dir, mode=0o700, exist_ok=True)
        system = fill("init", project=session.get("project") or "unknown", date=time.strftime("%Y-%m-%d"))
        observer = Observer(model=self.config.model, system_prompt=system, cwd=observer_dir,
                            cli_path=self.config.cli_path or None, resume=resume, resume_at=session.get("sdk_resume_at"),
                            turn_timeout_s=self.config.observer_timeout_s)
        self.observer = observer
        await observer.start()
        self.turns = 0
        self.last_request_number = -1
        if observer.resume_failed:
            self.log(f"could not resume the observer conversation ({observer.resume_failed}); starting a new one")
        self.fresh = resume is None or bool(observer.resume_failed)
        self._recap_prefix = ""
        if self.fresh:
            titles = [o["title"] for o in list_observations(self.conn, session_id=self.session_id)][-40:]
            if titles:
                self._recap_prefix = fill("recap", titles="\n".join(f"- {t}" for t in titles)) + "\n"

    async def close(self) -> None:
        if self.observer is not None:
            observer, self.observer = self.observer, None
            try:
                await observer.close()
            except Exception as exc:  # closing must never keep the worker from exiting
                self.log(f"observer close failed: {exc}")
