"""What the writes of a person or the agent (claude_mem/writes/, and the CLI and viewer around
them) read and change of an observation: which ids exist, the fields an edit may change, the one a
stated text already is.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from claude_mem.store.reads import json_list


@dataclass(frozen=True)
class Fields:
    """What an edit may change of an observation (the facts decoded), and its project."""

    type: str
    title: str
    narrative: str
    facts: list[str]
    project: str


def existing(conn: sqlite3.Connection, ids: list[int]) -> set[int]:
    """Those of the observations `ids` that exist."""
    if not ids:
        return set()
    return {r[0] for r in conn.execute(f"SELECT id FROM observations WHERE id IN ({','.join('?' * len(ids))})", ids)}


def fields(conn: sqlite3.Connection, observation_id: int) -> Fields | None:
    row = conn.execute("SELECT type, title, narrative, facts, project FROM observations WHERE id = ?", (observation_id,)).fetchone()
    if row is None:
        return None
    return Fields(row["type"], row["title"], row["narrative"] or "", json_list(row["facts"]), row["project"])


def rewrite(conn: sqlite3.Connection, observation_id: int, *, type_: str, title: str, narrative: str, facts: list[str],
            type_changed: bool) -> None:
    """Give the observation these fields (a changed type clears raw_type, the unknown type the model wrote)."""
    conn.execute("UPDATE observations SET type = ?, raw_type = CASE WHEN ? THEN NULL ELSE raw_type END, title = ?,"
                 " narrative = ?, facts = ? WHERE id = ?",
                 (type_, type_changed, title, narrative, json.dumps(facts, ensure_ascii=False), observation_id))


def same_text(conn: sqlite3.Connection, session_id: str, content_hash: str) -> int:
    """The id of the session's observation with this content hash (one the caller knows is there)."""
    return int(conn.execute("SELECT id FROM observations WHERE session_id = ? AND content_hash = ?",
                            (session_id, content_hash)).fetchone()[0])
