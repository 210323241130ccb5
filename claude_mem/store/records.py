"""Sessions and prompts: the rows hooks create (`apply_event` stores one hook event), and what
the worker records on them. (Observations and summaries: see memories.py.)

On the hook path: standard library only.
"""

from __future__ import annotations

import sqlite3

from claude_mem.project import project_for
from claude_mem.store import queue
from claude_mem.store.db import now_iso, now_ms, transaction
from claude_mem.store.queue import PROMPT_NUMBER_SQL

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

    from claude_mem.store.rows import Prompt, Session


def ensure_session(conn: sqlite3.Connection, session_id: str, *, project: str | None,
                   cwd: str | None, transcript_path: str | None, host: str | None = None) -> bool:
    """Create the session row if it is new; returns True when it was created. `project` may be
    None when the caller wants to compute it only for new sessions (see `session_exists`)."""
    now = now_ms()
    # The column's default is Claude Code: named only for another host (so a database migrated
    # only part of the way, as tests of older schemas build, takes Claude Code's sessions still).
    other = host if host and host != "claude-code" else None
    cur = conn.execute(
        "INSERT INTO sdk_sessions (claude_session_id, project, cwd, transcript_path, started_at,"
        f" started_at_epoch, updated_at_epoch{', host' if other else ''}) VALUES (?, ?, ?, ?, ?, ?, ?{', ?' if other else ''})"
        " ON CONFLICT (claude_session_id) DO NOTHING",
        (session_id, project or "unknown", cwd, transcript_path, now_iso(now), now, now, *([other] if other else [])),
    )
    return bool(cur.rowcount)


# Memories a person or the agent states (`remember`) have no Claude Code session: each project
# keeps them in one session of its own (migration 0018), which no agent ran ('stated' is its
# host) and no worker takes (it never has queued events). One session rather than one a memory:
# the session's content hash then makes remembering the same text twice store it once, and
# `forget --project`, `export --project` and `show stated:<project>` find them with the rest.
STATED_HOST = "stated"
STATED_PREFIX = "stated:"


def stated_session(conn: sqlite3.Connection, project: str) -> str:
    """The project's session of stated memories, created on first use (inside the caller's
    transaction); its last activity is now."""
    session_id = STATED_PREFIX + project
    now = now_ms()
    conn.execute(
        "INSERT INTO sdk_sessions (claude_session_id, project, status, started_at, started_at_epoch, updated_at_epoch,"
        " host) VALUES (?, ?, 'ended', ?, ?, ?, ?) ON CONFLICT (claude_session_id) DO UPDATE SET updated_at_epoch = ?",
        (session_id, project, now_iso(now), now, now, STATED_HOST, now))
    return session_id


def session_exists(conn: sqlite3.Connection, session_id: str) -> bool:
    return conn.execute(
        "SELECT 1 FROM sdk_sessions WHERE claude_session_id = ?", (session_id,)
    ).fetchone() is not None


def record_prompt(conn: sqlite3.Connection, session_id: str, text: str,
                  prompt_id: str | None, *, created_at_epoch: int | None = None) -> int:
    """Number and store a user prompt; a prompt_id seen before returns its existing number.
    Call inside a transaction, after `ensure_session`. `created_at_epoch` dates an imported
    conversation (bench/locomo.py); hooks store the time of the event."""
    if prompt_id:
        row = conn.execute(
            "SELECT prompt_number FROM user_prompts WHERE session_id = ? AND prompt_id = ?",
            (session_id, prompt_id),
        ).fetchone()
        if row:
            return int(row[0])
    now = now_ms()
    created = created_at_epoch if created_at_epoch is not None else now
    number = conn.execute(
        "UPDATE sdk_sessions SET prompt_counter = prompt_counter + 1, status = 'active',"
        " updated_at_epoch = ?, user_prompt = COALESCE(user_prompt, ?)"
        " WHERE claude_session_id = ? RETURNING prompt_counter",
        (now, text, session_id),
    ).fetchone()[0]
    conn.execute(
        "INSERT INTO user_prompts (session_id, prompt_number, prompt_text, prompt_id, created_at,"
        " created_at_epoch) VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, number, text, prompt_id, now_iso(created), created),
    )
    return int(number)


def record_reply(conn: sqlite3.Connection, session_id: str, text: str | None, prompt_id: str | None) -> None:
    """Keep Claude's final reply with the prompt it answers (the one Claude Code names by
    prompt_id, else the session's current one); a later Stop of the same turn replaces it.
    `text` comes redacted and cut by the hook. Call inside a transaction."""
    if not text or not text.strip():
        return
    conn.execute(f"UPDATE user_prompts SET reply_text = :text WHERE session_id = :sid AND prompt_number = {PROMPT_NUMBER_SQL}",
                 {"text": text, "sid": session_id, "pid": prompt_id})


def end_session(conn: sqlite3.Connection, session_id: str) -> None:
    """Claude Code closed the session (SessionEnd). A session we never saw is not created."""
    conn.execute("UPDATE sdk_sessions SET status = 'ended', updated_at_epoch = ? WHERE claude_session_id = ?",
                 (now_ms(), session_id))


# The records' module is imported where they are read, not at the top: hooks only write (it
# costs a hook ~7 ms: store/rows.py).

