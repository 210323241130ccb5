"""The write guard in the worker (issue 47, claude_mem/guard/): what each memory was made from,
and what of it is withheld before it is stored.

Provenance: a model's observations come from a batch, so each carries the batch's (its events'
tools, kinds.tool_provenance); the heuristic synthesizer's name their own events. The guard's
context for a batch is its turn: the user's prompt and the session's edits (own text, which
stays), and the outside text of every tool event of the turn so far, each event scanned once
while this worker lives (a model can copy in a later batch what an earlier one showed it).

An observation with text withheld is split: what is clean stays a memory as it was, and a second
one, withheld, holds the note and (in `withheld_text`) the text as written, for a person. A
summary keeps its place: the text is replaced by a mark, the note and the text as written kept,
and the summary is withheld. Claude's reply, which the Stop hook stored raw beside the prompt
(searched and asked, never pushed), is screened as the turn's summary is, its withheld text
replaced by the note.
"""

from __future__ import annotations

import json
import os
import sqlite3
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from claude_mem.guard.screen import Analysis, Context, Source, analyse, cut, is_agent_file, says_something, screen_fields
from claude_mem.kinds import Provenance, provenance_list, tool_provenance
from claude_mem.store import queue, queue_rows, records
from claude_mem.store.memories import Observation, Summary
from claude_mem.store.reads import SUMMARY_FIELDS
from claude_mem.text.command_keys import command_key
from claude_mem.text.shorten import clip
from claude_mem.worker.events import Event, response_text

TITLE_CHARS = 150
EDITS = {"Edit": ("new_string",), "Write": ("content",), "NotebookEdit": ("new_source",)}


def made_from(events: list[Event]) -> list[str]:
    """The provenance of what was made from these events."""
    return provenance_list(tool_provenance(e.tool_name) for e in events if e.kind == "tool")


def own_texts(event: Event) -> list[str]:
    """What the session itself wrote in this event (its edits), or the user answered."""
    given = event.tool_input if isinstance(event.tool_input, dict) else {}
    if event.tool_name == "MultiEdit":
        edits = given.get("edits")
        return [str(e.get("new_string") or "") for e in edits if isinstance(e, dict)] if isinstance(edits, list) else []
    if event.tool_name == "AskUserQuestion":
        answers = event.tool_response.get("answers") if isinstance(event.tool_response, dict) else None
        return [str(a) for a in answers.values()] if isinstance(answers, dict) else []
    return [str(given.get(key) or "") for key in EDITS.get(event.tool_name or "", ())]


def source_of(event: Event) -> Source | None:
    """The outside text an event brought in (None for the session's own edits)."""
    provenance = tool_provenance(event.tool_name)
    if provenance in (Provenance.EDIT, Provenance.PROMPT):
        return None
    given = event.tool_input if isinstance(event.tool_input, dict) else {}
    path = str(given.get("file_path") or given.get("notebook_path") or given.get("path") or "")
    if provenance == Provenance.READ:
        label = os.path.basename(path.rstrip("/")) or str(given.get("pattern") or "")
    elif provenance == Provenance.WEB:
        label = urlsplit(str(given.get("url") or "")).hostname or "a web search"
    elif provenance == Provenance.COMMAND:
        command = str(given.get("command") or "")
        label = command_key(command) or (command.split() or [event.tool_name or "a command"])[0]
    elif provenance == Provenance.SUBAGENT:
        label = str(given.get("subagent_type") or "")
    else:
        label = event.tool_name or ""
    return Source(provenance, label, response_text(event), mild=is_agent_file(path))


