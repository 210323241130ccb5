"""Turning a batch of events into observations, or a turn into its summary: through the
observer conversation (worker/conversation.py), or by the heuristic synthesizer.

A reply with nothing usable is answered with one firm nudge; a summary request answered with
observations is retried once, then derived from the turn's observations. A missing login or a
CLI that cannot start at all (not one killed or failing while it starts: that is an outage) with
synthesizer=auto switches the session to the heuristic synthesizer, reported once. What fails
otherwise comes back as an Outcome with an error, for the worker to settle (worker/loop.py,
worker/faults.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from claude_mem.logs import log_line
from claude_mem.settings import Config
from claude_mem.store import outages, queue, records
from claude_mem.store.db import transaction
from claude_mem.store.memories import Observation, Summary
from claude_mem.store.outages import Failure
from claude_mem.store.reads import list_observations
from claude_mem.text.shorten import cut
from claude_mem.worker import faults, heuristic
from claude_mem.worker.conversation import Conversation
from claude_mem.worker.events import Event, files_touched
from claude_mem.worker.heuristic.decisions import PROMPT_STATED
from claude_mem.worker.parse import ParseResult, parse_reply
from claude_mem.worker.recalled import Recalled
from claude_mem.worker.render import fill, render_batch

if TYPE_CHECKING:
    from claude_mem.worker.observer import Reply

NOTHING_MARK = "<nothing/>"  # compared with whitespace removed


@dataclass
class Outcome:
    observations: list[Observation] = field(default_factory=list)
    summary: Summary | None = None
    summary_source: str = "model"
    raw: str | None = None  # a reply kept because it yielded nothing usable
    raw_error: str = ""
    error: Failure | None = None
    detail: str = ""


class Synthesis:
    def __init__(self, config: Config, conn: sqlite3.Connection, session_id: str, mode: str, conversation: Conversation,
                 log: Callable[[str], None]) -> None:
        self.config = config
        self.conn = conn
        self.session_id = session_id
        self.mode = mode  # the synthesizer setting: auto, model or heuristic
        self.use_model = mode != "heuristic"  # auto turns it off when the model cannot be used
        self.conversation = conversation
        self.log = log
        self.recalled = Recalled(conn, session_id, log)  # what memory holds about each batch, shown to the model

    def heuristic(self, event: Event) -> Outcome:
        """Observations, or the turn's summary and what its prompt and Claude's closing message
        state, without a model."""
        if event.kind != "finalize":
            return self.heuristic_batch([event])
        request, turn_events, last_message = self._turn_context(event)
        stated = self._stated(records.prompt_text(self.conn, self.session_id, event.prompt_number) or "", turn_events, last_message)
        if turn_events:  # the prompt's own statements went with the turn's tool events (heuristic_batch)
            stated = [o for o in stated if not o.subtitle.startswith(PROMPT_STATED)]
        return Outcome(observations=stated,
                       summary=heuristic.summarize(request, turn_events, last_message), summary_source="heuristic")

    def heuristic_batch(self, events: list[Event]) -> Outcome:
        """A batch's observations without a model, with the decisions its turn's prompt states (a
        turn the user interrupts has no Stop to carry them; stored once either way: the same content)."""
        prompt = records.prompt_text(self.conn, self.session_id, events[0].prompt_number) or ""
        return Outcome(observations=heuristic.observe(events) + self._stated(prompt, events))

    def _stated(self, prompt: str, events: list[Event], last_message: str = "") -> list[Observation]:
        """The decisions, rules and conventions the prompt and Claude's closing message state
        (worker/heuristic/decisions.py); a reply repeating the prompt's statement adds nothing."""
        read, edited = files_touched(events)
        files = list(dict.fromkeys(read + edited))
        said = heuristic.stated(prompt, by="prompt", files=files)
        agreed = heuristic.stated(last_message, by="reply", files=files)
        agreed = [o for o in agreed if not any(_same_words(o.title, p.title) for p in said)]
        return said + agreed

    async def observe(self, events: list[Event]) -> Outcome:
        if not self.use_model:
            return self.heuristic_batch(events)
        prompt_number = events[0].prompt_number
        request = self._prompt_text(prompt_number)
        header = f"User's request #{prompt_number}: {request}\n\n" if request else ""
        # What memory holds about the request is looked up once, with the request's first batch.
        about = request if prompt_number != self.conversation.last_request_number else ""
        message = fill("observation", memory=self._memory(events, about), events=render_batch(events))
        reply = await self.conversation.send(message, request=(prompt_number, header))
        if reply.error:
            return await self._model_failed(reply, lambda: self.heuristic_batch(events))
        result = parse_reply(reply.text)
        if result.usable() or NOTHING_MARK in "".join(reply.text.split()):
            self.recalled.answered()
            return Outcome(observations=result.observations, **self._keep_raw(reply.text, result))
        # Nothing usable: ask once, firmly, before counting it against these events.
        retry = await self.conversation.send(fill("observation_retry"))
        if retry.error:
            failed = await self._model_failed(retry, lambda: self.heuristic_batch(events))
            failed.raw, failed.raw_error = reply.text, f"no usable block; the nudge failed ({retry.error})"
            return failed
        second = parse_reply(retry.text)
        both = reply.text + "\n---\n" + retry.text
        if second.usable() or NOTHING_MARK in "".join(retry.text.split()):
            self.recalled.answered()
            return Outcome(observations=second.observations, raw=both, raw_error="first reply unusable; answered after a nudge")
        problems = "; ".join(second.problems)[:300] or "no usable block"
        await self.conversation.drop()  # the next try resumes the conversation before this batch
        return Outcome(error=Failure.UNPARSEABLE, detail=f"no usable reply after a nudge ({problems})", raw=both,
                       raw_error=problems)

    def _memory(self, events: list[Event], request: str) -> str:
        """What memory holds about the batch; nothing (logged) when it cannot be read."""
        try:
            return self.recalled.block(events, request)
        except sqlite3.Error as exc:
            self.log(f"could not read what memory holds about the batch ({exc}); sent without it")
            return ""

    def _turn_context(self, finalize: Event) -> tuple[str, list[Event], str]:
        """What a turn's summary is made from: the request, the turn's events, Claude's last message."""
        request = self._prompt_text(finalize.prompt_number)
        last_message = ""
        if isinstance(finalize.tool_response, dict):
            last_message = str(finalize.tool_response.get("last_assistant_message") or "")
        return request, self._turn_events(finalize.prompt_number), last_message

    async def summarize(self, finalize: Event) -> Outcome:
        prompt_number = finalize.prompt_number
        request, turn_events, last_message = self._turn_context(finalize)
        read, edited = files_touched(turn_events)
        if not self.use_model:
            return self.heuristic(finalize)
        message = fill("summary", prompt_number=prompt_number, request=request or "(unknown)",
                       last_message=cut(last_message, 1500) or "(none)")
        reply = await self.conversation.send(message)
        if reply.error:
            return await self._model_failed(reply, lambda: self.heuristic(finalize))
        result = parse_reply(reply.text)
        observations = list(result.observations)
        extra: dict[str, Any] = {}
        if result.summary is None:
            # Models sometimes answer a summary request with observations: ask once, firmly.
            # (If that fails, the summary is derived: the conversation resumes after the first reply.)
            retry = await self.conversation.send(fill("summary_retry"))
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

    async def _model_failed(self, reply: Reply, fallback: Callable[[], Outcome]) -> Outcome:
        # No login, or a CLI that cannot start at all (worker/faults.py NO_MODEL): with
        # synthesizer=auto carry on without a model so capture never stops, reported once.
        # Anything else, a CLI killed or failing while it starts included, is an outage: the
        # events wait for the model.
        if reply.error not in faults.NO_MODEL or (self.mode != "auto" and reply.error != Failure.CANNOT_START):
            return Outcome(error=reply.error, detail=reply.detail)
        message = f"{reply.error}: {reply.detail}"
        known = (records.get_session(self.conn, self.session_id) or {}).get("observer_error") or ""
        with transaction(self.conn):
            outages.record_failure(self.conn, self.session_id, message)
        instead = "heuristic observations instead" if self.mode == "auto" else \
            f"its events are skipped; `claude-mem retry --session {self.session_id}` re-queues them"
        if not known.startswith(reply.error + ":"):  # reported once per session, not per worker or batch
            log_line(self.config.logs_dir, "worker", f"session {self.session_id}: the model cannot be used ({message}); {instead}",
                     stderr=True)
        if self.mode != "auto":
            return Outcome(error=reply.error, detail=reply.detail)
        self.use_model = False
        self.log(f"no usable model ({reply.error}); switching this session to the heuristic synthesizer")
        return fallback()

    def _prompt_text(self, prompt_number: int) -> str:
        return cut(records.prompt_text(self.conn, self.session_id, prompt_number) or "", 1500)

    def _turn_events(self, prompt_number: int) -> list[Event]:
        rows = queue.list_rows(self.conn, session_id=self.session_id)
        return [Event.from_row(r) for r in rows if r["kind"] == "tool" and r["prompt_number"] == prompt_number]



def _same_words(a: str, b: str) -> bool:
    """Two statements of one rule: most words of the shorter are in the longer."""
    x, y = set(a.lower().split()), set(b.lower().split())
    return bool(x and y) and len(x & y) >= 0.7 * min(len(x), len(y))
