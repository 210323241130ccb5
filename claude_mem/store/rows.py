"""Rows as typed records: what store/ hands the rest for a queued event, a session, a prompt, a
compaction's checkpoint, and a stored observation and summary (with an observation's marks).

Each record has one field per column of its table, named as the column (tests/test_migrations.py
holds them to `PRAGMA table_info`: a column added without its field fails there, not in a worker
reading a key that is not there). Frozen: a record is what the row was when read; a change goes
through the store's functions, in SQL.

Not on the hook path: `dataclasses` costs a hook ~7 ms to import (it imports inspect), and hooks
only write. store/queue.py, store/records.py, store/reads.py and store/marks.py import this module
inside the functions that read (the SessionStart digest reads memories as dicts: reads.observation_rows).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, fields
from typing import Any, Self

from claude_mem.store.queue import QueueStatus
from claude_mem.store.reads import SUMMARY_FIELDS, decode
from claude_mem.store.withheld import is_withheld


class _Row:
    """A record read from its row as it is: one field a column, named as the column."""

    __slots__ = ()

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Self:
        return cls(**dict(row))


@dataclass(frozen=True, slots=True)
class QueuedEvent:
    """One row of `observation_queue`: a hook's tool event or a turn's end (kind 'finalize'),
    `tool_input` and `tool_response` decoded from their JSON (kept as text when it is not JSON).
    Fields in the order `claude-mem queue --json` lists them."""

    id: int
    session_id: str
    kind: str  # 'tool' or 'finalize' (the table's CHECK)
    tool_name: str | None
    tool_input: Any
    tool_response: Any  # a finalize row's: {"last_assistant_message": ...}
    tool_use_id: str | None
    is_error: bool
    duration_ms: int | None
    agent_id: str | None  # set when a subagent made the call
    cwd: str | None
    prompt_number: int
    status: QueueStatus
    attempts: int
    last_error: str | None
    next_attempt_epoch: int
    claimed_by: str | None  # the worker holding a processing row
    processed_by: str | None  # 'model', 'heuristic', 'folded', ...: set once its memories are committed
    created_at: str
    created_at_epoch: int
    updated_at_epoch: int
    guard_note: str | None  # what the write guard found in the event's output (migration 0019)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> QueuedEvent:
        item = dict(row)
        for key in ("tool_input", "tool_response"):
            value = item[key]
            if isinstance(value, str):
                try:
                    item[key] = json.loads(value)
                except ValueError:
                    pass
        item["is_error"] = bool(item["is_error"])
        item["status"] = QueueStatus(item["status"])
        return cls(**item)


@dataclass(frozen=True, slots=True)
class Session(_Row):
    """One row of `sdk_sessions`: a Claude Code (or Codex) session as the hooks saw it, and where
    its observer conversation stands."""

    id: int
    claude_session_id: str  # Claude Code's id: what every other table calls session_id
    sdk_session_id: str | None  # the observer's conversation, resumed by the next worker
    project: str
    cwd: str | None
    transcript_path: str | None
    user_prompt: str | None  # the session's first prompt
    status: str  # 'active', 'completed', 'failed' or 'ended' (the table's CHECK)
    prompt_counter: int
    started_at: str
    started_at_epoch: int
    updated_at_epoch: int
    completed_at_epoch: int | None
    observer_error: str | None  # why the model could not be used, when it could not
    observer_error_at_epoch: int | None
    synthesizer: str | None
    outage_since_epoch: int | None
    outage_failures: int
    sdk_resume_at: str | None  # the observer message its conversation resumes after
    host: str  # 'claude-code', 'codex', or 'stated' (records.STATED_HOST)


@dataclass(frozen=True, slots=True)
class Prompt(_Row):
    """One row of `user_prompts`: a prompt the person typed, and Claude's final reply to it."""

    id: int
    session_id: str
    prompt_number: int
    prompt_text: str
    prompt_id: str | None  # Claude Code's id for it, when it gave one
    created_at: str
    created_at_epoch: int
    reply_text: str  # '' until the turn's Stop


