"""What memory put into each session's context: the `injections` table (migration 0006).

Every push (the SessionStart digest, a prompt's recall, a file's or a command's history) and
every pull (observations fetched through the MCP `get_observations`) is one row with its size.
The hooks read it so a session is never given the same memory twice; `stats`, `show` and the
viewer add it up. Standard library only: the hooks write here.
"""

from __future__ import annotations

import json
import sqlite3

from claude_mem.store.db import now_ms, transaction

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

PUSHED = ("digest", "prompt", "file", "command")
KINDS = (*PUSHED, "fetch")


def estimate_tokens(chars: int) -> int:
    """About four characters a token for English and code: an estimate, said as one."""
    return (max(chars, 0) + 3) // 4


def record(conn: sqlite3.Connection, session_id: str, project: str, kind: str, refs: Iterable[str], chars: int,
           note: str = "") -> None:
    if kind not in KINDS:
        raise ValueError(f"unknown injection kind {kind!r}")
    with transaction(conn):
        conn.execute(
            "INSERT INTO injections (session_id, project, kind, refs, note, chars, tokens, created_at_epoch)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (session_id, project, kind, json.dumps(list(refs)), note, chars, estimate_tokens(chars), now_ms()))


def _since_compaction(conn: sqlite3.Connection, session_id: str) -> int:
    """The first row still in the session's context: compacting summarises everything before
    it away (SessionStart with source "compact" records a digest row, possibly empty)."""
    row = conn.execute("SELECT MAX(id) FROM injections WHERE session_id = ? AND kind = 'digest' AND note = 'compact'",
                       (session_id,)).fetchone()
    return int(row[0] or 0)


def given_refs(conn: sqlite3.Connection, session_id: str) -> set[str]:
    """Refs ("obs:12") the session's context already holds: pushed, or fetched by the agent."""
    start = _since_compaction(conn, session_id)
    given: set[str] = set()
    for (raw,) in conn.execute("SELECT refs FROM injections WHERE session_id = ? AND id >= ?", (session_id, start)):
        given.update(decode_refs(raw))
    return given


def decode_refs(raw: str | None) -> list[str]:
    """A row's refs column as a list ([] for anything unreadable)."""
    try:
        refs = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(r) for r in refs] if isinstance(refs, list) else []


def already(conn: sqlite3.Connection, session_id: str, kind: str, note: str) -> bool:
    """True when this session's context already holds a push of `kind` about `note` (a file, a command)."""
    start = _since_compaction(conn, session_id)
    return conn.execute("SELECT 1 FROM injections WHERE session_id = ? AND kind = ? AND note = ? AND id >= ? LIMIT 1",
                        (session_id, kind, note, start)).fetchone() is not None


def for_session(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """The session's rows in order, refs decoded (`show SESSION`)."""
    rows = []
    for r in conn.execute("SELECT * FROM injections WHERE session_id = ? ORDER BY id", (session_id,)):
        item = dict(r)
        item["refs"] = decode_refs(item["refs"])
        rows.append(item)
    return rows
