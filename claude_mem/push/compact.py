"""SessionStart after a compaction: this session's working set, before the project's digest.

Claude Code's own compaction summary is written by the model under pressure and drops detail.
What the session was in the middle of is read back from its own events (store/working_set.py)
and the checkpoint its worker wrote when PreCompact asked (store/checkpoints.py): the current
request, the files it modified with what was done to each, the failures not fixed yet, the
checkpoint. At most `max_chars`; when room runs short the request and the files' names go
first, then the failures, the checkpoint, and last what was done to each file. A file (or a
checkpoint line) Claude Code's summary already names, when it is in the transcript by then,
is named without its detail.

Standard library only (the `context` hook).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3

from claude_mem.push.lines import NOT_INSTRUCTIONS
from claude_mem.store import checkpoints, working_set
from claude_mem.text.shorten import cut

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

HEADER = f"# claude-mem: where this session was before the compaction\n{NOT_INSTRUCTIONS}\n"
REQUEST_CHARS = 600
SHORT_REQUEST = 40  # a prompt shorter than this ("continue", "yes, do it") says little by itself
FAILURE_CHARS = 220
DETAIL_CHARS = 110
TRANSCRIPT_TAIL = 2 * 1024 * 1024  # where Claude Code's summary of this compaction is, if written yet
_CHECKPOINT_LABELS = (("Done", "completed"), ("Decided", "decided"), ("Still failing", "failing"), ("Next", "next_steps"))
_WORD = re.compile(r"[A-Za-z0-9_]{4,}")
FAILURES_HEADING = "## Failing when it stopped (not passed since)\n"
CHECKPOINT_HEADING = "## Checkpoint written at the compaction\n"


def build(conn: sqlite3.Connection, session_id: str, *, cwd: str | None, transcript_path: str | None,
          max_chars: int) -> str:
    """The working set block ("" when the session left nothing to show)."""
    requests = working_set.recent_requests(conn, session_id, 8)
    request = requests[0] if requests else ""
    files = working_set.modified_files(conn, session_id)
    failures = working_set.open_failures(conn, session_id, limit=3)
    checkpoint = checkpoints.latest(conn, session_id)
    if not (request or files or failures or checkpoint):
        return ""
    shown = compaction_summary(transcript_path)
    room = max_chars - len(HEADER)
    head = _request(request, requests[1:], min(REQUEST_CHARS, room // 3)) if request else ""
    room -= len(head)
    names = [working_set.relative(f["path"], cwd) for f in files]
    file_lines, room = _names(names, room)
    failure_lines, room = _failures(failures, room)
    # A checkpoint line that only repeats the files' names (or Claude Code's summary) is left out.
    checkpoint_lines, room = _checkpoint(checkpoint, " ".join([shown, *names, *(f["title"] for f in files)]), room)
    file_lines = _details(file_lines, files, names, shown, room)
    text = HEADER + head
    if file_lines:
        text += f"## Files it modified ({len(files)})\n" + "".join(file_lines)
    if failure_lines:
        text += FAILURES_HEADING + "".join(failure_lines)
    if checkpoint_lines:
        text += CHECKPOINT_HEADING + "".join(checkpoint_lines)
    return text if len(text) <= max_chars else cut(text, max_chars, one_line=False)  # a budget below the header


def _failures(failures: list[dict[str, Any]], room: int) -> tuple[list[str], int]:
    lines: list[str] = []
    for failure in failures:
        line = cut(f"- `{cut(failure['command'], 80)}`: {failure['error']}", FAILURE_CHARS) + "\n"
        cost = len(line) + (0 if lines else len(FAILURES_HEADING))
        if cost <= room:
            room -= cost
            lines.append(line)
    return lines, room


def _request(request: str, earlier: list[str], width: int) -> str:
    """The last prompt; when it is a short "continue" or "yes", the last one that said more too."""
    line = f"Current request: {cut(request, width)}"
    said_more = next((p for p in earlier if len(p.strip()) >= SHORT_REQUEST), "")
    if len(request.strip()) < SHORT_REQUEST and said_more:
        line += f" (after: {cut(said_more, max(40, width - len(line) - 9))})"
    return line + "\n"


def _names(names: list[str], room: int) -> tuple[list[str], int]:
    """One line per file, newest first, as many as fit (the rest counted on one line)."""
    heading = len("## Files it modified (0000)\n")
    room -= heading if names else 0
    lines: list[str] = []
    for index, name in enumerate(names):
        line = f"- {name}\n"
        rest = len(names) - index - 1
        reserve = len(f"- and {rest} more\n") if rest else 0
        if len(line) + reserve > room:
            more = f"- and {len(names) - index} more\n"
            lines.append(more)
            room -= len(more)
            break
        lines.append(line)
        room -= len(line)
    return lines, room


def _details(lines: list[str], files: list[dict[str, Any]], names: list[str], shown: str, room: int) -> list[str]:
    """What was done to each file, newest first, while there is room; none for a file Claude
    Code's summary names already."""
    out = list(lines)
    for index, (entry, name) in enumerate(zip(files, names, strict=False)):
        if index >= len(out) or not out[index].startswith(f"- {name}\n"):
            break
        if shown and (name in shown or os.path.basename(name) in shown):
            continue
        edits = entry["edits"] - (1 if entry["written"] else 0)
        done = ("written" if entry["written"] else "") + (" + " if entry["written"] and edits else "") + (
            f"{edits} edit{'s' if edits > 1 else ''}" if edits else "")
        detail = f": {done}" + (f"; {cut(entry['title'], DETAIL_CHARS)}" if entry["title"] else "")
        if len(detail) <= room:
            out[index] = f"- {name}{detail}\n"
            room -= len(detail)
    return out


def _checkpoint(checkpoint: dict[str, Any] | None, shown: str, room: int) -> tuple[list[str], int]:
    if checkpoint is None:
        return [], room
    room -= len(CHECKPOINT_HEADING)
    known = set(_WORD.findall(shown.lower()))
    lines: list[str] = []
    for label, key in _CHECKPOINT_LABELS:
        value = " ".join(str(checkpoint.get(key) or "").split())
        if not value or _repeats(value, known):
            continue
        width = min(len(value), max(0, room - len(label) - 5), 500)
        if width < 40:
            break
        line = f"- {label}: {cut(value, width)}\n"
        lines.append(line)
        room -= len(line)
    return lines, room + (0 if lines else len(CHECKPOINT_HEADING))


def _repeats(value: str, known: set[str]) -> bool:
    """Most of the line's words are in Claude Code's summary already."""
    words = set(_WORD.findall(value.lower()))
    return bool(known) and bool(words) and len(words & known) >= 0.8 * len(words)


def compaction_summary(transcript_path: str | None) -> str:
    """The summary Claude Code wrote for the latest compaction, when the transcript holds it by
    now ("" otherwise): only the file's tail is read, back to the compaction's boundary."""
    if not transcript_path:
        return ""
    try:
        with open(transcript_path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - TRANSCRIPT_TAIL))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    for raw in reversed(tail.splitlines()):
        if '"compact_boundary"' in raw and '"isCompactSummary"' not in raw:
            return ""  # this compaction's summary is not written yet
        if '"isCompactSummary":true' not in raw.replace(" ", ""):
            continue
        try:
            content = json.loads(raw).get("message", {}).get("content")
        except (ValueError, AttributeError):
            return ""
        if isinstance(content, list):
            content = "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
        return content if isinstance(content, str) else ""
    return ""
