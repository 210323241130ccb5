"""Issue 36's bars under the real Codex CLI (npm, pinned: tests/codex_helpers.py) against a fake
Responses API on 127.0.0.1: after `claude-mem install --codex`, a plain `codex exec` (no hook-trust
bypass) is captured; the next Codex session's first request to the model carries memory from
the first, as a developer message; a Claude Code session's memory in the same repository
reaches a Codex session and the reverse; `uninstall --codex` leaves config.toml and hooks.json
byte for byte as they were. The Claude Code side is its hook commands run as Claude Code runs
them (a process each, Claude Code's payloads)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from claude_mem.replay import run_hook
from tests.claude_cli import (
    allow_tools,
    run_claude,
)
from tests.codex_helpers import claude_mem, codex_binary, provider_config, run_codex
from tests.fakes.messages_api import FakeMessagesAPI, bash
from tests.fakes.responses_api import FakeResponsesAPI, developer_text, has_tool_output, say, shell
from tests.git_layout import git_checkout
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

FAILING = "sh build.sh quasar"  # fails with exit 3, in both Codex sessions
USER_HOOKS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 5}]}]}}


def latest_prompt(request: dict[str, Any]) -> str:
    users = [i for i in request.get("input", []) if isinstance(i, dict) and i.get("role") == "user"]
    content = users[-1].get("content") if users else []
    return " ".join(c.get("text", "") for c in content if isinstance(c, dict))


def script(request: dict[str, Any], n: int) -> list[dict[str, Any]]:
    if has_tool_output(request):
        return [say("done")]
    if "quasar" in latest_prompt(request):
        return [shell(FAILING)]
    return [say("nothing to run")]


def db_rows(data: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(data / "claude-mem.db")
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def claude_code_hook(command: str, event: str, cwd: Path, session: str, env: dict[str, str], **fields: Any) -> str:
    payload = {"session_id": session, "transcript_path": "/dev/null", "cwd": str(cwd), "hook_event_name": event, **fields}
    proc = run_hook(command, payload, env=env)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc.stdout


def observed(data: Path, session: str) -> bool:
    return bool(db_rows(data, "SELECT 1 FROM observations WHERE session_id = ?", session)) and not db_rows(
        data, "SELECT 1 FROM observation_queue WHERE session_id = ? AND status != 'done'", session)


def test_codex_and_claude_code_share_one_memory(tmp_path: Path, data_dir: Path) -> None:
    codex = codex_binary()
    repo = git_checkout(tmp_path / "widgets", "git@github.com:acme/widgets.git")
    (repo / "src").mkdir()
    for folder in (repo, repo / "src"):  # the two Codex sessions run in either
        (folder / "build.sh").write_text("echo 'quasar: missing linker script'\nexit 3\n")
    home = Path(os.environ["CODEX_HOME"])  # the data_dir fixture's
    home.mkdir()
    env = {**os.environ, "CLAUDE_MEM_WORKER_AUTOSTART": "1", "CLAUDE_MEM_SYNTHESIZER": "heuristic",
           "CLAUDE_MEM_SEMANTIC_INDEX": "0", "CLAUDE_MEM_WORKER_IDLE_S": "2"}

    with FakeResponsesAPI(script) as api:
        (home / "config.toml").write_text(provider_config(api.url))
        (home / "hooks.json").write_text(json.dumps(USER_HOOKS, indent=2) + "\n")
        before = {name: (home / name).read_bytes() for name in ("config.toml", "hooks.json")}
        out = claude_mem("install", "--codex", env=env)
        assert "hooks.state" in out and "mcp_servers.claude-mem" in out

        # A Claude Code session in the repository's root.
        claude = "claude-session-1"
        claude_code_hook("new", "UserPromptSubmit", repo, claude, env, prompt="fix the nebula parser in src/nebula.py")
        claude_code_hook("save", "PostToolUse", repo, claude, env, tool_name="Edit", tool_use_id="toolu_1",
                         tool_input={"file_path": str(repo / "src" / "nebula.py"), "old_string": "a", "new_string": "b"},
                         tool_response={"filePath": str(repo / "src" / "nebula.py")})
        claude_code_hook("summary", "Stop", repo, claude, env, last_assistant_message="The nebula parser is fixed.")
        claude_code_hook("summary", "SessionEnd", repo, claude, env, reason="exit")
        assert wait_until(lambda: observed(data_dir, claude), 60)

        # Codex, in a folder of the same repository: captured without the bypass flag.
        run_codex(codex, home, repo / "src", "run the quasar build", env)
        codex_sessions = db_rows(data_dir, "SELECT claude_session_id, project FROM sdk_sessions WHERE host = 'codex'")
        assert len(codex_sessions) == 1
        first, project = codex_sessions[0]
        assert project == db_rows(data_dir, "SELECT project FROM sdk_sessions WHERE claude_session_id = ?", claude)[0][0]
        assert db_rows(data_dir, "SELECT prompt_text FROM user_prompts WHERE session_id = ?", first) == [("run the quasar build",)]
        tools = db_rows(data_dir, "SELECT tool_name, tool_input, is_error FROM observation_queue"
                                  " WHERE session_id = ? AND kind = 'tool'", first)
        assert [(name, json.loads(raw)["command"], failed) for name, raw, failed in tools] == [("Bash", FAILING, 1)]
        assert wait_until(lambda: observed(data_dir, first), 60)

        # The next Codex session: memory from the first Codex session and from Claude Code's,
        # then the command's earlier failure before it runs again.
        seen = len(api.requests)
        run_codex(codex, home, repo, "where are we with the quasar build and the nebula parser?", env)
        requests = api.requests[seen:]
        context = developer_text(requests[0])
        memory = context[context.find("# claude-mem"):]
        assert "github.com/acme/widgets" in memory and "quasar: missing linker script" in memory, context[-3000:]
        assert "Edited nebula.py" in memory  # Claude Code's session
        after_call = [r for r in requests if has_tool_output(r)]
        assert after_call and "`sh build.sh` failed in an earlier session" in developer_text(after_call[0])

        # The reverse: Claude Code's next session is told what Codex did.
        digest = json.loads(claude_code_hook("context", "SessionStart", repo, "claude-session-2", env, source="startup"))
        assert "quasar" in digest["hookSpecificOutput"]["additionalContext"]

        hosts = {row["claude_session_id"]: row["host"] for row in json.loads(claude_mem("sessions", "--json", env=env))}
        assert hosts[claude] == "claude-code" and hosts[first] == "codex"
        found = json.loads(claude_mem("search", "linker script nebula", "--json", env=env))["hits"]
        assert {(h["session_id"], h["host"]) for h in found} >= {(first, "codex"), (claude, "claude-code")}

        claude_mem("uninstall", "--codex", env=env)
        assert {name: (home / name).read_bytes() for name in before} == before


def hooks_list(codex: Path, home: Path, cwd: Path) -> list[dict[str, Any]]:
    """What `codex app-server` reports of the hooks it would run in `cwd`: each one's trust."""
    proc = subprocess.Popen([str(codex), "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=cwd, env={**os.environ, "CODEX_HOME": str(home)})
    try:
        assert proc.stdin is not None and proc.stdout is not None
        for message in ({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "test", "version": "1"}}},
                        {"method": "initialized"}, {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}}):
            proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        for line in proc.stdout:  # the server answers in order; a hang is ended by the finally below
            answer = json.loads(line)
            if answer.get("id") == 2:
                return answer["result"]["data"][0]["hooks"]
        raise AssertionError("codex app-server ended without answering hooks/list")
    finally:
        proc.kill()
        proc.wait()