def get_session(conn: sqlite3.Connection, session_id: str) -> Session | None:
    from claude_mem.store.rows import Session, columns

    row = conn.execute(f"SELECT {columns(Session)} FROM sdk_sessions WHERE claude_session_id = ?", (session_id,)).fetchone()
    return Session.from_row(row) if row else None


def list_prompts(conn: sqlite3.Connection, session_id: str) -> list[Prompt]:
    from claude_mem.store.rows import Prompt, columns

    return [Prompt.from_row(r) for r in conn.execute(
        f"SELECT {columns(Prompt)} FROM user_prompts WHERE session_id = ? ORDER BY prompt_number", (session_id,))]


def apply_event(conn: sqlite3.Connection, record: dict[str, Any]) -> None:
    """Store one safe event in one transaction. Replaying the same event is harmless: tool
    calls dedupe on tool_use_id, prompts on prompt_id, finalize markers on the prompt."""
    session_id = record["session_id"]
    if record["type"] == "end":
        with transaction(conn):
            end_session(conn, session_id)
        return
    with transaction(conn):
        if not session_exists(conn, session_id):
            ensure_session(conn, session_id, project=project_for(record.get("cwd")), cwd=record.get("cwd"),
                           transcript_path=record.get("transcript_path"), host=record.get("host"))
        kind = record["type"]
        if kind == "prompt":
            record_prompt(conn, session_id, record["prompt"], record.get("prompt_id"))
        elif kind == "tool":
            queue.enqueue_tool(
                conn, session_id, tool_name=record["tool_name"], tool_input=record["tool_input"],
                tool_response=record["tool_response"], tool_use_id=record.get("tool_use_id"),
                is_error=bool(record.get("is_error")), duration_ms=record.get("duration_ms"),
                agent_id=record.get("agent_id"), cwd=record.get("cwd"), prompt_id=record.get("prompt_id"),
            )
        elif kind == "finalize":
            queue.enqueue_finalize(conn, session_id, cwd=record.get("cwd"), prompt_id=record.get("prompt_id"),
                                   last_assistant_message=record.get("last_assistant_message"))
            record_reply(conn, session_id, record.get("last_assistant_message"), record.get("prompt_id"))
        elif kind == "checkpoint":
            from claude_mem.store import checkpoints  # only PreCompact needs it

            checkpoints.request(conn, session_id, record.get("trigger") or "")
        else:
            raise ValueError(f"unknown event type {kind!r}")


def session_ended(conn: sqlite3.Connection, session_id: str) -> bool:
    """Claude Code sent SessionEnd (a resumed session sets it active again)."""
    row = conn.execute("SELECT status FROM sdk_sessions WHERE claude_session_id = ?", (session_id,)).fetchone()
    return row is not None and row[0] == "ended"


def complete_session(conn: sqlite3.Connection, session_id: str) -> None:
    """A turn was summarised: the session is completed (an ended one stays ended)."""
    conn.execute("UPDATE sdk_sessions SET status = CASE status WHEN 'ended' THEN 'ended' ELSE 'completed' END,"
                 " completed_at_epoch = ? WHERE claude_session_id = ?", (now_ms(), session_id))


def set_resume_point(conn: sqlite3.Connection, session_id: str, conversation: str | None, message: str | None) -> None:
    """Where the session's observer conversation resumes: after the last stored batch."""
    conn.execute("UPDATE sdk_sessions SET sdk_session_id = ?, sdk_resume_at = ? WHERE claude_session_id = ?",
                 (conversation, message, session_id))


def prompt_text(conn: sqlite3.Connection, session_id: str, prompt_number: int) -> str | None:
    row = conn.execute("SELECT prompt_text FROM user_prompts WHERE session_id = ? AND prompt_number = ?",
                       (session_id, prompt_number)).fetchone()
    return row[0] if row else None


def replied_prompts(conn: sqlite3.Connection, session_id: str, prompt_number: int) -> list[int]:
    """The ids of the turn's prompts that hold Claude's reply (the Stop hook keeps it)."""
    return [r[0] for r in conn.execute(
        "SELECT id FROM user_prompts WHERE session_id = ? AND prompt_number = ? AND reply_text != ''",
        (session_id, prompt_number))]


def reply_text(conn: sqlite3.Connection, session_id: str, prompt_number: int) -> str:
    row = conn.execute("SELECT reply_text FROM user_prompts WHERE session_id = ? AND prompt_number = ?",
                       (session_id, prompt_number)).fetchone()
    return str(row[0] or "") if row else ""


def replace_reply(conn: sqlite3.Connection, session_id: str, prompt_number: int, text: str) -> None:
    """Claude's reply as the write guard leaves it (worker/guarding.py). Call inside a transaction."""
    conn.execute("UPDATE user_prompts SET reply_text = ? WHERE session_id = ? AND prompt_number = ?",
                 (text, session_id, prompt_number))


def newest_prompt_id(conn: sqlite3.Connection, session_id: str) -> int | None:
    """The id of the session's newest prompt: the one Claude Code is answering now."""
    row = conn.execute("SELECT id FROM user_prompts WHERE session_id = ? ORDER BY prompt_number DESC LIMIT 1",
                       (session_id,)).fetchone()
    return int(row[0]) if row else None


def prompt_text_of(conn: sqlite3.Connection, prompt_id: int) -> str | None:
    """The text of the prompt with this id (None when there is none)."""
    row = conn.execute("SELECT prompt_text FROM user_prompts WHERE id = ?", (prompt_id,)).fetchone()
    return row[0] if row else None
