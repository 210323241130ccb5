"""Prompt templates, and tool events rendered compactly for the observer model.

Cost is the point: the best-known system sends one message per event with each field cut at
16,000 characters. Here each tool keeps only the fields that say what happened (a Read's path,
an Edit's old/new text, a command and the tail of its output), responses are cut to small
head+tail budgets per tool, several events share one message, and events that say nothing new
(empty searches, listings, a command that only looks around, a git status or diff with nothing
to report, a file read again as it was) are folded into a single line. `bench/model_cost.py`
measures the ratio.
"""

from __future__ import annotations

import os
import time
from string import Template
from typing import Any

from claude_mem.resources import resource_dir
from claude_mem.text import shell
from claude_mem.text.caps import head_tail
from claude_mem.worker.events import Event, response_text, text_of

# Budgets in characters: the response is where the bulk is, and its end (errors, test
# results) usually matters more than its middle.
RESPONSE_BUDGET = {"Read": 600, "Write": 0, "Edit": 0, "MultiEdit": 0, "NotebookEdit": 0, "Bash": 1200,
                   "Grep": 500, "Glob": 300, "LS": 300, "WebFetch": 800, "WebSearch": 800, "Task": 1500, "Agent": 1500}
DEFAULT_RESPONSE_BUDGET = 800
INPUT_TEXT_BUDGET = 700
BORING_TOOLS = ("Glob", "Grep", "LS")
# Shell commands that only look around: what they print is where Claude is, not what it learned.
LOOKING = frozenset(("ls", "pwd", "tree", "which", "whoami", "echo", "date", "true", "clear", "type"))
CLEAN_TREE = "nothing to commit"  # a git status that has nothing to report


def load_template(name: str) -> Template:
    with open(os.path.join(resource_dir("prompts"), name + ".txt"), encoding="utf-8") as fh:
        return Template(fh.read())


def fill(name: str, **values: Any) -> str:
    return load_template(name).safe_substitute({k: str(v) for k, v in values.items()}).strip() + "\n"


def _rel(path: Any, cwd: str | None) -> str:
    path = str(path or "")
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


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
        content = text_of(i.get("content"))
        extra.append("content: " + head_tail(content, INPUT_TEXT_BUDGET))
        return f"Write {_rel(i.get('file_path'), cwd)} ({len(content)} chars)", extra
    if name in ("Edit", "MultiEdit"):
        edits = listed if isinstance(listed := i.get("edits"), list) else [i]
        for edit in edits[:4]:
            if isinstance(edit, dict):
                extra.append("- " + head_tail(text_of(edit.get("old_string")), INPUT_TEXT_BUDGET // 2))
                extra.append("+ " + head_tail(text_of(edit.get("new_string")), INPUT_TEXT_BUDGET // 2))
        if len(edits) > 4:
            extra.append(f"(+{len(edits) - 4} more edits)")
        return f"{name} {_rel(i.get('file_path'), cwd)}", extra
    if name == "Bash":
        desc = f"  # {i['description']}" if i.get("description") else ""
        return f"Bash `{head_tail(text_of(i.get('command')), 400)}`{desc}", extra
    if name in ("Grep", "Glob"):
        where = f" in {_rel(i.get('path'), cwd)}" if i.get("path") else ""
        return f"{name} {i.get('pattern')!r}{where}", extra
    if name in ("WebFetch", "WebSearch"):
        return f"{name} {i.get('url') or i.get('query')}", extra
    if name in ("Task", "Agent"):
        return f"{name} ({i.get('subagent_type') or 'agent'}): {head_tail(text_of(i.get('description') or i.get('prompt')), 300)}", extra
    return f"{name} {head_tail(text_of(i), INPUT_TEXT_BUDGET)}", extra


def is_boring(event: Event) -> bool:
    """An empty search, a plain listing, or a command that says nothing: worth a word, not a paragraph."""
    if event.is_error or event.kind != "tool":
        return False
    if event.tool_name == "Bash":
        return _says_nothing(event)
    if event.tool_name not in BORING_TOOLS:
        return False
    r = event.tool_response
    if isinstance(r, dict):
        if "numFiles" in r and not r.get("numFiles"):
            return True
        if "filenames" in r and not r.get("filenames") and not r.get("content"):
            return True
    return not response_text(event).strip() or event.tool_name == "LS"


def _says_nothing(event: Event) -> bool:
    """`ls`, `pwd` and the like (after any `cd`), or a git status or diff with nothing to report."""
    given = event.tool_input if isinstance(event.tool_input, dict) else {}
    ran = [c for c in shell.commands(text_of(given.get("command"))) if not c.setup and c.program]
    if not ran:
        return False
    if all(c.program in LOOKING for c in ran):
        return True
    if len(ran) != 1 or ran[0].program != "git" or not ran[0].args:
        return False
    said = response_text(event).strip()
    return (ran[0].args[0] == "status" and CLEAN_TREE in said) or (ran[0].args[0] == "diff" and not said)


def folded_line(event: Event) -> str:
    """How an event that says nothing new is named in the batch's closing line."""
    return _input_summary(event)[0]


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
        text = response_text(event).strip()
        if text:
            cut = head_tail(text, budget)
            lines.append("  => " + cut.replace("\n", "\n     "))
    return "\n".join(lines)


def render_batch(events: list[Event], repeated: frozenset[int] | set[int] = frozenset()) -> str:
    """Several events as one message body; boring ones, and the reads `repeated` names (a file
    read again as it was: store/queue.repeated_reads), folded into a closing line."""
    rendered: list[str] = []
    folded: list[str] = []
    for event in events:
        if is_boring(event) or event.id in repeated:
            folded.append(folded_line(event) + (" (again, unchanged)" if event.id in repeated else ""))
        else:
            rendered.append(render_event(event))
    if folded:
        rendered.append("(also, nothing found/notable: " + "; ".join(folded) + ")")
    return "\n\n".join(rendered)