def test_codex_itself_trusts_what_install_wrote(tmp_path: Path) -> None:
    codex = codex_binary()
    home = Path(os.environ["CODEX_HOME"])
    home.mkdir()
    (home / "hooks.json").write_text(json.dumps(USER_HOOKS, indent=2) + "\n")
    claude_mem("install", "--codex", env={**os.environ})
    listed = hooks_list(codex, home, tmp_path)
    ours = {h["key"]: h["trustStatus"] for h in listed if "claude-mem" in h["command"]}
    assert len(ours) == 6 and set(ours.values()) == {"trusted"}, ours
    assert [h["trustStatus"] for h in listed if h["command"] == "true"] == ["untrusted"]  # the user's own: not ours to trust


def test_the_real_claude_code_and_codex_share_memory(sandbox: dict[str, Any]) -> None:  # noqa: F811
    """Both agents for real: the bundled Claude Code CLI (fake Messages API) and codex (fake
    Responses API), each installed with its own `install`, one repository, one data folder."""
    codex = codex_binary()
    env = {**sandbox["env"], "CODEX_HOME": str(sandbox["project"].parent / "codex-home"), "CLAUDE_MEM_WORKER_AUTOSTART": "1",
           "CLAUDE_MEM_SYNTHESIZER": "heuristic", "CLAUDE_MEM_SEMANTIC_INDEX": "0", "CLAUDE_MEM_WORKER_IDLE_S": "2"}
    sandbox["env"] = env
    home = Path(env["CODEX_HOME"])
    home.mkdir()
    data = sandbox["data"]
    for args in (["install"], ["install", "--codex"]):
        claude_mem(*args, env=env)
    allow_tools(sandbox["settings"])

    with FakeMessagesAPI([bash("echo 'nebula parser: fixed the off-by-one'", "Fix it")], final_text="Fixed.") as claude_api:
        first_claude = run_claude(sandbox, claude_api, "fix the nebula parser")["session_id"]
    assert wait_until(lambda: observed(data, first_claude), 60)

    with FakeResponsesAPI(script) as api:
        (home / "config.toml").write_text(provider_config(api.url) + (home / "config.toml").read_text())
        run_codex(codex, home, sandbox["project"], "run the quasar build", env)
        context = developer_text(api.requests[0])
        assert "nebula parser: fixed the off-by-one" in context[context.find("# claude-mem"):]  # Claude Code's, in Codex
    first_codex = db_rows(data, "SELECT claude_session_id FROM sdk_sessions WHERE host = 'codex'")[0][0]
    assert wait_until(lambda: observed(data, first_codex), 60)

    with FakeMessagesAPI([], final_text="Noted.") as claude_api:
        run_claude(sandbox, claude_api, "and the quasar build?")
        assert "quasar" in claude_api.agent_requests()[0].system_text()  # Codex's, in Claude Code
    assert sorted(host for (host,) in db_rows(data, "SELECT host FROM sdk_sessions")) == ["claude-code", "claude-code", "codex"]


