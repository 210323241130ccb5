"""Turning a batch into observations and summaries: through the observer conversation
(worker/conversation.py), or by the heuristic synthesizer.

A batch is a run of queue rows in order (worker/loop.py chooses it): the events of one turn or
of several, each turn that ended with its end (the finalize row). It is one message: per turn,
its request (the first turn's only if the conversation has not seen it), its events, and "the
turn has ended" with Claude's last message; then, when a turn ended, the request for one
<summary request="N"> per turn, each after that turn's observations. The reply's blocks are
placed in turns by that order (worker/parse.py keeps it): an observation belongs to the turn of
the summary after it, or, after the last one, to the batch's last turn. A turn's summary rides
with its last events instead of a request of its own.

A reply with nothing usable is answered with one firm nudge; a summary still missing is asked
for once, then derived from the turn's observations. A missing login or a CLI that cannot start
at all (not one killed or failing while it starts: that is an outage) with synthesizer=auto
switches the session to the heuristic synthesizer, reported once. What fails otherwise comes back
as an Outcome with an error, for the worker to settle (worker/loop.py, worker/faults.py).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from claude_mem.logs import log_line
from claude_mem.settings import Config
from claude_mem.store import outages, queue, queue_rows, records
from claude_mem.store.db import transaction
from claude_mem.store.memories import Observation, Summary
from claude_mem.store.memory_rows import list_observations
from claude_mem.store.outages import Failure
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
class Turn:
    """The part of a batch that belongs to one prompt: its events, and its end when it ended."""

    prompt_number: int
    events: list[Event] = field(default_factory=list)
    end: Event | None = None  # the finalize row: the turn ended, a summary is wanted


def turns_of(events: list[Event]) -> list[Turn]:
    """A batch's rows as turns, in order (a turn ends at its finalize row)."""
    turns: list[Turn] = []
    for event in events:
        if not turns or turns[-1].prompt_number != event.prompt_number or turns[-1].end is not None:
            turns.append(Turn(event.prompt_number))
        if event.kind == "finalize":
            turns[-1].end = event
        else:
            turns[-1].events.append(event)
    return turns


