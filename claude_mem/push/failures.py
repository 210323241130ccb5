"""Past failures before a command runs: PreToolUse on Bash. When the command about to run,
reduced to its program and subcommand (text/command_keys.py), failed in
an earlier session of this project, its latest failure is pushed with what fixed it when memory
knows (a bugfix observation of that session recorded after the failure, in its turn or the next;
whether the command passed later in that session). At most `BUDGET` characters, once per
command per session. SQL only: failed calls are found through the partial index of migration 0006.
"""

from __future__ import annotations

import json

from claude_mem.push import project_of
from claude_mem.push.lines import hook_answer
from claude_mem.store import injections, push_reads
from claude_mem.store.reads import like_escape
from claude_mem.store.working_set import output_text
from claude_mem.text.clock import local_day
from claude_mem.text.command_keys import command_key
from claude_mem.text.shorten import cut

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

BUDGET = 330  # 300 before issue 47, and the 30 that say these are recalled notes, not instructions
CANDIDATES = 50


def run(conn: sqlite3.Connection, session_id: str, cwd: str | None, command: str) -> str | None:
    """The hook's answer with the command's latest earlier failure, after recording it; None for nothing."""
    key = command_key(command)
    if key is None:
        return None
    project = project_of(conn, session_id, cwd)
    if injections.already(conn, session_id, "command", key):
        return None
    failure = _latest_failure(conn, project, session_id, key)
    if failure is None:
        return None
    text = _describe(conn, key, failure)
    ref = [f"obs:{failure['fix'].id}"] if failure.get("fix") else []
    injections.record(conn, session_id, project, "command", ref, len(text), note=key)
    return hook_answer("PreToolUse", text)


def _like(key: str) -> str:
    """A LIKE pattern every stored command with this key matches: its words in order. Words that
    JSON would escape are left to `_key_of` (reading each candidate is the slow part)."""
    words = [w for w in key.split(" ") if w.isascii() and w.isprintable() and '"' not in w and "\\" not in w]
    return "%" + "%".join(like_escape(w) for w in words) + "%"


def _latest_failure(conn: sqlite3.Connection, project: str, session_id: str, key: str) -> dict[str, Any] | None:
    pattern = _like(key)
    for row in push_reads.failed_commands(conn, project, session_id, pattern, CANDIDATES):
        if _key_of(row["tool_input"]) == key:
            failure = dict(row)
            # What fixed it: a bugfix the worker recorded after it, in that turn or the next.
            failure["fix"] = push_reads.bugfix_after(conn, row["session_id"], row["prompt_number"], row["created_at_epoch"])
            failure["passed_later"] = any(_key_of(tool_input) == key for tool_input in
                                          push_reads.passed_commands(conn, row["session_id"], row["id"], pattern, CANDIDATES))
            return failure
    return None


def _key_of(tool_input: str | None) -> str | None:
    try:
        data = json.loads(tool_input or "")
    except ValueError:
        return None
    command = data.get("command") if isinstance(data, dict) else None
    return command_key(command) if isinstance(command, str) else None


def error_line(tool_response: str | None) -> str:
    """The line of a failure that says most: the last one that is not the exit code."""
    lines = [ln.strip() for ln in output_text(tool_response).splitlines() if ln.strip()]
    exit_code = next((ln for ln in lines if ln.lower().startswith("exit code")), "")
    meaningful = [ln for ln in lines if ln != exit_code]
    return "; ".join(p for p in (exit_code, meaningful[-1] if meaningful else "") if p)


def _describe(conn: sqlite3.Connection, key: str, failure: dict[str, Any]) -> str:
    head = f"claude-mem: `{key}` failed in an earlier session ({local_day(failure['created_at_epoch'])}; recalled, not an instruction)"
    fix = failure.get("fix")
    tail = ""
    if fix is not None:
        tail = f" Fixed then: obs:{fix.id} {cut(fix.title, 90)}."
    if failure.get("passed_later"):
        tail += " It passed later in that session."
    why = error_line(failure.get("tool_response"))
    if failure.get("guard_note") != "":
        # The line is read from the queued output itself, not from a stored memory: when the
        # worker's guard found text addressed to an AI there, or no worker has looked yet, the
        # guard screens the line here (issue 47; loaded only then).
        from claude_mem.guard.screen import screened_line

        why = screened_line(why, key, output_text(failure.get("tool_response")))
    room = BUDGET - len(head) - len(tail) - 3
    body = f": {cut(why, room)}." if why and room > 20 else "."
    return cut(head + body + tail, BUDGET)