class Guarding:
    """The guard for one session's worker: contexts by turn, each event scanned once."""

    def __init__(self, conn: sqlite3.Connection, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id
        self._analysed: dict[int, Analysis | None] = {}  # the current turn's events, each scanned once
        self._turn = -1

    def context(self, events: list[Event], prompt_number: int, provenance: list[str] | None = None) -> Context:
        """The turn's own text and outside text, up to and with these events; `provenance` None:
        the turn's, and Claude's reply."""
        if prompt_number != self._turn:
            self._analysed, self._turn = {}, prompt_number
        turn = {e.id: e for e in (Event.from_row(r) for r in queue_rows.turn_tool_rows(self.conn, self.session_id, prompt_number))}
        turn.update((e.id, e) for e in events if e.kind == "tool")
        ctx = Context(made_from=provenance if provenance is not None else [*made_from(list(turn.values())), Provenance.REPLY])
        ctx.add_own([records.prompt_text(self.conn, self.session_id, prompt_number) or ""])
        for event_id in sorted(turn):
            event = turn[event_id]
            ctx.add_own(own_texts(event))
            analysis = self._analysis(event)
            if analysis is not None:
                ctx.add(analysis)
        return ctx

    def _analysis(self, event: Event) -> Analysis | None:
        """The event's outside text scanned (once), None for the session's own edits."""
        if event.id not in self._analysed:
            source = source_of(event)
            self._analysed[event.id] = analyse(source) if source is not None else None
        return self._analysed[event.id]

    def settle(self, events: list[Event]) -> None:
        """What the guard found in each of the batch's events, kept on its queue row (the pushes
        that read a past failure's output trust a row it found nothing in), and Claude's reply to
        each finished turn screened where it is stored. Call inside the store's transaction."""
        notes = {}
        for event in events:
            if event.prompt_number != self._turn:
                self._analysed, self._turn = {}, event.prompt_number
            if event.kind == "tool":
                analysis = self._analysis(event)
                notes[event.id] = " ".join(p.note for p in analysis.planted) if analysis is not None else ""
        queue.set_guard_notes(self.conn, notes)
        for event in events:
            if event.kind == "finalize":
                self.reply(event)

    def batch(self, events: list[Event], observations: list[Observation], prompts: list[int],
              summaries: dict[int, tuple[Summary, str]]) -> list[tuple[Observation, int]]:
        """A batch's observations (each with its turn's prompt number) and its turns' summaries
        guarded turn by turn: a batch may span turns (worker/batching.py)."""
        out: list[tuple[Observation, int]] = []
        for number in dict.fromkeys(prompts):
            turn = [e for e in events if e.prompt_number == number] or events
            mine = [o for o, p in zip(observations, prompts, strict=True) if p == number]
            out += [(o, number) for o in self.observations(turn, mine)]
        for number, (summary, _) in summaries.items():
            end = next((e for e in events if e.kind == "finalize" and e.prompt_number == number), None)
            if end is not None:
                self.summary(end, summary)
        return out

    def observations(self, events: list[Event], observations: list[Observation]) -> list[Observation]:
        """What to store of a batch's observations: each with its provenance (the batch's, unless
        the heuristic synthesizer named its own), split when the guard withholds some of it."""
        if not observations:
            return observations
        # A summary request answered with observations too: they are the turn's, and the reply's.
        provenance = made_from(events) or None
        ctx = self.context(events, events[0].prompt_number, provenance)
        provenance = list(ctx.made_from)
        out: list[Observation] = []
        for obs in observations:
            obs.provenance = obs.provenance or provenance
            out += [o for o in split(obs, ctx) if o is not None]
        return out

    def summary(self, finalize: Event, summary: Summary) -> None:
        """The turn's summary screened in place (a withheld summary keeps its place in the turn)."""
        ctx = self.context([], finalize.prompt_number)
        reply = _last_message(finalize)
        if reply:
            ctx.add(analyse(Source(Provenance.REPLY, "", reply)))
        note, original = screen_fields(summary, SUMMARY_FIELDS, ctx)
        if note:
            summary.guard_note, summary.withheld_text = note, original

    def reply(self, finalize: Event) -> bool:
        """Claude's reply to the turn screened where it is stored; True when some was withheld.
        Call inside a transaction."""
        text = records.reply_text(self.conn, self.session_id, finalize.prompt_number)
        if not text:
            return False
        ctx = self.context([], finalize.prompt_number)
        found = cut(text, ctx)
        if not found.spans:
            return False
        records.replace_reply(self.conn, self.session_id, finalize.prompt_number,
                              found.kept("[withheld]") + "\n(" + " ".join(found.notes) + ")")
        return True


def split(obs: Observation, ctx: Context) -> tuple[Observation | None, Observation | None]:
    """(what of `obs` stays a memory, the withheld one holding the note), either may be None."""
    title, subtitle, narrative = cut(obs.title, ctx), cut(obs.subtitle, ctx), cut(obs.narrative, ctx)
    facts = [cut(f, ctx) for f in obs.facts]
    cuts = [title, subtitle, narrative, *facts]
    if not any(c.spans for c in cuts):
        return obs, None
    notes = list(dict.fromkeys(n for c in cuts for n in c.notes))
    kept_facts = [c.kept() for c in facts if says_something(c.kept())]
    kept_narrative = narrative.kept() if says_something(narrative.kept()) else ""
    heading = obs.title if not title.spans else (kept_facts or [kept_narrative.split("\n", 1)[0]])[0]
    clean = None
    if says_something(heading) and (kept_facts or kept_narrative or not title.spans):
        clean = replace(obs, title=clip(heading, TITLE_CHARS), subtitle="" if subtitle.spans else obs.subtitle,
                        narrative=kept_narrative, facts=kept_facts)
    note = " ".join(notes)
    original: dict[str, Any] = {"title": obs.title, "subtitle": obs.subtitle, "narrative": obs.narrative, "facts": list(obs.facts),
                                "withheld": [text for c in cuts for text in c.removed()]}
    withheld = replace(obs, type="discovery", raw_type=None, title=clip("Withheld: " + notes[0].removesuffix("; not followed."),
                                                                        TITLE_CHARS),
                       subtitle="", narrative=note, facts=[], concepts=["withheld"], supersedes=[], guard_note=note,
                       withheld_text=json.dumps(original, ensure_ascii=False))
    return clean, withheld


def _last_message(finalize: Event) -> str:
    response = finalize.tool_response
    return str(response.get("last_assistant_message") or "") if isinstance(response, dict) else ""
