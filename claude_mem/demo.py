"""`claude-mem demo`: the whole loop on a fresh machine, no account needed.

A small scripted session (written for this project: a bug report, a file read, a failing test
run, an edit, a passing run, a follow-up change) is played through the real hook commands, as
Claude Code would run them, into a throw-away data dir. The worker then processes the queue —
with the model when a login works, else with the heuristic synthesizer — and the demo prints
what was stored and the digest the next session would start with.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from typing import Any

from claude_mem import replay
from claude_mem.store.queue import QueueStatus
from claude_mem.store.reads import ref

CALC_BUGGY = "def add(a, b):\n    return a - b\n"
CALC_FIXED = "def add(a, b):\n    return a + b\n"
# What `python -m pytest -q test_calc.py` prints against CALC_BUGGY (pytest 8).
PYTEST_FAILED = """F  [100%]
=================================== FAILURES ===================================
___________________________________ test_add ___________________________________

    def test_add():
>       assert add(2, 3) == 5
E       assert -1 == 5
E        +  where -1 = add(2, 3)

test_calc.py:5: AssertionError
=========================== short test summary info ============================
FAILED test_calc.py::test_add - assert -1 == 5
1 failed in 0.02s"""
DOCSTRING_ADDED = 'def add(a, b):\n    """Return a + b."""\n'


def edit_response(path: str, original: str, old: str, new: str) -> dict[str, Any]:
    """An Edit's tool_response as Claude Code hands it to PostToolUse hooks: the whole original
    file comes with it (the heuristic synthesizer finds the edited function there)."""
    return {"filePath": path, "oldString": old, "newString": new, "originalFile": original, "userModified": False,
            "replaceAll": False}


def scripted_session(project_dir: str, session_id: str) -> list[tuple[str, dict[str, Any]]]:
    """(hook command, payload) pairs of a short, realistic session."""
    calc = os.path.join(project_dir, "calc.py")
    base = {"session_id": session_id, "cwd": project_dir, "transcript_path": os.path.join(project_dir, ".transcript.jsonl")}
    fail_out = PYTEST_FAILED

    def tool(n: int, name: str, tool_input: dict, response: Any, *, failed: bool = False) -> tuple[str, dict]:
        payload = {**base, "hook_event_name": "PostToolUseFailure" if failed else "PostToolUse", "tool_name": name,
                   "tool_input": tool_input, "tool_use_id": f"toolu_demo_{n:02d}"}
        if failed:
            payload["error"] = response
        else:
            payload["tool_response"] = response
        return "save", payload

    return [
        ("context", {**base, "hook_event_name": "SessionStart", "source": "startup"}),
        ("new", {**base, "hook_event_name": "UserPromptSubmit", "prompt": "test_add fails in calc.py, please fix it"}),
        tool(1, "Read", {"file_path": calc}, {"type": "text", "file": {"filePath": calc, "content": CALC_BUGGY, "numLines": 2}}),
        tool(2, "Bash", {"command": "python -m pytest -q test_calc.py", "description": "Run the tests"},
             f"Exit code 1\n{fail_out}", failed=True),
        tool(3, "Edit", {"file_path": calc, "old_string": "return a - b", "new_string": "return a + b"},
             edit_response(calc, CALC_BUGGY, "return a - b", "return a + b")),
        tool(4, "Bash", {"command": "python -m pytest -q test_calc.py", "description": "Run the tests"},
             {"stdout": ".  [100%]\n1 passed in 0.01s", "stderr": "", "interrupted": False}),
        ("summary", {**base, "hook_event_name": "Stop", "stop_hook_active": False,
                     "last_assistant_message": "Fixed add() in calc.py: it subtracted instead of adding. test_add passes now."}),
        ("new", {**base, "hook_event_name": "UserPromptSubmit", "prompt": "add a docstring to add()"}),
        tool(5, "Edit", {"file_path": calc, "old_string": "def add(a, b):\n", "new_string": DOCSTRING_ADDED},
             edit_response(calc, CALC_FIXED, "def add(a, b):\n", DOCSTRING_ADDED)),
        ("summary", {**base, "hook_event_name": "Stop", "stop_hook_active": False,
                     "last_assistant_message": "Added a docstring to add()."}),
    ]


def play(payload: dict[str, Any], env: dict[str, str]) -> str:
    """One hook, as Claude Code runs it (replay.run_event); its stdout. A hook always exits 0, so
    anything it wrote on stderr is the failure."""
    result = replay.run_event(replay.HookEvent(payload), env=env)
    if result.returncode != 0 or result.stderr.strip():
        raise RuntimeError(f"hook {result.command} failed: {result.stderr.strip()}")
    return result.stdout


def run_demo(data_dir: str, project_dir: str, *, synthesizer: str = "auto", echo: Callable[[str], None] = print) -> dict[str, Any]:
    os.makedirs(project_dir, exist_ok=True)
    with open(os.path.join(project_dir, "calc.py"), "w") as fh:
        fh.write(CALC_FIXED)
    with open(os.path.join(project_dir, "test_calc.py"), "w") as fh:
        fh.write("from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update(CLAUDE_MEM_DATA_DIR=data_dir, CLAUDE_MEM_WORKER_AUTOSTART="0", CLAUDE_MEM_SYNTHESIZER=synthesizer)
    session_id = f"demo-{uuid.uuid4()}"
    steps = scripted_session(project_dir, session_id)
    echo(f"1. Playing a scripted Claude Code session ({len(steps)} hook events) through the hook commands...")
    for _command, payload in steps:
        play(payload, env)

    echo("2. Running the worker on the queue (the model if a login works, else the heuristic synthesizer)...")
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", session_id, "--drain"],
                          env=env, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"worker failed: {proc.stderr.strip()[-500:]}")

    def cli_json(*args: str) -> Any:
        out = subprocess.run([sys.executable, "-m", "claude_mem", *args, "--json"], env=env, capture_output=True,
                             text=True, timeout=60)
        return json.loads(out.stdout)

    queue = cli_json("queue", "--session", session_id)
    observations = cli_json("observations", "--session", session_id)
    summaries = cli_json("summaries", "--session", session_id)
    echo(f"\n3. Stored: {len(observations)} observations, {len(summaries)} summaries "
         f"({sum(r['status'] == QueueStatus.DONE for r in queue)}/{len(queue)} queued events done)")
    outage = next((s.get("observer_error") for s in cli_json("sessions") if s.get("claude_session_id") == session_id), None)
    if outage and any(o["source"] == "heuristic" for o in observations):
        echo(f"   (no model could be used: {outage}.\n    The heuristic synthesizer wrote these from the events alone; with a Claude login,"
             f" `claude-mem reprocess --session ID` redoes them with the model.)")
    for o in observations:
        echo(f"   [{o['type']}] {o['title']}  ({o['source']})")
        for fact in o["facts"][:3]:
            echo(f"       - {fact}")
    for s in summaries:
        echo(f"   summary #{s['prompt_number']}: {s['request']}  ->  {s['completed'] or s['notes']}")

    query = "why did test_add fail"
    found = cli_json("search", query, "--limit", "3")
    echo(f"\n4. Searching memory for {query!r} ({found['mode']} search, as the MCP tool and the viewer do):")
    for hit in found["hits"]:
        echo(f"   {ref(hit['kind'], hit['id'])}  {hit['title']}")

    echo("\n5. What the next session in this project starts with (SessionStart hook output):\n")
    nxt = {"session_id": f"demo-next-{uuid.uuid4()}", "cwd": project_dir, "hook_event_name": "SessionStart", "source": "startup"}
    digest = play(nxt, env)
    context = json.loads(digest)["hookSpecificOutput"]["additionalContext"] if digest.strip() else ""
    echo(context)
    return {"session_id": session_id, "queue": queue, "observations": observations, "summaries": summaries, "digest": context,
            "search": found}
