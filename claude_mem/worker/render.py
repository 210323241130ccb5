"""Prompt templates, and tool events rendered compactly for the observer model.

Cost is the point: the best-known system sends one message per event with each field cut at
16,000 characters. Here each tool keeps only the fields that say what happened (a Read's path,
an Edit's old/new text, a command and the tail of its output), responses are cut to small
head+tail budgets per tool, several events share one message, and boring events (empty
searches, listings) are folded into a single line. `bench/model_cost.py` measures the ratio.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from string import Template
from typing import Any

from claude_mem.payload import head_tail
from claude_mem.resources import resource_dir

# Budgets in characters: the response is where the bulk is, and its end (errors, test
# results) usually matters more than its middle.
RESPONSE_BUDGET = {"Read": 600, "Write": 0, "Edit": 0, "MultiEdit": 0, "NotebookEdit": 0, "Bash": 1200,
                   "Grep": 500, "Glob": 300, "LS": 300, "WebFetch": 800, "WebSearch": 800, "Task": 1500, "Agent": 1500}
DEFAULT_RESPONSE_BUDGET = 800
INPUT_TEXT_BUDGET = 700
BORING_TOOLS = ("Glob", "Grep", "LS")


def load_template(name: str) -> Template:
    with open(os.path.join(resource_dir("prompts"), name + ".txt"), encoding="utf-8") as fh:
        return Template(fh.read())


def fill(name: str, **values: Any) -> str:
    return load_template(name).safe_substitute({k: str(v) for k, v in values.items()}).strip() + "\n"


@dataclass
class Event:
    """A queue row, decoded, as the worker sees it."""

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
    def from_row(cls, row: dict[str, Any]) -> Event:
        return cls(id=row["id"], kind=row["kind"], tool_name=row.get("tool_name"), tool_input=row.get("tool_input"),
                   tool_response=row.get("tool_response"), is_error=bool(row.get("is_error")),
                   prompt_number=row.get("prompt_number") or 0, created_at_epoch=row["created_at_epoch"], cwd=row.get("cwd"))


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _rel(path: Any, cwd: str | None) -> str:
    path = str(path or "")
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def _response_text(event: Event) -> str:
    """The useful text of a tool response, whatever shape the tool gave it."""
    r = event.tool_response
    if isinstance(r, dict):
        if event.is_error and "error" in r:
            return _text(r.get("error"))
        if isinstance(r.get("file"), dict):  # Read
            return _text(r["file"].get("content"))
        if "stdout" in r or "stderr" in r:  # Bash
            out = _text(r.get("stdout")).rstrip()
            err = _text(r.get("stderr")).rstrip()
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
            return _text(r["result"])
        # Patches and original file copies repeat what the input already says.
        return _text({k: v for k, v in r.items() if k not in ("structuredPatch", "originalFile")})
    if isinstance(r, list):  # MCP / tool_result content blocks
        texts = [b.get("text", "") for b in r if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(texts) if texts else _text(r)
    return _text(r)


def _input_summary(event: Event) -> tuple[str, list[str]]:
    """(one-line headline of the call, extra indented lines)."""
    name = event.tool_name or "?"
    i = event.tool_input if isinstance(event.tool_input, dict) else {}
    cwd = event.cwd
    extra: list[str] = []
    if name in ("Read", "NotebookRead"):
        where = _rel(i.get("file_path") or i.get("notebook_path"), cwd)
        span = f" (from line {i['offset']})" if i.get("offset") else ""
        return f"Read {where}{span}", extra
    if name == "Write":
        content = _text(i.get("content"))
        extra.append("content: " + head_tail(content, INPUT_TEXT_BUDGET))
        return f"Write {_rel(i.get('file_path'), cwd)} ({len(content)} chars)", extra
    if name in ("Edit", "MultiEdit"):
        edits = i.get("edits") if isinstance(i.get("edits"), list) else [i]
        for edit in edits[:4]:
            if isinstance(edit, dict):
                extra.append("- " + head_tail(_text(edit.get("old_string")), INPUT_TEXT_BUDGET // 2))
                extra.append("+ " + head_tail(_text(edit.get("new_string")), INPUT_TEXT_BUDGET // 2))
        if len(edits) > 4:
            extra.append(f"(+{len(edits) - 4} more edits)")
        return f"{name} {_rel(i.get('file_path'), cwd)}", extra
    if name == "Bash":
        desc = f"  # {i['description']}" if i.get("description") else ""
        return f"Bash `{head_tail(_text(i.get('command')), 400)}`{desc}", extra
    if name in ("Grep", "Glob"):
        where = f" in {_rel(i.get('path'), cwd)}" if i.get("path") else ""
        return f"{name} {i.get('pattern')!r}{where}", extra
    if name in ("WebFetch", "WebSearch"):
        return f"{name} {i.get('url') or i.get('query')}", extra
    if name in ("Task", "Agent"):
        return f"{name} ({i.get('subagent_type') or 'agent'}): {head_tail(_text(i.get('description') or i.get('prompt')), 300)}", extra
    return f"{name} {head_tail(_text(i), INPUT_TEXT_BUDGET)}", extra


def is_boring(event: Event) -> bool:
    """An empty search or a plain listing: worth a word, not a paragraph."""
    if event.is_error or event.tool_name not in BORING_TOOLS:
        return False
    r = event.tool_response
    if isinstance(r, dict):
        if "numFiles" in r and not r.get("numFiles"):
            return True
        if "filenames" in r and not r.get("filenames") and not r.get("content"):
            return True
    return not _response_text(event).strip() or event.tool_name == "LS"


def render_event(event: Event) -> str:
    stamp = time.strftime("%H:%M:%S", time.localtime(event.created_at_epoch / 1000))
    headline, extra = _input_summary(event)
    status = " FAILED" if event.is_error else ""
    lines = [f"[{stamp}] {headline}{status}"]
    lines.extend("  " + line for line in "\n".join(extra).splitlines())
    budget = RESPONSE_BUDGET.get(event.tool_name or "", DEFAULT_RESPONSE_BUDGET)
    if event.is_error:
        budget = max(budget, 600)
    if budget:
        text = _response_text(event).strip()
        if text:
            cut = head_tail(text, budget)
            lines.append("  => " + cut.replace("\n", "\n     "))
    return "\n".join(lines)


def render_batch(events: list[Event]) -> str:
    """Several events as one message body, boring ones folded into a closing line."""
    rendered: list[str] = []
    folded: list[str] = []
    for event in events:
        if is_boring(event):
            headline, _ = _input_summary(event)
            folded.append(headline)
        else:
            rendered.append(render_event(event))
    if folded:
        rendered.append("(also, nothing found/notable: " + "; ".join(folded) + ")")
    return "\n\n".join(rendered)


def event_size(event: Event) -> int:
    return len(render_event(event))


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
