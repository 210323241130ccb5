"""The memory tools are there at a session's first turn, with the real Claude Code CLI
bundled with claude-agent-sdk and its defaults: it does not wait for MCP servers, probes them with
`server/discover` and falls back to a slow legacy handshake when the answer is late. `claude-mem
install` registers `claude-mem mcp` (mcp/shim.py); sessions whose first step is a memory search
(through ToolSearch, as a new user's sessions run) must get the earlier session's observation,
and the CLI's own MCP log must show neither a probe time-out nor the legacy fallback."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.claude_cli import CLAUDE_MEM, TIMEOUT, remember, run_claude
from tests.fakes.messages_api import FakeMessagesAPI, tool_use

pytestmark = pytest.mark.slow

TOOL = "mcp__claude-mem__search"
CONNECT_MS = 1000  # the bar for the first connect, on a quiet machine
QUIET_FLOOR_MS = 30.0  # a stdlib Python start answering one line there (bench/mcp_start.py: 20-30 ms)
CONNECTED = re.compile(r"Successfully connected \(transport: stdio\) in (\d+)\s*ms")


def mcp_log(home: Path) -> list[str]:
    """Every message the CLI logged about our server, over all sessions so far."""
    found = sorted(home.glob(".cache/claude-cli-nodejs/*/mcp-logs-claude-mem/*"))
    messages = []
    for path in found:
        for line in path.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                entry = line
            messages.append(json.dumps(entry) if not isinstance(entry, str) else entry)
    if not messages:  # some versions write one JSON array per file
        for path in found:
            try:
                messages += [json.dumps(e) for e in json.loads(path.read_text())]
            except ValueError:
                pass
    return messages


def floor_ms() -> float:
    """A stdlib Python process reading one line and answering it, start to answer."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import json, sys; json.loads(sys.stdin.readline()); print('{}', flush=True)"],
                   input='{"id": 0}\n', capture_output=True, text=True, timeout=60, check=True)
    return (time.perf_counter() - started) * 1000


def test_first_step_memory_search_under_the_real_cli(sandbox):  # noqa: F811
    obs_id = remember(sandbox["data"])
    proc = subprocess.run([str(CLAUDE_MEM), "install"], env=sandbox["env"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    sandbox["settings"].write_text(json.dumps({**json.loads(sandbox["settings"].read_text()),
                                               "permissions": {"allow": [TOOL]}}))
    for name in ("MCP_CONNECTION_NONBLOCKING", "MCP_CONNECT_TIMEOUT_MS", "MCP_TIMEOUT", "ENABLE_TOOL_SEARCH"):
        sandbox["env"].pop(name, None)  # the CLI's defaults, as a new user has them

    answers, connects, floors = [], [], []
    for n in range(3):
        floors.append(floor_ms())
        steps = [tool_use("ToolSearch", {"query": "select:" + TOOL, "max_results": 5}),
                 tool_use(TOOL, {"query": "how do retries back off?", "limit": 5})]
        with FakeMessagesAPI(steps, final_text="Retries back off exponentially.") as api:
            run_claude(sandbox, api, f"Session {n}: how do our HTTP retries back off?")
            issued = api.issued_tool_use_ids
            last = api.agent_requests()[-1]
        results = {block["tool_use_id"]: json.dumps(block["content"]) for block in last.tool_results()}
        answers.append(results.get(issued[-1], ""))
        log = mcp_log(Path(sandbox["env"]["HOME"]))
        connects.append([int(m) for line in log for m in CONNECTED.findall(line)])
        print(f"session {n}: connects {connects[-1]}")
    log = mcp_log(Path(sandbox["env"]["HOME"]))
    assert log, "the CLI logged nothing about claude-mem's MCP server"
    said = [json.loads(line).get("debug", line) if line.startswith("{") else line for line in log]
    assert not [line for line in said if "timed out" in line or "legacy" in line.lower()], "\n".join(said)
    times = connects[-1]
    assert len(times) == 3, log
    # Under load (8 engineers on 2 cores) every process start is slower: the bar scales with a
    # bare Python start measured beside each session.
    allowed = CONNECT_MS * max(1.0, statistics.median(floors) / QUIET_FLOOR_MS)
    print(f"connect times (ms): {times}; floor {floors} ms; allowed {allowed:.0f} ms")
    assert statistics.median(times) <= allowed, (times, floors)
    for text in answers:
        assert f"obs:{obs_id} | " in text and "Retries use exponential backoff capped at 30 s" in text, text
