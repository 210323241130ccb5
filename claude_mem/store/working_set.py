"""What a session has in hand, read from its own queued events: the files it modified (and
what was done to each), the failures it has not fixed yet, its current request. SessionStart
after a compaction shows it (push/compact.py) and the heuristic checkpoint names the failures
(worker/checkpoint.py): the events say it whether or not a model has seen them yet.

On the hook path: standard library only; SQLite's JSON functions read the stored tool inputs.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3

from claude_mem.store.withheld import shown
from claude_mem.text.command_keys import command_key

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

EDIT_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
TITLES_SCANNED = 300  # the session's newest observations looked at for what was done to a file
_PATH_IN_TEXT = re.compile(r'"(?:file_path|notebook_path)":\s*"((?:[^"\\]|\\.)+)"')


def modified_files(conn: sqlite3.Connection, session_id: str) -> list[dict[str, Any]]:
    """The files the session changed, the most recently changed first: path, how many edits,
    whether a Write made it, and the newest observation title that names it (when the worker has
    written one)."""
    marks = ",".join("?" * len(EDIT_TOOLS))
    files: dict[str, dict[str, Any]] = {}
    for row_id, tool, path, raw in conn.execute(
            "SELECT id, tool_name, CASE WHEN json_valid(tool_input) THEN COALESCE(json_extract(tool_input, '$.file_path'),"
            " json_extract(tool_input, '$.notebook_path')) END, tool_input FROM observation_queue"
            f" WHERE session_id = ? AND kind = 'tool' AND is_error = 0 AND tool_name IN ({marks}) ORDER BY id",
            (session_id, *EDIT_TOOLS)):
        if not isinstance(path, str):  # an input cut to one string: the path is still at its head
            found = _PATH_IN_TEXT.search(raw or "")
            path = json.loads(f'"{found.group(1)}"') if found else None
        if not path:
            continue
        entry = files.setdefault(path, {"path": path, "edits": 0, "written": False, "last_id": 0, "title": ""})
        entry["edits"] += 1
        entry["written"] = entry["written"] or tool == "Write"
        entry["last_id"] = row_id
    if files:
        _titles(conn, session_id, files)
    return sorted(files.values(), key=lambda f: -f["last_id"])


def _titles(conn: sqlite3.Connection, session_id: str, files: dict[str, dict[str, Any]]) -> None:
    for title, names in conn.execute(f"SELECT title, files_modified FROM observations t WHERE session_id = ? AND {shown('t')}"
                                     " ORDER BY id DESC LIMIT ?", (session_id, TITLES_SCANNED)):
        try:
            paths = json.loads(names or "[]")
        except ValueError:
            continue
        paths = [p for p in paths if isinstance(p, str)] if isinstance(paths, list) else []
        for path in paths:
            entry = files.get(path)
            if entry is not None and not entry["title"]:
                entry["title"] = _about(title, path, alone=len(paths) == 1)


def _about(title: str, path: str, *, alone: bool) -> str:
    """What a title says of one file: all of it when the observation is about that file alone,
    else its part that names the file ("Edited a.py: f(); b.py: g()" says `f()` of a.py)."""
    if alone:
        return title
    name = os.path.basename(path)
    for part in title.split("; "):
        if name in part:
            return part.split(f"{name}:", 1)[-1].strip() if f"{name}:" in part else part.strip()
    return ""


def open_failures(conn: sqlite3.Connection, session_id: str, limit: int = 5) -> list[dict[str, Any]]:
    """Shell commands whose last run in the session failed (one per command key, newest first):
    the command, its error line. A later run of the same key that passed fixed it."""
    latest: dict[str, dict[str, Any]] = {}
    for row_id, command, failed, response, note in conn.execute(
            "SELECT id, CASE WHEN json_valid(tool_input) THEN json_extract(tool_input, '$.command') END, is_error,"
            " CASE WHEN is_error THEN tool_response END, guard_note FROM observation_queue"
            " WHERE session_id = ? AND kind = 'tool' AND tool_name = 'Bash' ORDER BY id", (session_id,)):
        key = command_key(command) if isinstance(command, str) else None
        if key is None:
            continue
        if failed and _interrupted(response):
            continue  # the user stopped it: it says nothing about the code
        latest[key] = {"id": row_id, "key": key, "command": command, "failed": bool(failed), "response": response, "note": note}
    found = sorted((f for f in latest.values() if f["failed"]), key=lambda f: -f["id"])[:limit]
    for f in found:
        response, note = f.pop("response"), f.pop("note")
        f["error"] = error_text(response)
        if note != "":
            # Shown after a compaction and in the checkpoint, straight from the queued output:
            # screened here when the worker's guard found text addressed to an AI in it, or has not
            # looked yet (issue 47; the guard is loaded only then).
            from claude_mem.guard.screen import screened_line

            f["error"] = screened_line(f["error"], f["key"], output_text(response))
    return found


def _interrupted(response: str | None) -> bool:
    try:
        data = json.loads(response or "")
    except ValueError:
        return False
    return isinstance(data, dict) and bool(data.get("is_interrupt"))


def output_text(response: str | None) -> str:
    """A failure's output as text: its error, else its stderr, else its stdout."""
    try:
        data = json.loads(response or "")
    except ValueError:
        data = response
    return str(((data.get("error") or data.get("stderr") or data.get("stdout")) if isinstance(data, dict) else data) or "")


def error_text(response: str | None) -> str:
    """The line of a failure that says most: the last one that is not its exit code."""
    lines = [ln.strip() for ln in output_text(response).splitlines() if ln.strip()]
    meaningful = [ln for ln in lines if not ln.lower().startswith("exit code")]
    return meaningful[-1] if meaningful else (lines[0] if lines else "")


def current_request(conn: sqlite3.Connection, session_id: str) -> str:
    """The session's last user prompt."""
    requests = recent_requests(conn, session_id, 1)
    return requests[0] if requests else ""


def recent_requests(conn: sqlite3.Connection, session_id: str, limit: int) -> list[str]:
    """The session's last user prompts, the newest first."""
    return [str(r[0]) for r in conn.execute(
        "SELECT prompt_text FROM user_prompts WHERE session_id = ? ORDER BY prompt_number DESC LIMIT ?", (session_id, limit))]


def relative(path: str, cwd: str | None) -> str:
    """A path as the session would write it: under its working directory, relative to it."""
    if cwd:
        root = cwd.rstrip(os.sep) + os.sep
        if path.startswith(root):
            return path[len(root):]
    return path
