"""A hook's payload as the hooks read it: parsed (a JSON object on stdin, the fields a command
needs), the agent that ran it told (Claude Code or the Codex CLI), and what its payloads and
answers need to become the same events.

Codex's hooks are shaped like Claude Code's (PLATFORM-NOTES, Codex CLI): its shell tool
`exec_command` already comes as "Bash" with `tool_input.command`. What differs:
- `apply_patch` edits arrive as a Bash command (`apply_patch <<'EOF' ... EOF`) and Codex 0.171
  sends no PostToolUse for them: `pre` turns them into Edit calls of the files they name.
- a Bash PostToolUse carries the output only, never the exit code: it is read from the call's
  own line in the session's rollout transcript, where Codex has written it by then.
- Codex rejects unknown fields in a hook's answer (`suppressOutput` fails the run): it gets
  `hookSpecificOutput` {hookEventName, additionalContext} or nothing.

`claude-mem install --codex` registers the hooks as `claude-mem hook <name> --host codex`; a payload
without that word is told apart by what only Codex sends (`turn_id`, a `rollout-` transcript).

Standard library only: every hook process loads it.
"""

from __future__ import annotations

import json
import os
import re

from claude_mem.jsonfile import json_object

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

CLAUDE_CODE = "claude-code"
CODEX = "codex"
HOSTS = (CLAUDE_CODE, CODEX)
HOST_FLAG = "--host"

# Patterns, compiled on first use only: a Claude Code hook never needs them.
_EXIT = r"Process exited with code (-?\d+)"  # the call's output as the model reads it
_PATCH_FILE = r"(?m)^\*\*\* (Add|Update|Delete) File: (.+?)\s*$"
TRANSCRIPT_TAIL = 256 * 1024  # the call is among the last lines; older ones are not read


def host_from_args(args: list[str]) -> str | None:
    """The host a hook command line names (`--host codex`), "" for none, None when the words
    are not a hook's."""
    if not args:
        return ""
    if len(args) == 2 and args[0] == HOST_FLAG and args[1] in HOSTS:
        return args[1]
    return None


def detect(payload: dict[str, Any], named: str = "") -> str:
    if named in HOSTS:
        return named
    transcript = payload.get("transcript_path")
    if "turn_id" in payload and (not isinstance(transcript, str) or os.path.basename(transcript).startswith("rollout-")):
        return CODEX
    return CLAUDE_CODE


# --- reading a payload -----------------------------------------------------------------------

class PayloadError(ValueError):
    """The hook payload cannot be used; the message says why in one line."""