def test_an_apply_patch_edit_is_captured_as_the_edit_it_is(tmp_path: Path, data_dir: Path) -> None:
    codex = codex_binary()
    repo = git_checkout(tmp_path / "widgets", "git@github.com:acme/widgets.git")
    (repo / "app.py").write_text("def main():\n    return 1\n")
    home = Path(os.environ["CODEX_HOME"])
    home.mkdir()
    patch = ("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: app.py\n@@ def main():\n-    return 1\n+    return 2\n"
             "*** End Patch\nEOF")

    def edit_script(request: dict[str, Any], n: int) -> list[dict[str, Any]]:
        return [say("patched")] if has_tool_output(request) else [shell(patch)]

    with FakeResponsesAPI(edit_script) as api:
        (home / "config.toml").write_text(provider_config(api.url))
        claude_mem("install", "--codex", env={**os.environ})
        run_codex(codex, home, repo, "make main return 2", {**os.environ, "CLAUDE_MEM_SEMANTIC_INDEX": "0"})
    assert (repo / "app.py").read_text() == "def main():\n    return 2\n"  # Codex really applied it
    queued = db_rows(data_dir, "SELECT tool_name, tool_input FROM observation_queue WHERE kind = 'tool'")
    assert [name for name, _ in queued] == ["Edit"]
    edit = json.loads(queued[0][1])
    assert (edit["file_path"], edit["old_string"], edit["new_string"]) == (str(repo / "app.py"), "    return 1", "    return 2")
