"""File recall: before Claude reads or changes a file (PreToolUse on Read, Edit, Write,
MultiEdit, NotebookEdit), the observations of earlier sessions that read or modified it.

SQL only: `observation_files` (migration 0006) finds the observations naming a file of that base
name through an index; full paths are then compared here, normalised against each session's
project root, so a file touched from another worktree or clone, by an absolute or a relative
path, is the same file. Observations about few files come first (one about twenty files says
little about any of them), newest first within that; one recorded before the file's last
modification is marked. At most `BUDGET` characters, each file once per session (until a
compaction summarises the context away), never from this session.
"""

from __future__ import annotations

import os

from claude_mem.project import find_git_root
from claude_mem.push import project_of
from claude_mem.push.lines import fit_lines, hook_answer, memory_line
from claude_mem.store import injections, marks
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

_SQL = ("SELECT o.id, o.type, o.title, o.created_at_epoch, f.path, f.modified, s.cwd,"
        " (SELECT COUNT(*) FROM observation_files g WHERE g.observation_id = o.id) AS breadth"
        " FROM observation_files f JOIN observations o ON o.id = f.observation_id"
        " LEFT JOIN sdk_sessions s ON s.claude_session_id = o.session_id"
        f" WHERE f.name = ? AND o.project = ? AND o.session_id != ? AND {marks.not_superseded('o')}"
        " ORDER BY o.created_at_epoch DESC, o.id DESC LIMIT ?")


def target(tool_input: Any) -> str | None:
    if not isinstance(tool_input, dict):
        return None
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    return path if isinstance(path, str) and path.strip() else None


def run(conn: sqlite3.Connection, session_id: str, cwd: str | None, path: str) -> str | None:
    """The hook's answer naming what earlier sessions did with `path`, after recording it; None for nothing."""
    cwd = cwd or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    absolute = os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))
    roots: dict[str, str] = {}
    rel = _relative(absolute, _root(cwd, roots))
    shown = rel or absolute
    project = project_of(conn, session_id, cwd)
    if injections.already(conn, session_id, "file", shown):
        return None
    found: dict[int, dict[str, Any]] = {}
    for row in conn.execute(_SQL, (os.path.basename(absolute), project, session_id, CANDIDATES)):
        if not _same_file(row["path"], row["cwd"] or cwd, absolute, rel, roots):
            continue
        seen = found.setdefault(row["id"], dict(row))
        seen["modified"] = max(seen["modified"], row["modified"])
    if not found:
        return None
    changed_ms = _mtime_ms(absolute)
    ordered = sorted(found.values(), key=lambda o: (o["breadth"] > BROAD, -o["created_at_epoch"], -o["id"]))
    lines = []
    for o in ordered:
        how = "modified" if o["modified"] else "read"
        if changed_ms is not None and o["created_at_epoch"] < changed_ms:
            how += "; the file changed since"
        title = f"{cut(o['title'], TITLE_CHARS)} ({how})"
        lines.append((f"obs:{o['id']}", memory_line("observation", o["id"], o["created_at_epoch"], o["type"], title)))
    header = f"claude-mem: what earlier sessions did with {cut(shown, 120)} (newest first):"
    text, refs = fit_lines(header, lines, BUDGET)
    if not refs:
        return None
    injections.record(conn, session_id, project, "file", refs, len(text), note=shown)
    return hook_answer("PreToolUse", text)


def _root(cwd: str, cache: dict[str, str]) -> str:
    """The work tree root holding `cwd` (its git root, else cwd itself), from files only."""
    if cwd not in cache:
        found = find_git_root(cwd)
        cache[cwd] = found[0] if found else os.path.normpath(cwd)
    return cache[cwd]


def _relative(path: str, root: str) -> str | None:
    """`path` relative to `root`, or None when it lies outside."""
    prefix = root.rstrip(os.sep) + os.sep
    return path[len(prefix):] if path.startswith(prefix) else None


def _same_file(stored: str, session_cwd: str, absolute: str, rel: str | None, roots: dict[str, str]) -> bool:
    """Whether a path an observation recorded (relative to its session's cwd, or absolute) is
    the file at `absolute` (`rel` inside the current work tree)."""
    candidate = os.path.normpath(stored if os.path.isabs(stored) else os.path.join(session_cwd, stored))
    if candidate == absolute:
        return True
    if rel is None:
        return False
    if os.path.isdir(session_cwd):
        # Another worktree or clone of the project: the same path under its own root.
        return _relative(candidate, _root(session_cwd, roots)) == rel
    # The session's folder is gone: the path's tail must name the same file below a root.
    return os.sep in rel and candidate.endswith(os.sep + rel)


def _mtime_ms(path: str) -> int | None:
    try:
        return int(os.stat(path).st_mtime * 1000)
    except OSError:
        return None
