"""The shape of bench/decisions.py's written sessions: tool calls as Claude Code reports them to
the hooks, turns, sessions, topics, and the hook payloads they make.

A tool call is written with paths relative to its repository (`§path`); `payloads` makes them absolute
under the root the session was recorded in: this machine's folder for the repository, or a
Windows temporary folder of another machine (`C:\\Users\\dev\\AppData\\Local\\Temp\\tmp…\\<repo>`),
as sessions recorded elsewhere and replayed here carry (the hooks' cwd is this machine's folder
either way, so the project is the same). `{root}` in a command or an output stands for the root.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Tool:
    name: str
    input: dict[str, Any]
    response: Any
    failed: bool = False


def R(path: str, content: str) -> Tool:  # noqa: N802 - the corpus reads as a script
    """A Read of `path` (relative to the repository) that returned `content`."""
    return Tool("Read", {"file_path": f"§{path}"},
                {"type": "text", "file": {"filePath": f"§{path}", "content": content, "numLines": content.count("\n") + 1,
                                          "startLine": 1, "totalLines": content.count("\n") + 1}})


def B(command: str, output: str, *, fail: bool = False, description: str = "") -> Tool:  # noqa: N802
    """A Bash command; a failing one is a PostToolUseFailure whose error is its output."""
    given = {"command": command, **({"description": description} if description else {})}
    if fail:
        return Tool("Bash", given, f"Exit code 1\n{output}", failed=True)
    return Tool("Bash", given, {"stdout": output, "stderr": "", "interrupted": False, "isImage": False})


def E(path: str, old: str, new: str) -> Tool:  # noqa: N802
    """An Edit of `path` replacing `old` with `new`."""
    return Tool("Edit", {"file_path": f"§{path}", "old_string": old, "new_string": new},
                {"filePath": f"§{path}", "oldString": old, "newString": new, "originalFile": old, "structuredPatch": [],
                 "userModified": False, "replaceAll": False})


def W(path: str, content: str) -> Tool:  # noqa: N802
    """A Write of a new file."""
    return Tool("Write", {"file_path": f"§{path}", "content": content},
                {"type": "create", "filePath": f"§{path}", "content": content, "structuredPatch": []})


def G(pattern: str, hits: list[str]) -> Tool:  # noqa: N802
    """A Grep in content mode; each hit `path:line: text`, the path relative."""
    return Tool("Grep", {"pattern": pattern, "output_mode": "content", "-n": True},
                {"mode": "content", "numFiles": len({h.split(":", 1)[0] for h in hits}), "filenames": [],
                 "content": "\n".join(f"§{h}" for h in hits), "numLines": len(hits)})


@dataclass
class Turn:
    prompt: str
    tools: list[Tool] = field(default_factory=list)
    reply: str = ""


@dataclass
class Session:
    name: str  # unique in the corpus: the session id is made from it
    turns: list[Turn]
    foreign: bool = False  # recorded on another machine (Windows paths in its tool calls)


@dataclass
class Variant:
    """A second statement on a topic's subject: a newer decision replacing it, or a rival claim."""

    statement: str
    marker: str
    note: str  # what the user asks done with it, after stating it
    tools: list[Tool] = field(default_factory=list)


@dataclass
class Elsewhere:
    """The rule stated for the topic's own area, and a task in another one."""

    rule: str
    task: str
    marker: str


@dataclass
class Topic:
    key: str
    project: str
    area: str  # the component the decision is about
    symptom: str  # the investigation's first prompt
    look: list[Tool]
    explain: str  # Claude's reply closing the investigation's first turn
    decision: str  # the statement (in the prompt, or in Claude's reply when by == "reply")
    ask: str  # what the user asks in the same prompt
    fix: list[Tool]
    done: str  # Claude's closing reply
    task: str  # a later task that goes right only with the decision
    marker: str  # the words of the decision a channel must carry
    by: str = "prompt"
    newer: Variant | None = None
    rival: Variant | None = None
    elsewhere: Elsewhere | None = None
    unstated: bool = False  # one of the topics whose decision the "never stated" variant leaves out

    def decision_turn(self, statement: str | None) -> Turn:
        """The investigation's second turn: the decision stated (or not, with None), and the fix."""
        if self.by == "reply":
            said = f"Agreed, that should be the rule for everyone. {self.ask}"
            reply = self.done + (f"\n\n{statement}" if statement else "")
            return Turn(said if statement else self.ask, self.fix, reply)
        lead = LEADS[int(hashlib.sha256(self.key.encode()).hexdigest(), 16) % len(LEADS)]
        prompt = " ".join(p for p in (lead, statement, self.ask) if p)
        return Turn(prompt, self.fix, self.done)


# How users go on after an explanation, so that the statements do not all sit behind one phrase.
LEADS = ("Thanks, that explains it.", "Ok, makes sense.", "Right, I talked to the team about this.", "Good find.", "", "I see.")


def _root(repo: str, foreign: bool, local: str) -> str:
    if not foreign:
        return local
    tag = hashlib.sha256(repo.encode()).hexdigest()[:8]
    return f"C:\\Users\\dev\\AppData\\Local\\Temp\\tmp{tag}\\{repo}"


def _placed(value: Any, root: str, foreign: bool) -> Any:
    """`§path` and `{root}` made absolute under the session's root."""
    if isinstance(value, str):
        text = value.replace("{root}", root)
        if foreign:
            text = _PATH.sub(lambda m: root + "\\" + m.group(1).replace("/", "\\"), text)
            return text.replace(root + "/", root + "\\")
        return _PATH.sub(lambda m: root + "/" + m.group(1), text)
    if isinstance(value, list):
        return [_placed(v, root, foreign) for v in value]
    if isinstance(value, dict):
        return {k: _placed(v, root, foreign) for k, v in value.items()}
    return value


_PATH = re.compile(r"§([^\s:\"'()]+)")


def payloads(session: Session, cwd: str, *, session_id: str) -> list[dict[str, Any]]:
    """The hook payloads Claude Code sends for the session, in order."""
    repo = cwd.rstrip("/").rsplit("/", 1)[-1]
    root = _root(repo, session.foreign, cwd)
    base = {"session_id": session_id, "transcript_path": f"{cwd}/.transcripts/{session_id}.jsonl", "cwd": cwd,
            "permission_mode": "default"}
    out: list[dict[str, Any]] = [{**base, "hook_event_name": "SessionStart", "source": "startup"}]
    for n, turn in enumerate(session.turns, 1):
        prompt_id = f"{session_id}-p{n}"
        out.append({**base, "hook_event_name": "UserPromptSubmit", "prompt": turn.prompt, "prompt_id": prompt_id})
        for k, tool in enumerate(turn.tools, 1):
            use = {**base, "prompt_id": prompt_id, "tool_name": tool.name, "tool_input": _placed(tool.input, root, session.foreign),
                   "tool_use_id": f"toolu_{hashlib.sha256(f'{session_id}:{n}:{k}'.encode()).hexdigest()[:20]}"}
            if tool.failed:
                out.append({**use, "hook_event_name": "PostToolUseFailure", "error": _placed(tool.response, root, session.foreign)})
            else:
                out.append({**use, "hook_event_name": "PostToolUse", "tool_response": _placed(tool.response, root, session.foreign)})
        out.append({**base, "hook_event_name": "Stop", "stop_hook_active": False, "prompt_id": prompt_id,
                    "last_assistant_message": turn.reply or "Done."})
    out.append({**base, "hook_event_name": "SessionEnd", "reason": "exit"})
    return out