@dataclass
class Outcome:
    observations: list[Observation] = field(default_factory=list)
    prompts: list[int] = field(default_factory=list)  # each observation's prompt number (empty: the batch's first)
    # A turn's summary and who wrote it ("model", "derived", "heuristic"), by prompt number.
    summaries: dict[int, tuple[Summary, str]] = field(default_factory=dict)
    raw: str | None = None  # a reply kept because it yielded nothing usable
    raw_error: str = ""
    error: Failure | None = None
    detail: str = ""
    # The titles a recap in the batch's message showed as recorded: a careless model writes them
    # down again in its reply, or in the answer to a nudge that follows.
    recap_titles: frozenset[str] = frozenset()


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

    def heuristic(self, events: list[Event]) -> Outcome:
        """Observations, what each turn's prompt and Claude's closing message state, and the
        summaries of the turns that ended, without a model."""
        outcome = Outcome()
        for turn in turns_of(events):
            found: list[Observation] = []
            if turn.events:
                # The prompt's statements go with its turn's tool events (a turn the user interrupts
                # has no end to carry them; stored once either way: the same content).
                found = heuristic.observe(turn.events) + self._stated(self._prompt(turn.prompt_number), turn.events)
            if turn.end is not None:
                request, turn_events, last_message = self._turn_context(turn.end)
                stated = self._stated(self._prompt(turn.prompt_number), turn_events, last_message)
                if turn_events:  # the prompt's own statements went with the turn's tool events
                    stated = [o for o in stated if not o.subtitle.startswith(PROMPT_STATED)]
                found += stated
                outcome.summaries[turn.prompt_number] = (heuristic.summarize(request, turn_events, last_message), "heuristic")
            outcome.observations += found
            outcome.prompts += [turn.prompt_number] * len(found)
        return outcome

    def _prompt(self, prompt_number: int) -> str:
        return records.prompt_text(self.conn, self.session_id, prompt_number) or ""

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
            return self.heuristic(events)
        turns = turns_of(events)
        message, header = self._message(turns)
        reply = await self.conversation.send(message, request=(turns[0].prompt_number, header))
        if reply.error:
            return await self._model_failed(reply, lambda: self.heuristic(events))
        result = parse_reply(reply.text)
        extra: dict[str, Any] = {"recap_titles": self.conversation.recap_titles}
        if result.usable() or NOTHING_MARK in "".join(reply.text.split()):
            self.recalled.answered()
            extra.update(self._keep_raw(reply.text, result))
        else:
            # Nothing usable: ask once, firmly, before counting it against these events.
            retry = await self.conversation.send(fill("observation_retry", summaries=self._summaries_wanted(turns)))
            if retry.error:
                failed = await self._model_failed(retry, lambda: self.heuristic(events))
                failed.raw, failed.raw_error = reply.text, f"no usable block; the nudge failed ({retry.error})"
                return failed
            second = parse_reply(retry.text)
            both = reply.text + "\n---\n" + retry.text
            if not second.usable() and NOTHING_MARK not in "".join(retry.text.split()):
                problems = "; ".join(second.problems)[:300] or "no usable block"
                await self.conversation.drop()  # the next try resumes the conversation before this batch
                return Outcome(error=Failure.UNPARSEABLE, detail=f"no usable reply after a nudge ({problems})", raw=both,
                               raw_error=problems)
            self.recalled.answered()
            result = second
            extra.update(raw=both, raw_error="first reply unusable; answered after a nudge")
        self.conversation.last_request_number = turns[-1].prompt_number
        outcome = Outcome(**extra)
        await self._place(turns, result, outcome)
        return outcome

    def _message(self, turns: list[Turn]) -> tuple[str, str]:
        """The batch's message, and the header of its first turn's request (the conversation puts
        it in front when it has not seen that request; a later turn's it cannot have seen)."""
        tools = [e for t in turns for e in t.events]
        repeated = queue.repeated_reads(self.conn, self.session_id, [e.id for e in tools if e.tool_name == "Read"],
                                        subagents_seen=not self.config.fold_subagents)
        parts: list[str] = []
        unseen: list[str] = []
        for k, turn in enumerate(turns):
            request = self._prompt_text(turn.prompt_number)
            if k and request:
                parts.append(self._header(turn.prompt_number, request).rstrip())
            if k or turn.prompt_number != self.conversation.last_request_number:
                unseen.append(request)
            if turn.events:
                parts.append(render_batch(turn.events, repeated))
            if turn.end is not None:
                parts.append(fill("turn_end", prompt_number=turn.prompt_number,
                                  last_message=cut(_last_message(turn.end), 1500) or "(none)").rstrip())
        if any(t.end is not None for t in turns):
            parts.append(fill("summaries", requests=_numbers(turns)).rstrip())
        # What memory holds about the batch, and about each request it is the first to show.
        memory = self._memory(tools, " ".join(r for r in unseen if r))
        message = fill("observation", memory=memory, events="\n\n".join(parts))
        return message, self._header(turns[0].prompt_number, self._prompt_text(turns[0].prompt_number))

    @staticmethod
    def _header(prompt_number: int, request: str) -> str:
        return f"User's request #{prompt_number}: {request}\n\n" if request else ""

    def _summaries_wanted(self, turns: list[Turn]) -> str:
        """The nudge's line asking for the summaries too, when a turn ended."""
        if not any(t.end is not None for t in turns):
            return ""
        return f", then one <summary request=\"N\"> block for each turn that ended ({_numbers(turns)})"

    async def _place(self, turns: list[Turn], result: ParseResult, outcome: Outcome) -> None:
        """Put the reply's observations and summaries in their turns; a summary still missing is
        asked for once, then derived from the turn's observations."""
        ended = [t.prompt_number for t in turns if t.end is not None]
        free = list(ended)
        owners: list[int | None] = []  # each summary's turn, in the reply's order
        for number, _ in result.summaries:
            owner = number if number in free else (free[0] if free else None)
            if owner is not None:
                free.remove(owner)
            owners.append(owner)
        for obs, after in zip(result.observations, result.after, strict=True):
            owner = next((o for o in owners[after:] if o is not None), turns[-1].prompt_number)
            outcome.observations.append(obs)
            outcome.prompts.append(owner)
        for owner, (_, summary) in zip(owners, result.summaries, strict=True):
            if owner is not None:
                outcome.summaries[owner] = (summary, "model")
        if free:
            await self._missing_summaries(free, outcome)
        for turn in turns:
            if turn.end is not None:
                summary = outcome.summaries[turn.prompt_number][0]
                summary.files_read, summary.files_edited = files_touched(self._turn_events(turn.prompt_number))

    async def _missing_summaries(self, missing: list[int], outcome: Outcome) -> None:
        # Models sometimes answer a summary request with observations only: ask once, firmly.
        # (If that fails, the summaries are derived: the conversation resumes after the first reply.)
        retry = await self.conversation.send(fill("summary_retry", requests=", ".join(f"#{n}" for n in missing)))
        if not retry.error:
            second = parse_reply(retry.text)
            outcome.observations += second.observations
            outcome.prompts += [missing[0]] * len(second.observations)
            left = list(missing)
            for number, summary in second.summaries:
                owner = number if number in left else (left[0] if left else None)
                if owner is not None:
                    left.remove(owner)
                    outcome.summaries[owner] = (summary, "model")
            kept = self._keep_raw(retry.text, second) if left else {}
            if kept and outcome.raw is None:
                outcome.raw, outcome.raw_error = kept["raw"], kept["raw_error"]
        for number in missing:
            if number not in outcome.summaries:
                fresh = [o for o, p in zip(outcome.observations, outcome.prompts, strict=True) if p == number]
                outcome.summaries[number] = (self._derive_summary(number, self._prompt_text(number), fresh), "derived")

    def _memory(self, events: list[Event], request: str) -> str:
        """What memory holds about the batch; nothing (logged) when it cannot be read."""
        try:
            return self.recalled.block(events, request)
        except sqlite3.Error as exc:
            self.log(f"could not read what memory holds about the batch ({exc}); sent without it")
            return ""

    def _turn_context(self, finalize: Event) -> tuple[str, list[Event], str]:
        """What a turn's summary is made from: the request, the turn's events, Claude's last message."""
        return self._prompt_text(finalize.prompt_number), self._turn_events(finalize.prompt_number), _last_message(finalize)

    def _derive_summary(self, prompt_number: int, request: str, fresh: list[Observation]) -> Summary:
        """A summary built from the turn's observations when the model would not write one."""
        stored = list_observations(self.conn, session_id=self.session_id)
        titles = [o.title for o in stored if o.prompt_number == prompt_number] + [o.title for o in fresh]
        learned = [o.title for o in stored if o.prompt_number == prompt_number and o.type == "discovery"]
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
        session = records.get_session(self.conn, self.session_id)
        known = (session.observer_error if session else None) or ""
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
        rows = queue_rows.list_rows(self.conn, session_id=self.session_id)
        return [Event.from_row(r) for r in rows if r.kind == "tool" and r.prompt_number == prompt_number]



def _last_message(finalize: Event) -> str:
    """Claude's last message in the turn (the Stop hook kept it)."""
    if isinstance(finalize.tool_response, dict):
        return str(finalize.tool_response.get("last_assistant_message") or "")
    return ""


def _numbers(turns: list[Turn]) -> str:
    return ", ".join(f"#{t.prompt_number}" for t in turns if t.end is not None)


def _same_words(a: str, b: str) -> bool:
    """Two statements of one rule: most words of the shorter are in the longer."""
    x, y = set(a.lower().split()), set(b.lower().split())
    return bool(x and y) and len(x & y) >= 0.7 * min(len(x), len(y))
