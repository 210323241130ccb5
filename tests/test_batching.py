"""Fewer, fuller requests (worker/batching.py), through real processes: hooks fill the queue,
`claude-mem worker` drives the real claude-agent-sdk against the fake Claude CLI. A batch that
is not full waits for its turn's end, whose summary rides with its events; it goes without it
once `batch_wait_s` is over; events that say nothing new never make a request of their own; a
batch never crosses into the next turn without the turn's end."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from claude_mem.replay import run_hook
from tests.cli_helpers import invoke_json
from tests.hardening.support import our_processes, wait_until
from tests.worker_helpers import fake_env, run_worker, user_messages

SESSION = "sess-batch"


class Session:
    """Hook payloads of one session in a project folder, played through the real hook commands."""

    def __init__(self, project: Path, session_id: str = SESSION) -> None:
        project.mkdir(parents=True, exist_ok=True)
        self.project = project
        self.session_id = session_id
        self.tools = 0

    def base(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "cwd": str(self.project), "transcript_path": str(self.project / "t.jsonl")}

    def play(self, command: str, payload: dict[str, Any]) -> None:
        proc = run_hook(command, {**self.base(), **payload})
        assert proc.returncode == 0 and not proc.stderr, proc.stderr

    def prompt(self, text: str) -> None:
        self.play("new", {"hook_event_name": "UserPromptSubmit", "prompt": text})

    def tool(self, name: str, tool_input: dict[str, Any], response: Any) -> None:
        self.tools += 1
        self.play("save", {"hook_event_name": "PostToolUse", "tool_name": name, "tool_input": tool_input,
                           "tool_response": response, "tool_use_id": f"toolu_{self.session_id}_{self.tools:02d}"})

    def bash(self, command: str, stdout: str) -> None:
        self.tool("Bash", {"command": command}, {"stdout": stdout, "stderr": "", "interrupted": False})

    def read(self, name: str, content: str) -> None:
        path = str(self.project / name)
        self.tool("Read", {"file_path": path}, {"type": "text", "file": {"filePath": path, "content": content}})

    def stop(self, message: str = "Done.") -> None:
        self.play("summary", {"hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": message})

    def end(self) -> None:
        self.play("summary", {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})


@contextlib.contextmanager
def worker(env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """A worker as a hook starts one (not draining): it exits once the session has ended and its work is done."""
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", SESSION, "--idle", "120"],
                            env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
def test_a_batch_waits_for_its_turns_end_and_the_summary_rides_with_its_events(tmp_path: Path, data_dir: Path) -> None:
    session = Session(tmp_path / "proj")
    with worker(fake_env(tmp_path, [], CLAUDE_MEM_BATCH_WAIT_S="600")) as proc:
        session.prompt("why does test_add fail?")
        session.read("calc.py", "def add(a, b):\n    return a - b\n")
        session.bash("python -m pytest -q", "1 failed: assert add(2, 3) == 5")
        log = data_dir / "logs" / "claude-mem.log"
        # "1 event(s)" when the worker looked between the two hooks (it says so once a batch): that
        # the two went together, with the summary, is what the request below shows.
        assert wait_until(lambda: log.exists() and "event(s) wait up to" in log.read_text(), 60), \
            "the worker holds the events back while their turn goes on"
        assert user_messages(tmp_path) == []
        session.stop("add() subtracts: the test is right.")
        session.end()
        output = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, output
    [message] = user_messages(tmp_path)  # before: one request for the events, one more for the summary
    assert "Read calc.py" in message and "pytest" in message
    assert "The turn for request #1 has ended. Claude's final message: add() subtracts" in message
    assert [o["prompt_number"] for o in invoke_json("observations")] == [1, 1]
    assert [(s["prompt_number"], s["source"]) for s in invoke_json("summaries")] == [(1, "model")]


@pytest.mark.slow
def test_a_batch_that_waited_long_enough_goes_without_its_turns_end(tmp_path: Path, data_dir: Path) -> None:
    session = Session(tmp_path / "proj")
    with worker(fake_env(tmp_path, [], CLAUDE_MEM_BATCH_WAIT_S="0.5")) as proc:
        session.prompt("run the tests")
        session.bash("python -m pytest -q", "3 passed")
        assert wait_until(lambda: [r["status"] for r in invoke_json("queue")] == ["done"], 60), "sent without the turn's end"
        session.stop()
        session.end()
        output = proc.communicate(timeout=120)[0]
    assert proc.returncode == 0, output
    first, second = user_messages(tmp_path)
    assert "pytest" in first and "has ended" not in first
    assert "The turn for request #1 has ended" in second and "pytest" not in second
    assert [(s["prompt_number"], s["source"]) for s in invoke_json("summaries")] == [(1, "model")]


@pytest.mark.slow
def test_events_that_say_nothing_new_never_make_a_request_of_their_own(tmp_path: Path, data_dir: Path) -> None:
    session = Session(tmp_path / "proj")
    env = fake_env(tmp_path, [])
    session.prompt("where are we?")
    session.bash("cd src && ls -la", "calc.py\ntest_calc.py")
    session.bash("git status", "On branch main\nnothing to commit, working tree clean")
    assert run_worker(SESSION, env).returncode == 0
    assert user_messages(tmp_path) == [], "a turn of only those, not ended: settled without the model"
    assert {(r["status"], r["processed_by"]) for r in invoke_json("queue")} == {("done", "folded")}
    session.read("calc.py", "def add(a, b):\n    return a - b\n")
    session.bash("pwd", str(session.project))
    session.read("calc.py", "def add(a, b):\n    return a - b\n")
    session.stop()
    assert run_worker(SESSION, env).returncode == 0
    [message] = user_messages(tmp_path)
    assert message.count("] Read calc.py") == 1, "the second read of the same file, as it was, is a line"
    assert "(also, nothing found/notable: Bash `pwd`; Read calc.py (again, unchanged))" in message
    assert "The turn for request #1 has ended" in message
    assert [o["title"].split(" |")[0] for o in invoke_json("observations")] == ["Read calc.py"]


@pytest.mark.slow
def test_a_batch_crosses_into_the_next_turn_only_at_a_turns_end(tmp_path: Path, data_dir: Path) -> None:
    session = Session(tmp_path / "proj")
    session.prompt("fix the parser")
    session.bash("python -m pytest -q tests/test_parse.py", "1 failed")
    session.read("parse.py", "def parse(text):\n    return text\n")
    # Interrupted: Claude Code sends no Stop. The next prompt follows.
    session.prompt("actually, fix the renderer first")
    session.read("render.py", "def render(x):\n    return x\n")
    session.stop()
    session.prompt("and document it")
    session.tool("Edit", {"file_path": str(session.project / "render.py"), "old_string": "def render(x):",
                          "new_string": 'def render(x):\n    """Render x."""'}, {"filePath": str(session.project / "render.py")})
    session.stop()
    assert run_worker(SESSION, fake_env(tmp_path, [])).returncode == 0
    first, second = user_messages(tmp_path)
    assert "test_parse.py" in first and "has ended" not in first and "render.py" not in first
    assert ("User's request #2" in second and "The turn for request #2 has ended" in second
            and "User's request #3" in second and "The turn for request #3 has ended" in second)
    placed = {o["title"].split(" |")[0]: o["prompt_number"] for o in invoke_json("observations")}
    assert placed == {"Bash `python -m pytest -q tests/test_parse.py`": 1, "Read parse.py": 1, "Read render.py": 2,
                      "Edit render.py": 3}
    assert [(s["prompt_number"], s["source"]) for s in invoke_json("summaries")] == [(2, "model"), (3, "model")]
    assert {r["processed_by"] for r in invoke_json("queue")} == {"model"}


@pytest.mark.slow
def test_a_batch_does_not_wait_for_more_while_another_session_waits_for_the_workers_slot(tmp_path: Path,
                                                                                           data_dir: Path) -> None:
    """max_workers=1: a worker holding a batch back for its turn's end sends it once another
    session's events wait for its slot, then yields the slot."""
    env = fake_env(tmp_path, [], CLAUDE_MEM_BATCH_WAIT_S="600", CLAUDE_MEM_MAX_WORKERS="1", CLAUDE_MEM_WORKER_AUTOSTART="1",
                   CLAUDE_MEM_WORKER_IDLE_S="60")
    a, b = Session(tmp_path / "proj-a"), Session(tmp_path / "proj-b", "sess-other")
    os.environ.update(env)  # the hooks and the workers they start all see the cap
    try:
        a.prompt("why does test_add fail?")
        a.bash("python -m pytest -q", "1 failed")
        log = data_dir / "logs" / "claude-mem.log"
        assert wait_until(lambda: log.exists() and "1 event(s) wait up to" in log.read_text(), 60)
        b.prompt("rename the module")
        b.bash("git mv calc.py arith.py", "")
        b.stop()
        assert wait_until(lambda: {r["status"] for r in invoke_json("queue")} == {"done"}, 120), invoke_json("queue")
    finally:
        for key in env:
            os.environ.pop(key, None)
        for proc in our_processes(data_dir):
            with contextlib.suppress(psutil.Error):
                proc.terminate()
        wait_until(lambda: not our_processes(data_dir), 60, step=0.2)
    first = user_messages(tmp_path)[0]
    assert "pytest" in first and "has ended" not in first, "session a's batch went without its turn's end"
    assert any("git mv calc.py arith.py" in m for m in user_messages(tmp_path)[1:])
