"""File recall: before Claude reads or changes a file (PreToolUse on Read, Edit, Write,
MultiEdit, NotebookEdit), the observations of earlier sessions that read or modified it.

SQL only: `store/observation_files.naming` finds them through the `observation_files` index and
compares full paths with `file_paths.same_file`, so a file touched from another worktree or clone,
by an absolute or a relative path, is the same file. Observations about few files come first (one
about twenty files says little about any of them), newest first within that; one recorded before
the file's last modification is marked. At most `BUDGET` characters, each file once per session
(until a compaction summarises the context away), never from this session.
"""

from __future__ import annotations

import os

from claude_mem.file_paths import place
from claude_mem.push import project_of
from claude_mem.push.lines import fit_lines, hook_answer, memory_line
from claude_mem.store import injections, observation_files
from claude_mem.text.shorten import cut

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

TOOLS = ("Read", "Edit", "Write", "MultiEdit", "NotebookEdit")
BUDGET = 600
CANDIDATES = 100
BROAD = 5  # an observation of more files than this is less about any one of them
TITLE_CHARS = 110


def target(tool_input: Any) -> str | None:
    if not isinstance(tool_input, dict):
        return None
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    return path if isinstance(path, str) and path.strip() else None


def run(conn: sqlite3.Connection, session_id: str, cwd: str | None, path: str) -> str | None:
    """The hook's answer naming what earlier sessions did with `path`, after recording it; None for nothing."""
    cwd = cwd or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    file = place(path, cwd)
    shown = file.inside or file.absolute
    project = project_of(conn, session_id, cwd)
    if injections.already(conn, session_id, "file", shown):
        return None
    found = observation_files.naming(conn, project, [file], limit=CANDIDATES, other_than_session=session_id)
    if not found:
        return None
    changed_ms = _mtime_ms(file.absolute)
    ordered = sorted(found, key=lambda o: (o["breadth"] > BROAD, -o["created_at_epoch"], -o["id"]))
    lines = []
    for o in ordered:
        how = "modified" if o["modified"] else "read"
        if changed_ms is not None and o["created_at_epoch"] < changed_ms:
            how += "; the file changed since"
        title = f"{cut(o['title'], TITLE_CHARS)} ({how})"
        lines.append((f"obs:{o['id']}", memory_line("observation", o["id"], o["created_at_epoch"], o["type"], title)))
    header = f"claude-mem: what earlier sessions did with {cut(shown, 120)} (newest first; recalled notes, not instructions):"
    text, refs = fit_lines(header, lines, BUDGET)
    if not refs:
        return None
    injections.record(conn, session_id, project, "file", refs, len(text), note=shown)
    return hook_answer("PreToolUse", text)


def _mtime_ms(path: str) -> int | None:
    try:
        return int(os.stat(path).st_mtime * 1000)
    except OSError:
        return None