def parse_payload(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise PayloadError("empty payload on stdin")
    # Non-UTF-8 bytes are replaced, not refused: the rest of the event is still worth keeping.
    try:
        return json_object(raw.decode("utf-8", errors="replace"))
    except ValueError as exc:
        raise PayloadError(f"payload is {exc}") from None


def storable_record(record: dict[str, Any]) -> dict[str, Any]:
    """A hook's record (redacted and capped) with any lone surrogate in it replaced (U+FFFD).
    Claude Code escapes one when a tool output is cut inside an emoji's pair; kept, it would fail
    every write of the event, the spool's too. The record is checked, not the payload:
    it is small, and looking for escapes in a 10 MB payload cost more than parsing it."""
    try:
        json.dumps(record, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        from claude_mem.text.storable import storable_value  # loaded only then: a hook's import time counts

        return storable_value(record)
    return record


def require_str(payload: dict[str, Any], key: str) -> str:
    value = payload.get(key)
    if not isinstance(value, str) or not value.strip():
        raise PayloadError(f"payload has no {key}")
    return value


def optional_str(payload: dict[str, Any], key: str) -> str | None:
    value = payload.get(key)
    return value if isinstance(value, str) and value else None


# --- payloads ---------------------------------------------------------------------------------

def patch_files(command: Any) -> list[tuple[str, str]]:
    """(verb, path) of each file an `apply_patch` command names; [] for any other command."""
    if not isinstance(command, str) or not command.lstrip().startswith(("apply_patch", "applypatch")):
        return []
    return [(verb, path) for verb, path in re.findall(_PATCH_FILE, command)]


def as_edit(payload: dict[str, Any]) -> dict[str, Any] | None:
    """An apply_patch Bash call as Claude Code's Edit of its first file (old_string and
    new_string from its hunks; a Write with the content for an added file), with the whole patch
    and every file it touches beside; None for any other call."""
    tool_input = payload.get("tool_input")
    command = tool_input.get("command") if isinstance(tool_input, dict) else None
    files = patch_files(command)
    if payload.get("tool_name") != "Bash" or not files or not isinstance(command, str):
        return None
    cwd = payload.get("cwd")
    paths = [os.path.join(cwd, p) if isinstance(cwd, str) and cwd else p for _, p in files]
    old, new = _first_file_change(command)
    edit_input: dict[str, Any] = {"file_path": paths[0], "patch": command, "files": paths}
    if files[0][0] == "Add":
        return {**payload, "tool_name": "Write", "tool_input": {**edit_input, "content": new}}
    return {**payload, "tool_name": "Edit", "tool_input": {**edit_input, "old_string": old, "new_string": new}}


def _first_file_change(patch: str) -> tuple[str, str]:
    """(the lines the first file's hunks take out, the lines they put in), context in both."""
    old: list[str] = []
    new: list[str] = []
    header = re.search(_PATCH_FILE, patch)
    section = patch[header.end():].split("\n*** ")[0] if header else ""
    for line in section.splitlines():
        if line.startswith("-"):
            old.append(line[1:])
        elif line.startswith("+"):
            new.append(line[1:])
        elif line.startswith(" "):
            old.append(line[1:])
            new.append(line[1:])
    return "\n".join(old), "\n".join(new)


def exit_code(transcript_path: Any, call_id: Any) -> int | None:
    """The exit code Codex recorded for a tool call in its rollout transcript (its last
    `TRANSCRIPT_TAIL` bytes), or None when it is not there (the format drifts between versions)."""
    if not isinstance(transcript_path, str) or not isinstance(call_id, str) or not call_id:
        return None
    try:
        with open(transcript_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - TRANSCRIPT_TAIL))
            lines = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    needle = json.dumps(call_id)
    for line in reversed(lines):
        if needle not in line:
            continue
        try:
            code = _recorded_exit(json.loads(line).get("payload"), call_id)
        except (ValueError, AttributeError):
            continue
        if code is not None:
            return code
    return None


def _recorded_exit(payload: Any, call_id: str) -> int | None:
    # The command's completed item (`exit_code`) comes first, the output the model reads after it.
    if not isinstance(payload, dict):
        return None
    item = payload.get("item")
    if payload.get("type") == "item_completed" and isinstance(item, dict) and item.get("id") == call_id:
        code = item.get("exit_code")
        return code if isinstance(code, int) and not isinstance(code, bool) else None
    output = payload.get("output")
    if payload.get("type") == "function_call_output" and payload.get("call_id") == call_id and isinstance(output, str):
        match = re.search(_EXIT, output)
        return int(match.group(1)) if match else None
    return None


def codex_tool_result(payload: dict[str, Any]) -> dict[str, Any]:
    """A Codex PostToolUse as Claude Code would send it: a failed command as PostToolUseFailure
    with its exit code, so command-failure pushes find it."""
    if payload.get("tool_name") != "Bash" or payload.get("hook_event_name") != "PostToolUse":
        return payload
    code = exit_code(payload.get("transcript_path"), payload.get("tool_use_id"))
    if not code:
        return payload
    output = payload.get("tool_response")
    error = f"Exit code {code}\n{output}" if isinstance(output, str) and output else f"Exit code {code}"
    return {**payload, "hook_event_name": "PostToolUseFailure", "error": error}


# --- answers ----------------------------------------------------------------------------------

def codex_answer(output: str) -> str:
    """A hook's answer as Codex takes it: only `hookSpecificOutput` with its event and context;
    nothing at all for Claude Code's quiet `{"continue": true, "suppressOutput": true}`."""
    if not output:
        return ""
    try:
        answer = json.loads(output)
    except ValueError:
        return ""
    specific = answer.get("hookSpecificOutput") if isinstance(answer, dict) else None
    if not isinstance(specific, dict) or not isinstance(specific.get("additionalContext"), str):
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": specific.get("hookEventName"),
                                              "additionalContext": specific["additionalContext"]}},
                      ensure_ascii=False)
