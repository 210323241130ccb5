"""The versions of an observation before each edit (migration 0018): kept by `writes/edit.py`,
listed by `show` and the viewer, put back by `edit --undo`, carried by export and import.

A revision holds the fields an edit can change as they were before it, who made the edit, when,
and which fields it changed. In an export it names its observation as a mark does, by session
and content hash (an edit keeps the hash: the observation is still the one first stored, and a
replayed batch or a second import must not store its first version again).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from claude_mem.kinds import OBSERVATION_TYPES
from claude_mem.store.db import now_ms
from claude_mem.store.reads import json_list

REVISED = ("type", "title", "narrative", "facts")  # what an edit can change, in this order
AUTHORS = ("person", "agent")
EXPORTED = ("author", "changed", *REVISED, "created_at_epoch")


def record(conn: sqlite3.Connection, observation_id: int, before: dict[str, Any], changed: list[str], author: str, *,
           now: int | None = None) -> int:
    """Keep `before` (the observation's row, or its revised fields) as the version an edit
    replaces, inside the caller's transaction; returns the revision's id."""
    if author not in AUTHORS:
        raise ValueError(f"not an author of edits: {author!r}")
    cur = conn.execute(
        "INSERT INTO observation_revisions (observation_id, author, changed, type, title, narrative, facts, created_at_epoch)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (observation_id, author, json.dumps(changed), before["type"], before["title"], before["narrative"] or "",
         json.dumps(json_list(before["facts"]), ensure_ascii=False), now if now is not None else now_ms()))
    return int(cur.lastrowid or 0)


def _decoded(row: sqlite3.Row) -> dict[str, Any]:
    item = dict(row)
    item["changed"] = json_list(item["changed"])
    item["facts"] = json_list(item["facts"])
    return item


def newest(conn: sqlite3.Connection, observation_id: int) -> dict[str, Any] | None:
    """The version the latest edit replaced, or None when the observation was never edited."""
    row = conn.execute("SELECT * FROM observation_revisions WHERE observation_id = ? ORDER BY id DESC LIMIT 1",
                       (observation_id,)).fetchone()
    return _decoded(row) if row else None


def drop(conn: sqlite3.Connection, revision_id: int) -> None:
    conn.execute("DELETE FROM observation_revisions WHERE id = ?", (revision_id,))


def of(conn: sqlite3.Connection, observation_id: int) -> list[dict[str, Any]]:
    """Every kept version of an observation, newest edit first."""
    return [_decoded(r) for r in conn.execute(
        "SELECT * FROM observation_revisions WHERE observation_id = ? ORDER BY id DESC", (observation_id,))]


# --- revisions in an export (store/transfer.py) -------------------------------------------------

def export_revisions(conn: sqlite3.Connection, observation_ids: set[int]) -> list[dict[str, Any]]:
    """The revisions of the exported observations, as export objects, oldest first."""
    rows = conn.execute(
        "SELECT r.*, o.session_id, o.content_hash FROM observation_revisions r"
        " JOIN observations o ON o.id = r.observation_id ORDER BY r.id")
    return [{"kind": "revision", "observation": {"session_id": r["session_id"], "content_hash": r["content_hash"]},
             **{f: _decoded(r)[f] for f in EXPORTED}} for r in rows if r["observation_id"] in observation_ids]


def check_revision(obj: dict[str, Any]) -> dict[str, Any]:
    """A revision line with its defaults; raises ValueError naming the first problem."""
    unknown = sorted(set(obj) - {"kind", "observation", *EXPORTED})
    if unknown:
        raise ValueError(f"revision: unknown field {unknown[0]!r}")
    ref = obj.get("observation")
    if not (isinstance(ref, dict) and set(ref) == {"session_id", "content_hash"} and all(isinstance(v, str) and v for v in ref.values())):
        raise ValueError("revision: 'observation' must name one as {\"session_id\": ..., \"content_hash\": ...}")
    rev = {"observation": ref, "author": obj.get("author"), "changed": obj.get("changed", []), "type": obj.get("type"),
           "title": obj.get("title"), "narrative": obj.get("narrative", ""), "facts": obj.get("facts", []),
           "created_at_epoch": obj.get("created_at_epoch")}
    if rev["author"] not in AUTHORS or rev["type"] not in OBSERVATION_TYPES:
        raise ValueError(f"revision: author must be one of {', '.join(AUTHORS)} and type one of {', '.join(OBSERVATION_TYPES)}")
    if not isinstance(rev["title"], str) or not rev["title"].strip() or not isinstance(rev["narrative"], str):
        raise ValueError("revision: 'title' (not empty) and 'narrative' must be strings")
    for name in ("changed", "facts"):
        if not (isinstance(rev[name], list) and all(isinstance(v, str) for v in rev[name])):
            raise ValueError(f"revision: {name!r} must be a list of strings")
    created = rev["created_at_epoch"]
    if isinstance(created, bool) or not isinstance(created, int) or created < 0:
        raise ValueError("revision: 'created_at_epoch' must be a whole number of milliseconds")
    return rev


def import_revision(conn: sqlite3.Connection, rev: dict[str, Any]) -> bool | None:
    """Add a checked revision unless the same one is here (True when added); None when its
    observation is not in the database."""
    found = conn.execute("SELECT id FROM observations WHERE session_id = ? AND content_hash = ?",
                         (rev["observation"]["session_id"], rev["observation"]["content_hash"])).fetchone()
    if found is None:
        return None
    values = (int(found[0]), rev["author"], json.dumps(rev["changed"]), rev["type"], rev["title"], rev["narrative"],
              json.dumps(rev["facts"], ensure_ascii=False), rev["created_at_epoch"])
    if conn.execute("SELECT 1 FROM observation_revisions WHERE observation_id = ? AND author = ? AND changed = ? AND type = ?"
                    " AND title = ? AND narrative = ? AND facts = ? AND created_at_epoch = ?", values).fetchone():
        return False
    conn.execute("INSERT INTO observation_revisions (observation_id, author, changed, type, title, narrative, facts,"
                 " created_at_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", values)
    return True
