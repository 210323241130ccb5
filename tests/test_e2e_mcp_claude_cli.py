"""The MCP server end to end with the real Claude Code CLI (bundled with claude-agent-sdk):
`claude-mem install` registers `claude-mem mcp`, `claude -p` runs against the fake Messages API,
the scripted model calls the search tool, and the tool result the CLI sends back to the model
must hold the stored observation. No network beyond 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.claude_cli import CLAUDE_MEM, PROJECT, TIMEOUT, mem, remember, run_claude
from tests.fakes.messages_api import FakeMessagesAPI, tool_use
from tests.plugin_helpers import ROOT, adopt_environment

pytestmark = pytest.mark.slow

TOOL = "mcp__claude-mem__search"


def test_claude_calls_the_installed_search_tool_and_sees_the_memory(sandbox):  # noqa: F811
    obs_id = remember(sandbox["data"])
    proc = subprocess.run([str(CLAUDE_MEM), "install"], env=sandbox["env"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    registered = json.loads((Path(sandbox["env"]["CLAUDE_CONFIG_DIR"]) / ".claude.json").read_text())["mcpServers"]["claude-mem"]
    assert registered["args"][-1] == "mcp" and os.path.isabs(registered["command"])
    sandbox["settings"].write_text(json.dumps({**json.loads(sandbox["settings"].read_text()),
                                               "permissions": {"allow": [TOOL]}}))
    # MCP tools are otherwise deferred behind a ToolSearch step.
    sandbox["env"]["ENABLE_TOOL_SEARCH"] = "false"

    steps = [tool_use(TOOL, {"query": "how do retries back off?", "limit": 5})]
    with FakeMessagesAPI(steps, final_text="Retries back off exponentially.") as api:
        result = run_claude(sandbox, api, "How do our HTTP retries back off?")
        [issued] = api.issued_tool_use_ids
        first, last = api.agent_requests()[0], api.agent_requests()[-1]

    offered = {t.get("name"): t for t in first.tools}
    assert TOOL in offered and "search -> timeline -> get_observations" in " ".join(offered[TOOL]["description"].split())
    assert {f"mcp__claude-mem__{name}" for name in ("timeline", "get_observations", "recent_sessions")} <= set(offered)
    [answer] = [block for block in last.tool_results() if block["tool_use_id"] == issued]
    text = json.dumps(answer["content"])
    assert not answer.get("is_error"), text
    assert f"obs:{obs_id} | " in text and "Retries use exponential backoff capped at 30 s" in text
    assert "src/http_client.py" in text and f"in project {PROJECT}" in text
    # The prompt being answered (filed by the hook before the model ran) is its own best match;
    # Claude Code tells the server its session, and the server leaves that prompt out.
    assert "How do our HTTP retries back off?" not in text
    assert result["result"] == "Retries back off exponentially."
    # Recalling is not itself remembered: the hooks skip claude-mem's own tools.
    queue = mem(sandbox, "queue")
    assert any(r["kind"] == "finalize" for r in queue), "the hooks ran for this session"
    # The only tool called was claude-mem's own search: nothing is queued.
    assert [r for r in queue if r["kind"] == "tool"] == []


def test_the_plugin_folder_serves_the_same_tools(sandbox):  # noqa: F811
    """`claude --plugin-dir` of this checkout with no install: the plugin's MCP server runs
    `claude-mem mcp` from the environment in its data folder (adopted here from the test venv), and
    Claude Code names its tools mcp__plugin_<plugin>_<server>__<tool>."""
    obs_id = remember(sandbox["data"])
    tool = "mcp__plugin_memory_claude-mem__search"
    user_config = Path(sandbox["env"]["CLAUDE_CONFIG_DIR"]) / ".claude.json"
    assert not user_config.exists() or "mcpServers" not in json.loads(user_config.read_text())  # nothing installed
    sandbox["settings"].write_text(json.dumps({"permissions": {"allow": [tool]}}))
    sandbox["env"]["ENABLE_TOOL_SEARCH"] = "false"
    adopt_environment(Path(sandbox["env"]["CLAUDE_CONFIG_DIR"]) / "plugins" / "data" / "memory-inline")

    with FakeMessagesAPI([tool_use(tool, {"query": "how do retries back off?"})], final_text="Exponentially.") as api:
        result = run_claude(sandbox, api, "How do our HTTP retries back off?", "--plugin-dir", str(ROOT))
        [issued] = api.issued_tool_use_ids
        first, last = api.agent_requests()[0], api.agent_requests()[-1]

    offered = {t.get("name") for t in first.tools}
    assert {f"mcp__plugin_memory_claude-mem__{name}" for name in ("search", "timeline", "get_observations",
                                                                  "recent_sessions")} <= offered
    [answer] = [block for block in last.tool_results() if block["tool_use_id"] == issued]
    text = json.dumps(answer["content"])
    assert not answer.get("is_error") and f"obs:{obs_id} | " in text, text
    assert result["result"] == "Exponentially."
    # The plugin's hooks ran, and skipped the plugin's own tool (skip_tools: mcp__plugin_memory_claude-mem__*).
    queue = mem(sandbox, "queue")
    assert [r["kind"] for r in queue] == ["finalize"]


def test_the_plugins_remember_command_has_claude_call_remember(sandbox):  # noqa: F811
    """`/memory:remember TEXT` in a session with the plugin (Claude Code names a plugin's
    commands after the plugin): it expands the plugin's command (commands/remember.md) into the
    prompt, whose instructions name the tool; the model's call of `remember` stores the memory, as
    the agent's word, which the next search finds."""
    tool = "mcp__plugin_memory_claude-mem__remember"
    # No permission rule names the tool: the command's `allowed-tools` lets this call run (in -p
    # mode a tool not allowed is denied).
    assert not sandbox["settings"].exists() or tool not in sandbox["settings"].read_text()
    sandbox["env"]["ENABLE_TOOL_SEARCH"] = "false"
    sandbox["env"]["CLAUDE_MEM_SEMANTIC_INDEX"] = "0"
    adopt_environment(Path(sandbox["env"]["CLAUDE_CONFIG_DIR"]) / "plugins" / "data" / "memory-inline")
    said = "we deploy with just release (ocelot-2291)"

    steps = [tool_use(tool, {"text": "We deploy with `just release` (ocelot-2291).", "type": "decision"})]
    with FakeMessagesAPI(steps, final_text="Remembered.") as api:
        run_claude(sandbox, api, f"/memory:remember {said}", "--plugin-dir", str(ROOT))
        [issued] = api.issued_tool_use_ids
        first, last = api.agent_requests()[0], api.agent_requests()[-1]

    prompt = first.all_text()
    assert said in prompt and "Call the claude-mem MCP tool `remember`" in prompt
    offered = {t.get("name"): t for t in first.tools}
    assert tool in offered and "remember" in offered[tool]["description"].lower()
    [answer] = [block for block in last.tool_results() if block["tool_use_id"] == issued]
    text = json.dumps(answer["content"])
    assert not answer.get("is_error") and "Remembered as obs:" in text, text
    found = mem(sandbox, "search", "ocelot", "--mode", "keyword")
    [hit] = [h for h in found["hits"] if h["kind"] == "observation"]  # beside the prompt the hook recorded
    shown = mem(sandbox, "show", f"obs:{hit['id']}")
    assert (shown["source"], shown["type"], shown["session_id"]) == ("agent", "decision", f"stated:{PROJECT}")
