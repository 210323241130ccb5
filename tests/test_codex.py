"""The Codex CLI as a second host, without the codex binary: the trust hashes against
values the real Codex 0.171 reported, `install --codex` / `uninstall --codex` on real files,
Codex payloads through the real hook processes, and what `status` and `doctor` say. The real
binary runs in tests/test_e2e_codex.py."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from claude_mem.hosts import codex_cli, payloads
from claude_mem.hosts.claude_code import InstallError
from claude_mem.replay import hook_argv
from claude_mem.store.db import connect
from tests.conftest import cli_json

BASE = ["/opt/cm/bin/claude-mem"]
USER_CONFIG = """# my Codex settings
model = "o3"  # the one I pay for

[mcp_servers.docs]
command = "docs-server"
args = ["--stdio"]

[hooks.state."/elsewhere/hooks.json:stop:0:0"]
trusted_hash = "sha256:abc"
"""
USER_HOOKS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true", "timeout": 5}]}],
                        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo hi"}]}]}}


# --- trust: the hashes the real Codex 0.171 computed (its app-server's hooks/list) -----------------

@pytest.mark.parametrize(("event", "handler", "matcher", "expected"), [
    ("PreToolUse", {"command": "/work/issue-36/.venv/bin/claude-mem pre --host codex", "timeout": 10}, None,
     "sha256:8cee9c098caee7b5c94693b1a05b14e3ea22649b89c00f88ec7acd7595163af2"),
    ("SessionEnd", {"command": "/work/issue-36/.venv/bin/claude-mem summary --host codex", "timeout": 3}, None,
     "sha256:a677f0fdd8c18acf86f1205b0f9d762c9ef2af6f3fa7f48b0c1df27299d19931"),
    ("PreToolUse", {"command": "echo hi"}, "Bash",  # a matcher, and the default timeout (600 s)
     "sha256:3bbce6504b48cc6f0d7fe24bd36273633d1bfa5879bc87f4ed7ccd16f24d1415"),
    ("Stop", {"command": "true", "timeout": 5}, None,
     "sha256:99551a51b888f6dc725f1199663b7b1e1ef9bb9b9cab0612d84e5e9218aca6f5"),
])
def test_trust_hash_is_codex_own(event: str, handler: dict[str, Any], matcher: str | None, expected: str) -> None:
    assert codex_cli.trust_hash(event, handler, matcher) == expected


# --- install / uninstall ----------------------------------------------------------------------

def codex_files() -> tuple[Path, Path]:
    hooks_path, config_path = codex_cli.paths()
    return Path(hooks_path), Path(config_path)


def test_install_then_uninstall_leaves_the_files_byte_for_byte() -> None:
    hooks, config = codex_files()
    hooks.parent.mkdir(parents=True)
    hooks.write_text(json.dumps(USER_HOOKS, indent=2) + "\n")
    config.write_text(USER_CONFIG)
    before = (hooks.read_bytes(), config.read_bytes())

    result = codex_cli.install(base=BASE)
    assert result.changed and all(f.backup for f in result.files)
    installed = json.loads(hooks.read_text())
    assert installed["hooks"]["Stop"][0] == USER_HOOKS["hooks"]["Stop"][0]  # the user's hook first, untouched
    ours = codex_cli.our_hooks(installed, str(hooks))
    assert sorted(cmd.split()[2] for _, _, cmd in ours) == ["context", "new", "pre", "save", "summary", "summary"]
    assert ("/opt/cm/bin/claude-mem hook summary --host codex" in {cmd for _, _, cmd in ours}
            and f"{hooks}:stop:1:0" in {key for key, _, _ in ours})  # after the user's Stop group
    text = config.read_text()
    lines = text.splitlines()
    kept = [lines.index(line) for line in USER_CONFIG.splitlines() if line]
    assert kept == sorted(kept)  # every line of the user's, comments included, in its order
    assert tomllib.loads(text)["mcp_servers"]["docs"] == {"command": "docs-server", "args": ["--stdio"]}
    for key, digest, _ in ours:
        assert f'[hooks.state."{key}"]\ntrusted_hash = "{digest}"' in text
    assert '[mcp_servers.claude-mem]\ncommand = "/opt/cm/bin/claude-mem"\nargs = ["mcp"]' in text
    assert codex_cli.state() == {"home": str(hooks.parent), "hooks": 6, "trusted": 6, "expected": 6,
                                          "mcp_server": True, "problem": None}

    again = codex_cli.install(base=BASE)
    assert not again.changed and not any(f.backup for f in again.files)

    removed = codex_cli.uninstall()
    assert removed.changed
    assert (hooks.read_bytes(), config.read_bytes()) == before
    assert codex_cli.state() is None
    assert not codex_cli.uninstall().changed


def test_files_install_created_are_gone_after_uninstall() -> None:
    hooks, config = codex_files()
    codex_cli.install(base=BASE)
    assert hooks.exists() and config.exists()
    assert oct(config.stat().st_mode & 0o777) == "0o600"  # Codex's config can hold provider keys
    codex_cli.uninstall()
    assert not hooks.exists() and not config.exists()


def test_a_moved_install_updates_its_commands_and_their_trust() -> None:
    hooks, config = codex_files()
    codex_cli.install(base=BASE)
    result = codex_cli.install(base=["/new/venv/bin/claude-mem"])
    assert {c.op for c in result.files[0].changes} == {"update"}
    ours = codex_cli.our_hooks(json.loads(hooks.read_text()), str(hooks))
    assert len(ours) == 6 and all(cmd.startswith("/new/venv/bin/claude-mem ") for _, _, cmd in ours)
    assert codex_cli.state()["trusted"] == 6
    assert "/opt/cm" not in config.read_text()


def test_a_users_own_keys_in_our_mcp_server_survive_a_reinstall() -> None:
    _, config = codex_files()
    codex_cli.install(base=BASE)
    config.write_text(config.read_text().replace("startup_timeout_sec = 20", "startup_timeout_sec = 20\nrequired = true"))
    codex_cli.install(base=["/new/bin/claude-mem"])
    server = tomllib.loads(config.read_text())["mcp_servers"]["claude-mem"]
    assert server["required"] is True and server["command"] == "/new/bin/claude-mem"


def test_an_edited_hook_is_no_longer_trusted() -> None:
    hooks, _ = codex_files()
    codex_cli.install(base=BASE)
    data = json.loads(hooks.read_text())
    data["hooks"]["Stop"][0]["hooks"][0]["timeout"] = 30
    hooks.write_text(json.dumps(data))
    assert codex_cli.state()["trusted"] == 5  # as Codex sees it: "modified"


def test_unreadable_config_changes_nothing() -> None:
    hooks, config = codex_files()
    config.parent.mkdir(parents=True)
    config.write_text("model = \n")
    with pytest.raises(InstallError, match="not valid TOML"):
        codex_cli.install(base=BASE)
    assert not hooks.exists() and config.read_text() == "model = \n"


def test_dry_run_writes_nothing() -> None:
    hooks, config = codex_files()
    result = codex_cli.install(dry_run=True, base=BASE)
    assert result.changed and not any(f.written for f in result.files)
    assert not hooks.exists() and not config.exists()


def test_cli_install_codex(data_dir: Path) -> None:
    env = {**os.environ}
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "install", "--codex", "--json"], capture_output=True,
                          text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["scope"] == "codex" and out["changed"] and [Path(f["path"]).name for f in out["files"]] == ["hooks.json",
                                                                                                            "config.toml"]
    config = codex_files()[1].read_text()
    assert f'env = {{CLAUDE_MEM_DATA_DIR = "{data_dir}"}}' in config  # Codex gives MCP servers a minimal environment
    bad = subprocess.run([sys.executable, "-m", "claude_mem", "install", "--codex", "--project-dir", str(data_dir.parent)],
                         capture_output=True, text=True, env=env, timeout=60)
    assert bad.returncode != 0 and "--codex" in bad.stderr


# --- payloads ---------------------------------------------------------------------------------

PATCH = ("apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: src/app.py\n@@ def main\n ctx\n-a = 1\n+a = 2\n"
         "*** Add File: notes.md\n+hi\n*** End Patch\nEOF")


def test_host_is_named_or_told_by_the_payload() -> None:
    assert payloads.host_from_args([]) == "" and payloads.host_from_args(["--host", "codex"]) == "codex"
    assert payloads.host_from_args(["--host", "vim"]) is None and payloads.host_from_args(["extra"]) is None
    codex = {"session_id": "s", "turn_id": "t", "transcript_path": "/h/sessions/2026/11/27/rollout-x.jsonl"}
    assert payloads.detect(codex) == "codex"
    assert payloads.detect({"session_id": "s", "transcript_path": "/h/.claude/projects/x.jsonl"}) == "claude-code"
    assert payloads.detect({"session_id": "s"}, "codex") == "codex"


def test_apply_patch_is_an_edit_of_its_files() -> None:
    edit = payloads.as_edit({"tool_name": "Bash", "cwd": "/repo", "tool_input": {"command": PATCH}})
    assert edit is not None and edit["tool_name"] == "Edit"
    assert edit["tool_input"]["file_path"] == "/repo/src/app.py"
    assert edit["tool_input"]["files"] == ["/repo/src/app.py", "/repo/notes.md"]
    # As Claude Code's Edit has it: what the renderer, the heuristic and the pushes read.
    assert (edit["tool_input"]["old_string"], edit["tool_input"]["new_string"]) == ("ctx\na = 1", "ctx\na = 2")
    assert payloads.as_edit({"tool_name": "Bash", "tool_input": {"command": "ls"}}) is None
    added = payloads.as_edit({"tool_name": "Bash", "cwd": "/r", "tool_input": {"command": "apply_patch '*** Begin Patch\n"
                                                                               "*** Add File: a.txt\n+x\n*** End Patch'"}})
    assert added is not None and added["tool_name"] == "Write" and added["tool_input"]["content"] == "x"


def rollout(path: Path, call_id: str, *, item_code: int | None = None, output_code: int | None = None) -> Path:
    lines = [{"type": "response_item", "payload": {"type": "function_call", "call_id": call_id, "name": "exec_command"}}]
    if item_code is not None:
        lines.append({"type": "event_msg", "payload": {"type": "item_completed", "item": {
            "type": "CommandExecution", "id": call_id, "status": "failed", "exit_code": item_code}}})
    if output_code is not None:
        lines.append({"type": "response_item", "payload": {"type": "function_call_output", "call_id": call_id,
                                                           "output": f"Wall time: 0.1 seconds\nProcess exited with code {output_code}\n"}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_exit_code_from_the_rollout(tmp_path: Path) -> None:
    assert payloads.exit_code(str(rollout(tmp_path / "a.jsonl", "call_1", item_code=3)), "call_1") == 3
    assert payloads.exit_code(str(rollout(tmp_path / "b.jsonl", "call_2", output_code=2)), "call_2") == 2
    assert payloads.exit_code(str(rollout(tmp_path / "c.jsonl", "call_3", item_code=0)), "call_3") == 0
    assert payloads.exit_code(str(rollout(tmp_path / "d.jsonl", "call_4", item_code=1)), "call_9") is None
    assert payloads.exit_code(str(tmp_path / "missing.jsonl"), "call_1") is None


def test_codex_answers_carry_only_codex_fields() -> None:
    assert payloads.codex_answer('{"continue": true, "suppressOutput": true}') == ""
    answer = json.loads(payloads.codex_answer(json.dumps({"continue": True, "suppressOutput": True, "hookSpecificOutput": {
        "hookEventName": "PreToolUse", "additionalContext": "memo", "permissionDecision": "allow"}})))
    assert answer == {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "memo"}}


# --- the hook processes -------------------------------------------------------------------------

def codex_hook(command: str, payload: dict[str, Any], flag: bool = True) -> subprocess.CompletedProcess[str]:
    argv = [*hook_argv(), command, *(["--host", "codex"] if flag else [])]
    proc = subprocess.run(argv, input=json.dumps(payload), capture_output=True, text=True, timeout=60,
                          env={**os.environ, "CLAUDE_MEM_SEMANTIC_INDEX": "0"})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "suppressOutput" not in proc.stdout
    return proc


def codex_payload(event: str, cwd: Path, transcript: Path, **fields: Any) -> dict[str, Any]:
    return {"session_id": "019a-codex", "turn_id": "019a-turn", "transcript_path": str(transcript), "cwd": str(cwd),
            "hook_event_name": event, "model": "gpt-5-codex", "permission_mode": "default", **fields}


def rows(data: Path, sql: str) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(data / "claude-mem.db")
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_codex_events_through_the_hooks(tmp_path: Path, data_dir: Path) -> None:
    transcript = rollout(tmp_path / "rollout-2026-11-27T10-00-00-019a.jsonl", "call_7", item_code=2)
    quiet = codex_hook("new", codex_payload("UserPromptSubmit", tmp_path, transcript, prompt="run the tests"))
    assert quiet.stdout == ""  # nothing to push: no answer at all, never Claude Code's quiet one
    codex_hook("save", codex_payload("PostToolUse", tmp_path, transcript, tool_name="Bash", tool_use_id="call_7",
                                     tool_input={"command": "pytest -x"}, tool_response="1 failed\n"))
    # Detected without the flag: a turn id and a rollout transcript are Codex's.
    codex_hook("pre", codex_payload("PreToolUse", tmp_path, transcript, tool_name="Bash", tool_use_id="call_8",
                                    tool_input={"command": PATCH}), flag=False)
    assert rows(data_dir, "SELECT host FROM sdk_sessions") == [("codex",)]
    queued = rows(data_dir, "SELECT tool_name, is_error, tool_input, tool_response FROM observation_queue ORDER BY id")
    assert [(name, failed) for name, failed, _, _ in queued] == [("Bash", 1), ("Edit", 0)]
    assert "Exit code 2" in queued[0][3]
    assert json.loads(queued[1][2])["file_path"] == str(tmp_path / "src" / "app.py")
    again = codex_hook("summary", codex_payload("Stop", tmp_path, transcript, last_assistant_message="Fixed it."))
    assert again.stdout == ""


def test_status_and_doctor_tell_the_codex_registration(data_dir: Path) -> None:
    data_dir.mkdir()
    connect(str(data_dir / "claude-mem.db")).close()  # doctor checks a database
    codex_cli.install(base=BASE)
    codex = cli_json("status")["codex"]
    assert codex["hooks"] == codex["trusted"] == 6 and codex["mcp_server"]
    hooks = codex_files()[0]
    data = json.loads(hooks.read_text())
    data["hooks"]["Stop"][0]["hooks"][0]["command"] += " "
    hooks.write_text(json.dumps(data))
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "doctor", "--json"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "CLAUDE_MEM_SEMANTIC_INDEX": "0"})
    found = {f["check"]: f for f in json.loads(proc.stdout)}
    assert proc.returncode == 1 and not found["codex"]["ok"] and "install --codex" in found["codex"]["detail"]
    assert "5 trusted" in found["codex"]["detail"]


def test_the_viewer_and_search_say_which_host(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from starlette.testclient import TestClient

    from claude_mem import settings
    from claude_mem.store.db import transaction
    from claude_mem.store.memories import Observation, insert_observation
    from claude_mem.store.records import ensure_session
    from claude_mem.viewer.app import create_app

    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INDEX", "0")
    config = settings.load()
    config.ensure_dirs()
    conn = connect(config.db_path)
    with transaction(conn):
        for session, host in (("codex-1", "codex"), ("claude-1", None)):
            ensure_session(conn, session, project="widgets", cwd="/w", transcript_path=None, host=host)
            insert_observation(conn, session, "widgets", Observation("discovery", f"quasar linker script seen by {session}"),
                               prompt_number=1)
    conn.close()
    with TestClient(create_app(config, poll_s=0.02, use_index=False), base_url="http://127.0.0.1:37777") as client:
        assert client.get("/api/session/codex-1").json()["session"]["host"] == "codex"
        assert client.get("/api/session/claude-1").json()["session"]["host"] == "claude-code"
        hits = client.get("/api/search", params={"q": "quasar linker"}).json()["hits"]
    assert {(h["session_id"], h["host"]) for h in hits} == {("codex-1", "codex"), ("claude-1", "claude-code")}
    out = subprocess.run([sys.executable, "-m", "claude_mem", "search", "quasar linker"], capture_output=True, text=True,
                         timeout=120, env={**os.environ}).stdout
    assert "discovery (codex)" in out and out.count("(codex)") == 1
