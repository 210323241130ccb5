"""Observations and summaries: what the worker distils from the queue, and how it is stored.

Observations are deduplicated per session by a hash of their content, so a replayed batch (a
worker killed after the model answered, or the CLI re-sending a failed message) inserts
nothing new. Reading them back lives in reads.py (the SessionStart hook imports only that).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field

from claude_mem.kinds import OBSERVATION_TYPES, Source
from claude_mem.store.db import now_iso, now_ms
from claude_mem.store.reads import SUMMARY_FIELDS

# What models write for the six kinds (the observer's model, and the npm claude-mem's).
TYPE_SYNONYMS = {
    "bugfix": ("fix", "bug", "hotfix", "bugfixes", "fixes", "bugs"),
    "feature": ("feat", "enhancement", "implementation", "newfeature", "addition", "features"),
    "discovery": ("learning", "insight", "finding", "investigation", "research", "analysis", "observation"),
    "change": ("config", "configuration", "update", "chore", "docs", "documentation", "maintenance", "setup", "dependency"),
    "decision": ("design", "architecture", "plan", "choice", "adr"),
    "refactor": ("cleanup", "restructure", "refactoring", "rename", "reorganization", "simplification"),
}
_TYPE_OF = {alias: kind for kind, aliases in TYPE_SYNONYMS.items() for alias in aliases} | {t: t for t in OBSERVATION_TYPES}


def known_type(raw: str) -> str | None:
    """The kind a type name stands for ("Bug-Fix", "features", "insight"), or None."""
    key = "".join(c for c in raw.lower() if "a" <= c <= "z")
    return _TYPE_OF.get(key) or (_TYPE_OF.get(key[:-1]) if key.endswith("s") else None)


@dataclass
class Observation:
    type: str
    title: str
    subtitle: str = ""
    narrative: str = ""
    facts: list[str] = field(default_factory=list)
    concepts: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    raw_type: str | None = None  # set when the model used a type we do not know
    supersedes: list[int] = field(default_factory=list)  # older observations the model said this one replaces
    provenance: list[str] = field(default_factory=list)  # what it was made from (kinds.Provenance values)
    guard_note: str = ""  # the write guard's note: what it withheld (then the memory is withheld), else ""
    withheld_text: str = ""  # what the guard withheld, as written (JSON of the fields), for a person
    scope: str = ""  # a decision's component, path or area ('' = the whole project; text/scope.py)
    conflicts: list[int] = field(default_factory=list)  # older decisions the model said this one rivals, neither replacing the other

    def content_hash(self) -> str:
        def norm(text: str) -> str:
            return " ".join(text.lower().split())

        parts = [self.type, norm(self.title), norm(self.subtitle), norm(self.narrative),
                 *sorted(norm(f) for f in self.facts)]
        import hashlib  # not at module level: digest readers need none of this module's imports

        return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


@dataclass
class Summary:
    request: str = ""
    investigated: str = ""
    learned: str = ""
    completed: str = ""
    next_steps: str = ""
    notes: str = ""
    files_read: list[str] = field(default_factory=list)
    files_edited: list[str] = field(default_factory=list)
    guard_note: str = ""  # as an observation's
    withheld_text: str = ""

    def is_empty(self) -> bool:
        return not any(getattr(self, f).strip() for f in SUMMARY_FIELDS)


def insert_observation(conn: sqlite3.Connection, session_id: str, project: str, obs: Observation, *,
                       prompt_number: int, source: str = "model", model: str | None = None,
                       created_at_epoch: int | None = None, provenance: list[str] | None = None) -> int | None:
    """Insert unless the session already holds the same content; returns the new id or None.
    `provenance`: what it was made from (kinds.Provenance values); unknown when not given."""
    now = created_at_epoch if created_at_epoch is not None else now_ms()
    # Named only when known (so a database migrated part of the way, as tests of older schemas
    # build, still takes the worker's observations): what it was made from, a decision's scope
    # (the column's default: the whole project), the write guard's note and what it withheld.
    provenance = provenance or obs.provenance
    extra = {name: value for name, value in (("provenance", _json(provenance) if provenance else ""), ("scope", obs.scope)) if value}
    if obs.guard_note:
        extra.update(guard_note=obs.guard_note, withheld_text=obs.withheld_text)
    cur = conn.execute(
        "INSERT INTO observations (session_id, project, type, raw_type, title, subtitle, narrative,"
        " facts, concepts, files_read, files_modified, prompt_number, source, model, content_hash,"
        f" created_at, created_at_epoch{''.join(', ' + name for name in extra)})"
        f" VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?{', ?' * len(extra)})"
        " ON CONFLICT (session_id, content_hash) DO NOTHING",
        (session_id, project, obs.type, obs.raw_type, obs.title, obs.subtitle, obs.narrative,
         _json(obs.facts), _json(obs.concepts), _json(obs.files_read), _json(obs.files_modified),
         prompt_number, source, model, obs.content_hash(), now_iso(now), now, *extra.values()),
    )
    return cur.lastrowid if cur.rowcount else None


def upsert_summary(conn: sqlite3.Connection, session_id: str, project: str, summary: Summary, *,
                   prompt_number: int, source: str = "model", model: str | None = None) -> int:
    """One summary per prompt: a later one for the same prompt replaces the earlier."""
    now = now_ms()
    row = conn.execute(
        "INSERT INTO session_summaries (session_id, project, request, investigated, learned, completed,"
        " next_steps, files_read, files_edited, notes, prompt_number, source, model, created_at,"
        " created_at_epoch, guard_note, withheld_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (session_id, prompt_number) DO UPDATE SET request = excluded.request,"
        " investigated = excluded.investigated, learned = excluded.learned,"
        " completed = excluded.completed, next_steps = excluded.next_steps,"
        " files_read = excluded.files_read, files_edited = excluded.files_edited,"
        " notes = excluded.notes, source = excluded.source, model = excluded.model,"
        " guard_note = excluded.guard_note, withheld_text = excluded.withheld_text, released_at_epoch = NULL RETURNING id",
        (session_id, project, summary.request, summary.investigated, summary.learned,
         summary.completed, summary.next_steps, _json(summary.files_read),
         _json(summary.files_edited), summary.notes, prompt_number, source, model, now_iso(now), now,
         summary.guard_note, summary.withheld_text),
    ).fetchone()
    return int(row[0])


def _json(items: list[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False)


def delete_heuristic(conn: sqlite3.Connection, session_id: str) -> None:
    """The session's observations and summaries the heuristic synthesizer wrote (reprocess)."""
    conn.execute("DELETE FROM observations WHERE session_id = ? AND source = 'heuristic'", (session_id,))
    conn.execute("DELETE FROM session_summaries WHERE session_id = ? AND source = 'heuristic'", (session_id,))


OBSERVATION_TEXT = ("title", "subtitle", "narrative", "facts")


def guarded(obs: Observation, source: str, own: Iterable[str] = ()) -> Observation:
    """`obs` as the write guard lets a memory stated or imported whole be stored (issue 47): text
    that reads as instructions to an AI assistant replaced by a mark, the guard's note and the
    text as written kept on it (so it is withheld until a person releases it). A person's own
    words pass as they are; `own` is other text the user wrote (the session's prompts), which
    passes too. Changes `obs` in place and returns it, so a store function guards in one line."""
    if source == Source.PERSON:
        return obs
    from claude_mem.guard.screen import Context, screen_fields

    context = Context(made_from=obs.provenance or [source])
    context.add_own(own)
    note, original = screen_fields(obs, OBSERVATION_TEXT, context)
    if note:
        obs.guard_note, obs.withheld_text = note, original
    return obs
