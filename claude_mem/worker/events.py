"""A queue row as the worker reads it (`Event`), and what its tool call says: the response's
useful text whatever shape the tool gave it, and the files the events read and edited. The
renderer, the heuristic synthesizer and the recall of earlier memories all read events through here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from claude_mem.store.rows import QueuedEvent


@dataclass
class Event:
    """A queued event as the worker hands it on (the renderer, the synthesizers, the guard): the
    fields of its `QueuedEvent` they read, and a test can build alone."""

    id: int
    kind: str
    tool_name: str | None
    tool_input: Any
    tool_response: Any
    is_error: bool
    prompt_number: int
    created_at_epoch: int
    cwd: str | None = None

    @classmethod
    def from_row(cls, row: QueuedEvent) -> Event:
        return cls(id=row.id, kind=row.kind, tool_name=row.tool_name, tool_input=row.tool_input, tool_response=row.tool_response,
                   is_error=row.is_error, prompt_number=row.prompt_number, created_at_epoch=row.created_at_epoch, cwd=row.cwd)


def text_of(value: Any) -> str:
    """A tool field as text: strings as they are, anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def response_text(event: Event) -> str:
    """The useful text of a tool response, whatever shape the tool gave it."""
    r = event.tool_response
    if isinstance(r, dict):
        if event.is_error and "error" in r:
            return text_of(r.get("error"))
        if isinstance(r.get("file"), dict):  # Read
            return text_of(r["file"].get("content"))
        if "stdout" in r or "stderr" in r:  # Bash
            out = text_of(r.get("stdout")).rstrip()
            err = text_of(r.get("stderr")).rstrip()
            parts = [out] if out else []
            if err:
                parts.append("stderr: " + err)
            if r.get("interrupted"):
                parts.append("(interrupted)")
            return "\n".join(parts)
        if "filenames" in r:  # Glob / Grep file lists
            names = r.get("filenames") or []
            return f"{len(names)} files: " + ", ".join(map(str, names[:15]))
        if "content" in r and isinstance(r["content"], str):
            return r["content"]
        if isinstance(r.get("content"), list):  # a subagent's report (Task, Agent): its text, not its prompt and usage
            texts = [b.get("text", "") for b in r["content"] if isinstance(b, dict) and b.get("type") == "text"]
            if texts:
                return "\n".join(texts)
        if "result" in r:
            return text_of(r["result"])
        # Patches and original file copies repeat what the input already says.
        return text_of({k: v for k, v in r.items() if k not in ("structuredPatch", "originalFile")})
    if isinstance(r, list):  # MCP / tool_result content blocks
        texts = [b.get("text", "") for b in r if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(texts) if texts else text_of(r)
    return text_of(r)


def files_touched(events: list[Event]) -> tuple[list[str], list[str]]:
    """(files read, files edited) from the events themselves, not from the model."""
    read: list[str] = []
    edited: list[str] = []
    for e in events:
        if e.kind != "tool" or e.is_error or not isinstance(e.tool_input, dict):
            continue
        path = e.tool_input.get("file_path") or e.tool_input.get("notebook_path")
        if not isinstance(path, str) or not path:
            continue
        if e.tool_name in ("Read", "NotebookRead") and path not in read:
            read.append(path)
        elif e.tool_name in ("Write", "Edit", "MultiEdit", "NotebookEdit") and path not in edited:
            edited.append(path)
    return read, edited
