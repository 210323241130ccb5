"""What the push tests share: a store written row by row, and the prompt and pre hooks run as Claude Code runs them."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from claude_mem.replay import run_hook
from claude_mem.store import queue
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, insert_observation
from claude_mem.store.records import ensure_session, record_prompt

KEYWORDS_ONLY = {"CLAUDE_MEM_SEMANTIC_INDEX": "0"}


def payload(event: str, cwd: Path, session: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": session, "transcript_path": "/dev/null", "cwd": str(cwd), "hook_event_name": event, **fields}


def hook(command: str, data: dict[str, Any], env: dict[str, str] | None = None) -> str | None:
    """The additionalContext the hook answered with, None for the quiet answer; it must exit 0
    without a word on stderr and never decide about permissions."""
    proc = run_hook(command, data, env={**os.environ, **KEYWORDS_ONLY, **(env or {})})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    answer = json.loads(proc.stdout)
    if answer == {"continue": True, "suppressOutput": True}:
        return None
    out = answer["hookSpecificOutput"]
    assert set(out) == {"hookEventName", "additionalContext"} and out["hookEventName"] == data["hook_event_name"]
    return out["additionalContext"]


def ask(cwd: Path, session: str, prompt: str, **env: str) -> str | None:
    return hook("new", payload("UserPromptSubmit", cwd, session, prompt=prompt), env)


def pre(cwd: Path, session: str, tool: str, tool_input: dict[str, Any], **env: str) -> str | None:
    return hook("pre", payload("PreToolUse", cwd, session, tool_name=tool, tool_input=tool_input, tool_use_id="toolu_x"), env)


def injections(data_dir: Path, session: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(data_dir / "claude-mem.db")
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute("SELECT * FROM injections WHERE session_id = ? ORDER BY id", (session,))]
    finally:
        conn.close()


class Memory:
    """Rows written through the store's own functions."""

    def __init__(self, data_dir: Path) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.conn = connect(str(data_dir / "claude-mem.db"))

    def session(self, session_id: str, project: str, cwd: Path | str) -> None:
        with transaction(self.conn):
            ensure_session(self.conn, session_id, project=project, cwd=str(cwd), transcript_path=None)

    def prompt(self, session_id: str, text: str) -> None:
        with transaction(self.conn):
            record_prompt(self.conn, session_id, text, None)

    def obs(self, session_id: str, project: str, title: str, type_: str = "discovery", *, at: int | None = None,
            prompt_number: int = 1, **fields: Any) -> int:
        with transaction(self.conn):
            obs_id = insert_observation(self.conn, session_id, project, Observation(type=type_, title=title, **fields),
                                        prompt_number=prompt_number, created_at_epoch=at)
        assert obs_id is not None
        return obs_id

    def bash(self, session_id: str, command: str, *, error: str | None, use_id: str, cwd: Path) -> None:
        response = {"error": error} if error is not None else {"stdout": "ok", "stderr": "", "interrupted": False}
        with transaction(self.conn):
            queue.enqueue_tool(self.conn, session_id, tool_name="Bash", tool_input=json.dumps({"command": command}),
                               tool_response=json.dumps(response), tool_use_id=use_id, is_error=error is not None,
                               duration_ms=5, agent_id=None, cwd=str(cwd), prompt_id=None)

    def close(self) -> None:
        self.conn.close()
