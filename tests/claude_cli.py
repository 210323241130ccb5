"""The real Claude Code CLI (bundled with claude-agent-sdk) in a sandbox of temp folders, run
against the fake Messages API: what the end-to-end tests share."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

from claude_mem import settings
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, insert_observation
from claude_mem.store.records import ensure_session
from tests.fakes.messages_api import FakeMessagesAPI

# Located without importing the SDK (slow to import, and nothing else from it is needed).
_SDK = importlib.util.find_spec("claude_agent_sdk")
CLAUDE = Path(_SDK.submodule_search_locations[0] if _SDK and _SDK.submodule_search_locations else "/nonexistent") / "_bundled" / "claude"
BIN = Path(sys.executable).parent
CLAUDE_MEM = BIN / "claude-mem"
TIMEOUT = 90  # seconds per subprocess: generous for 2 busy cores; a normal run takes ~2 s
PROJECT = "e2e-proj"


def allow_tools(settings_path: Path) -> None:
    # As root the CLI refuses bypassPermissions; an allow-list in the same settings.json works.
    settings = json.loads(settings_path.read_text()) if settings_path.exists() else {}
    settings["permissions"] = {"allow": ["Write", "Edit", "Read", "Bash"]}
    settings_path.write_text(json.dumps(settings, indent=2))


def run_claude(sandbox: dict, api: FakeMessagesAPI, prompt: str, *extra: str) -> dict:
    env = {**sandbox["env"], "ANTHROPIC_BASE_URL": api.url}
    proc = subprocess.run([str(CLAUDE), "-p", prompt, "--output-format", "json", *extra], cwd=sandbox["project"], env=env,
                          capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    asked = [(r.method, r.path, len(r.tools), r.assistant_turns()) for r in api.requests]
    assert proc.returncode == 0, f"claude exited {proc.returncode}\nstdout: {proc.stdout[-2000:]}\nstderr: {proc.stderr[-2000:]}\n{asked}"
    result = json.loads(proc.stdout)
    assert result["is_error"] is False, result
    assert api.script_errors == []
    return result


def mem(sandbox: dict, *args: str) -> object:
    proc = subprocess.run([str(CLAUDE_MEM), *args, "--json"], env=sandbox["env"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def system_messages(api: FakeMessagesAPI) -> list[str]:
    """The `role: "system"` entries of the main agent's messages: where the CLI puts hook context."""
    return [json.dumps(m.get("content")) if not isinstance(m.get("content"), str) else m["content"]
            for r in api.agent_requests() for m in r.messages if m.get("role") == "system"]


def remember(data_dir: Path) -> int:
    """An earlier session's observation, stored and indexed as a worker would leave it."""
    from claude_mem.index.semantic_index import Index  # chromadb: only the tests that index pay for it

    config = settings.load()
    config.ensure_dirs()
    conn = connect(os.path.join(data_dir, "claude-mem.db"))
    try:
        with transaction(conn):
            ensure_session(conn, "earlier-session", project=PROJECT, cwd=None, transcript_path=None)
            obs_id = insert_observation(conn, "earlier-session", PROJECT, Observation(
                type="decision", title="Retries use exponential backoff capped at 30 s", narrative="Chosen after the 529 storms.",
                facts=["the HTTP client retries 5 times"], files_modified=["src/http_client.py"]), prompt_number=1)
        Index(config).index_missing(conn)
    finally:
        conn.close()
    assert obs_id is not None
    return obs_id
