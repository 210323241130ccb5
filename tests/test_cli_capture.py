"""`claude-mem queue --json` and `claude-mem sessions --json`, and how the CLI reports problems."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from claude_mem import hooks
from claude_mem.cli.app import cli
from tests.cli_helpers import invoke_json
from tests.conftest import cli_json


def hook(command: str, payload: dict[str, Any]) -> None:
    assert hooks.main(command, stdin=io.BytesIO(json.dumps(payload).encode()), stdout=io.StringIO()) == 0


@pytest.fixture
def captured(tmp_path: Path, data_dir: Path) -> Path:
    """Two sessions captured through the hooks."""
    project = tmp_path / "widget"
    project.mkdir()
    for session in ("sess-a", "sess-b"):
        common = {"session_id": session, "cwd": str(project), "transcript_path": str(project / "t.jsonl")}
        hook("new", {**common, "hook_event_name": "UserPromptSubmit", "prompt": f"work on {session}"})
        hook("save", {**common, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"{session}-t1",
                      "tool_input": {"command": "make test"}, "tool_response": {"stdout": "ok", "exit": 0}})
        hook("save", {**common, "hook_event_name": "PostToolUseFailure", "tool_name": "Read", "tool_use_id": f"{session}-t2",
                      "tool_input": {"file_path": "/nope"}, "error": "File does not exist."})
        hook("summary", {**common, "hook_event_name": "Stop", "stop_hook_active": False, "last_assistant_message": "done"})
    return data_dir


def check_queue(rows: Any) -> None:
    assert isinstance(rows, list) and len(rows) == 6
    first = rows[0]
    assert first["session_id"] == "sess-a" and first["kind"] == "tool" and first["tool_name"] == "Bash"
    assert first["tool_input"] == {"command": "make test"}  # JSON columns decoded
    assert first["tool_response"] == {"stdout": "ok", "exit": 0}
    assert first["is_error"] is False and first["status"] == "pending" and first["prompt_number"] == 1
    failure = rows[1]
    assert failure["is_error"] is True and failure["tool_response"] == {"error": "File does not exist."}
    assert rows[2]["kind"] == "finalize" and rows[2]["tool_response"] == {"last_assistant_message": "done"}
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)


def check_sessions(rows: Any) -> None:
    assert isinstance(rows, list)
    assert {r["claude_session_id"] for r in rows} == {"sess-a", "sess-b"}
    for r in rows:
        assert r["project"] == "widget" and r["prompt_counter"] == 1 and r["status"] == "active"
        assert r["user_prompt"] == f"work on {r['claude_session_id']}"


def test_queue_and_sessions_json_in_process(captured: Path) -> None:
    check_queue(invoke_json("queue"))
    check_sessions(invoke_json("sessions"))
    only_b = invoke_json("queue", "--session", "sess-b")
    assert {r["session_id"] for r in only_b} == {"sess-b"} and len(only_b) == 3
    assert invoke_json("queue", "--status", "done") == []
    assert len(invoke_json("queue", "--limit", "2")) == 2
    assert invoke_json("sessions", "--project", "elsewhere") == []


def test_queue_and_sessions_json_in_a_subprocess(captured: Path) -> None:
    check_queue(cli_json("queue"))
    check_sessions(cli_json("sessions"))


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "claude_mem", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("command", ["queue", "sessions"])
def test_missing_database(command: str, data_dir: Path) -> None:
    proc = run_cli(command, "--json")
    assert proc.returncode == 1
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "no database" in lines[0] and str(data_dir) in lines[0]
    assert not (data_dir / "claude-mem.db").exists()  # looking creates nothing
    result = CliRunner().invoke(cli, [command, "--json"])
    assert result.exit_code == 1 and "no database" in result.output


@pytest.mark.parametrize(("content", "env", "expected"), [
    ({"max_attempts": "lots"}, {}, "max_attempts"),
    ({"modle": "x"}, {}, "unknown setting 'modle'"),
    ("{broken", {}, "not valid JSON"),
    ({}, {"CLAUDE_MEM_SYNTHESIZER": "magic"}, "synthesizer"),
])
def test_bad_setting_is_a_clear_error(captured: Path, content: object, env: dict[str, str], expected: str) -> None:
    (captured / "settings.json").write_text(content if isinstance(content, str) else json.dumps(content))
    for command in ("queue", "sessions"):
        proc = run_cli(command, "--json", env=env)
        assert proc.returncode != 0
        assert proc.stdout == ""
        lines = proc.stderr.splitlines()
        assert len(lines) == 1, proc.stderr
        assert "bad setting" in lines[0] and expected in lines[0]
        assert "Traceback" not in proc.stderr
