"""Installed from inside Claude Code, end to end: the real Claude Code CLI (bundled with
claude-agent-sdk) adds a clone of this repository as a marketplace and installs its plugin in a
fresh HOME; the first session runs while the plugin builds its own environment (a real
`python -m venv` and `pip install` of the clone, from the package registry); the second session's
prompt push and MCP search find what the first one left; uninstalling keeps the memory.
The model is the fake Messages API on 127.0.0.1, for the sessions and the observer alike."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from tests.claude_cli import CLAUDE, CLAUDE_MEM, system_messages
from tests.fakes.messages_api import AgentScript, FakeMessagesAPI, bash, tool_use, write
from tests.observer_replies import observer_reply
from tests.plugin_helpers import builds, clone, wait_for_builds
from tests.waiting import waited

pytestmark = pytest.mark.slow

PLUGIN = "memory@claude-mem"
SEARCH = "mcp__plugin_memory_claude-mem__search"
MARKER = "zebrafish-calibration-7731"
TIMEOUT = 120


@pytest.fixture
def user(data_dir: Path):
    root = Path(tempfile.mkdtemp(prefix="cm-", dir="/tmp"))  # short: the CLI puts a unix socket under TMPDIR
    for name in ("home", "cfg", "t", "proj"):
        (root / name).mkdir()
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(root / "home"), "CLAUDE_CONFIG_DIR": str(root / "cfg"),
        "TMPDIR": str(root / "t"), "LANG": "C.UTF-8", "CLAUDE_MEM_DATA_DIR": str(data_dir),
        "CLAUDE_MEM_WORKER_IDLE_S": "3", "CLAUDE_MEM_SERVICE_IDLE_S": "30", "CLAUDE_MEM_CONTEXT_CHARS": "200",
        "ANTHROPIC_API_KEY": "sk-ant-fake", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CODE_MAX_RETRIES": "1",
        "ENABLE_TOOL_SEARCH": "false",
    }
    yield {"root": root, "env": env, "cfg": root / "cfg", "project": root / "proj", "data": data_dir}
    plugin_data = root / "cfg" / "plugins" / "data" / "memory-claude-mem"
    if (plugin_data / "build.log").exists():
        wait_for_builds(plugin_data, 1, timeout=600)  # a build under way ends before its folders go
    shutil.rmtree(root, ignore_errors=True)


def claude(user: dict, *args: str, api: FakeMessagesAPI | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
    env = {**user["env"], **extra, **({"ANTHROPIC_BASE_URL": api.url} if api else {})}
    proc = subprocess.run([str(CLAUDE), *args], cwd=user["project"], env=env, capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, f"claude {' '.join(args)}: {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return proc


def session(user: dict, api: FakeMessagesAPI, prompt: str, **extra: str) -> dict:
    result = json.loads(claude(user, "-p", prompt, "--output-format", "json", api=api, **extra).stdout)
    assert result["is_error"] is False and api.script_errors == [], result
    return result


def mem(user: dict, *args: str) -> object:
    """Read the memory with the test venv's claude-mem (the plugin's environment is its own)."""
    proc = subprocess.run([str(CLAUDE_MEM), *args, "--json"], env=user["env"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def wait_for(what: str, probe, timeout: float = 240):  # noqa: ANN001
    return waited(what, probe, timeout, step=1)


def test_installed_from_the_marketplace_it_builds_its_own_python_and_remembers(user):
    repo = clone(user["root"] / "claude-mem")
    claude(user, "plugin", "validate", "--strict", str(repo))
    claude(user, "plugin", "marketplace", "add", str(repo))
    claude(user, "plugin", "install", PLUGIN)
    settings = user["cfg"] / "settings.json"
    assert json.loads(settings.read_text())["enabledPlugins"] == {PLUGIN: True}
    settings.write_text(json.dumps({**json.loads(settings.read_text()),
                                    "permissions": {"allow": ["Write", "Read", "Bash", SEARCH]}}))
    plugin_data = user["cfg"] / "plugins" / "data" / "memory-claude-mem"

    notes = user["project"] / "notes.txt"
    # printf, not echo: an echo is a command that says nothing new (worker/render.py), a line of
    # its batch, and the stand-in observer writes an observation per headline only.
    first_steps = [write(str(notes), f"{MARKER}\n"), bash(f"printf %s {MARKER}", "Print the calibration marker")]
    second_steps = [tool_use(SEARCH, {"query": "zebrafish calibration marker", "limit": 5})]
    script = {"steps": first_steps}
    with FakeMessagesAPI(lambda r: AgentScript(script["steps"], final="Done.", side=observer_reply)(r)) as api:
        # First session: no environment yet. Its hooks run from the plugin's source meanwhile.
        first = session(user, api, "Write the calibration marker to notes.txt and print it")
        issued = api.issued_tool_use_ids
        rows = mem(user, "queue", "--session", first["session_id"])
        assert sorted(r["tool_use_id"] for r in rows if r["kind"] == "tool") == sorted(issued) and len(issued) == 2
        assert [r["kind"] for r in rows if r["kind"] != "tool"] == ["finalize"]
        assert [s["user_prompt"] for s in mem(user, "sessions")] == ["Write the calibration marker to notes.txt and print it"]

        log = wait_for_builds(plugin_data, 1, timeout=600)
        assert builds(log) == 1 and "ready after" in log, log[-3000:]
        env_python = plugin_data / "env" / "bin" / "python"
        assert str(repo) in log and env_python.exists()
        # The build started the first session's worker; the observer (the fake model) distils it.
        observations = wait_for("observations of the first session", lambda: [
            o for o in mem(user, "observations", "--session", first["session_id"]) if MARKER in json.dumps(o)])
        # Done once the memory service has indexed what they gave (they stay processing meanwhile).
        wait_for("the first session's queue done", lambda: all(
            r["status"] == "done" for r in mem(user, "queue", "--session", first["session_id"])))

        # Second session: the environment serves the hooks and the MCP server.
        script["steps"] = second_steps
        second = session(user, api, "What was the zebrafish calibration marker?", MCP_CONNECTION_NONBLOCKING="0",
                         MCP_CONNECT_TIMEOUT_MS="60000", MCP_TIMEOUT="60000")
        system = system_messages(api)
        agent = [r for r in api.agent_requests() if any(t.get("name") == SEARCH for t in r.tools)]
        [issued_search] = [i for i in api.issued_tool_use_ids if i not in issued]
        answers = [b for r in agent for b in r.tool_results() if b["tool_use_id"] == issued_search]
    assert second["result"] == "Done."
    pushed = [t for t in system if "claude-mem: memories from earlier sessions" in t and MARKER in t]
    assert pushed, system
    assert answers and not answers[-1].get("is_error") and MARKER in json.dumps(answers[-1]["content"])
    assert f"obs:{observations[0]['id']}" in json.dumps(answers[-1]["content"])
    assert [s["claude_session_id"] for s in mem(user, "sessions")][:1] == [second["session_id"]]

    # Uninstalled: its hooks and environment go, the memory stays.
    wait_for("workers to finish", lambda: mem(user, "workers") == [], timeout=120)
    from claude_mem.service.control import stop_service

    stop_service(str(user["data"]))
    before = mem(user, "observations")
    claude(user, "plugin", "uninstall", PLUGIN)
    assert not plugin_data.exists()
    assert PLUGIN not in json.loads(settings.read_text()).get("enabledPlugins", {})
    assert mem(user, "observations") == before and os.path.exists(user["data"] / "claude-mem.db")