@dataclass(frozen=True, slots=True)
class Checkpoint(_Row):
    """One row of `checkpoints` (migration 0012): a compaction's checkpoint, asked for by PreCompact
    and written by the session's worker once the events queued before it are taken."""

    id: int
    session_id: str
    trigger: str  # 'auto' or 'manual', as Claude Code says
    upto_queue_id: int  # the session's last queued event when it was asked for
    prompt_number: int
    status: str  # 'pending' or 'written' (the table's CHECK)
    request: str
    completed: str
    decided: str
    failing: str
    next_steps: str
    source: str  # '' until written, then 'model' or 'heuristic'
    created_at_epoch: int
    written_at_epoch: int | None


class _Decoded(_Row):
    """A memory row whose JSON list columns are decoded (store/reads.py `decode`: text that is not
    JSON reads as [])."""

    __slots__ = ()

    @classmethod
    def from_row(cls, row: sqlite3.Row | dict[str, Any]) -> Self:
        return cls(**decode(row))


class _Guarded:
    """A memory the write guard may have withheld (store/withheld.py)."""

    __slots__ = ()
    guard_note: str
    released_at_epoch: int | None

    @property
    def withheld(self) -> bool:
        """The guard left a note on it and no person released it: memory does not give it unasked."""
        return is_withheld(self.guard_note, self.released_at_epoch)


@dataclass(frozen=True, slots=True)
class StoredObservation(_Decoded, _Guarded):
    """One row of `observations` as the worker, a person or an import stored it, the JSON list
    columns decoded (text that is not JSON as []). Not store/memories.py's `Observation`, which is
    what the worker writes: this is what reads give back, id, hash, guard state and all."""

    id: int
    session_id: str
    project: str
    type: str  # kinds.OBSERVATION_TYPES (the table's CHECK)
    raw_type: str | None  # what the model wrote when it was not a known type
    title: str
    subtitle: str
    narrative: str
    facts: list[str]
    concepts: list[str]
    files_read: list[str]
    files_modified: list[str]
    prompt_number: int
    source: str  # a kinds.Source value
    model: str | None
    content_hash: str
    created_at: str
    created_at_epoch: int
    provenance: list[str]  # kinds.Provenance values: what it was made from
    guard_note: str  # '' or the write guard's note: withheld while not released (store/withheld.py)
    released_at_epoch: int | None
    scope: str  # '' = the whole project, else the component or path a decision was stated for
    withheld_text: str  # '' or JSON of the fields as written before the guard cut them (migration 0019)


@dataclass(frozen=True, slots=True)
class StoredSummary(_Decoded, _Guarded):
    """One row of `session_summaries`: a turn's summary as stored, its file lists decoded. (What
    the worker writes is store/memories.py's `Summary`.)"""

    id: int
    session_id: str
    project: str
    request: str
    investigated: str
    learned: str
    completed: str
    next_steps: str
    files_read: list[str]
    files_edited: list[str]
    notes: str
    prompt_number: int
    source: str  # 'model', 'derived', 'heuristic' or 'import' (the table's CHECK)
    model: str | None
    created_at: str
    created_at_epoch: int
    guard_note: str
    released_at_epoch: int | None
    withheld_text: str

    def written(self) -> list[tuple[str, str]]:
        """(field, text) of the fields a summary is written in (reads.SUMMARY_FIELDS), in their order."""
        return [(name, getattr(self, name)) for name in SUMMARY_FIELDS]


@dataclass(frozen=True, slots=True)
class MarkedObservation:
    """An observation with what the marks say of it (store/memory_rows.py `with_marks`): the refs of what
    superseded it ([] while current), of its current rivals, and the line views show ("superseded
    by obs:12, 2026-03-03", or "")."""

    observation: StoredObservation
    superseded_by: list[str]
    conflicts_with: list[str]
    mark: str

    def as_dict(self) -> dict[str, Any]:
        """For JSON (`claude-mem observations --json`, the viewer): the row's columns, then the marks."""
        return {**as_dict(self.observation), "superseded_by": self.superseded_by, "conflicts_with": self.conflicts_with,
                "mark": self.mark}


Record = QueuedEvent | Session | Prompt | Checkpoint | StoredObservation | StoredSummary


def columns(record: type[Record], alias: str = "") -> str:
    """The SELECT list that reads a record's row: its columns, in its fields' order (each `alias.`
    prefixed when the table goes by an alias)."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + f.name for f in fields(record))


def as_dict(record: Record) -> dict[str, Any]:
    """The record as a dict, its fields in order (for JSON: `claude-mem queue --json`, the viewer)."""
    return {f.name: getattr(record, f.name) for f in fields(record)}
