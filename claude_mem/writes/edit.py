"""Editing an observation (any, the observer's too) and undoing an edit: `claude-mem edit`, the
viewer. Every edit keeps the version before it (store/revisions.py); an undo puts the newest
kept version back and drops it, so undoing again goes one further back. The new text passes the
same checks as a stated memory's (checks.py); the row and its revision change in one transaction;
the keyword index follows through the FTS triggers, the semantic index through the service
(index.py).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Any

from claude_mem.kinds import OBSERVATION_TYPES, Source
from claude_mem.settings import Config
from claude_mem.store import revisions
from claude_mem.store import writes as stored
from claude_mem.store.db import transaction
from claude_mem.writes.checks import Missing, Refused, checked, headline
from claude_mem.writes.index import follow


@dataclass
class Edited:
    id: int
    changed: list[str] = field(default_factory=list)  # the fields changed ([]: it already said that)
    undone: bool = False  # an undo put an earlier version back


def _current(conn: sqlite3.Connection, observation_id: int) -> dict[str, Any]:
    found = stored.fields(conn, observation_id)
    if found is None:
        raise Missing(f"no observation obs:{observation_id}")
    return {"type": found.type, "title": found.title, "narrative": found.narrative, "facts": found.facts}


def _write(conn: sqlite3.Connection, observation_id: int, version: dict[str, Any], type_changed: bool) -> None:
    stored.rewrite(conn, observation_id, type_=version["type"], title=version["title"], narrative=version["narrative"],
                   facts=version["facts"], type_changed=type_changed)


def edit(config: Config, conn: sqlite3.Connection, observation_id: int, *, title: str | None = None, text: str | None = None,
         facts: list[str] | None = None, type_: str | None = None, author: Source = Source.PERSON) -> Edited:
    """Change what is given of an observation's title, text (its narrative), facts (all of them:
    blank ones dropped, so [""] clears them) and type. A title made from the text (a stated
    memory's) follows a new text unless a title is given. Raises Refused or Missing, changing nothing."""
    limit = config.remember_chars
    wanted: dict[str, Any] = {}
    if type_ is not None:
        if type_ not in OBSERVATION_TYPES:
            raise Refused(f"type must be one of {', '.join(OBSERVATION_TYPES)}, not {str(type_)[:40]!r}")
        wanted["type"] = type_
    if title is not None:
        wanted["title"] = checked(title, limit, "title")
    if text is not None:
        wanted["narrative"] = checked(text, limit)
    if facts is not None:
        wanted["facts"] = [checked(fact, limit, "fact") for fact in facts if isinstance(fact, str) and fact.strip()]
    if not wanted:
        raise Refused("say what to change: a title, a text, facts or a type")
    with transaction(conn):
        before = _current(conn, observation_id)
        if "narrative" in wanted and "title" not in wanted and before["title"] == headline(before["narrative"]):
            wanted["title"] = headline(wanted["narrative"])
        after = {**before, **wanted}
        changed = [name for name in revisions.REVISED if after[name] != before[name]]
        if changed:
            revisions.record(conn, observation_id, before, changed, author.value)
            _write(conn, observation_id, after, "type" in changed)
    if changed:
        follow(config, [observation_id])
    return Edited(observation_id, changed)


def undo(config: Config, conn: sqlite3.Connection, observation_id: int) -> Edited:
    """Put back the version the latest edit replaced. Raises Missing (no such observation) or
    Refused (never edited, or every edit undone already)."""
    with transaction(conn):
        before = _current(conn, observation_id)
        kept = revisions.newest(conn, observation_id)
        if kept is None:
            raise Refused(f"obs:{observation_id} has no earlier version to restore (it was not edited)")
        _write(conn, observation_id, {name: kept[name] for name in revisions.REVISED}, kept["type"] != before["type"])
        revisions.drop(conn, kept["id"])
    follow(config, [observation_id])
    return Edited(observation_id, kept["changed"], undone=True)
