"""`claude-mem mcp` as Claude Code runs it: a standard-library shim that answers what
describes the server from the description the real server wrote, and hands everything else to
the MCP server the memory service hosts. Its answers must be the library's own, byte for byte
in meaning; a service killed between two calls must cost nothing but time."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from claude_mem.mcp import shim
from claude_mem.mcp.host import envelope, write_current_description
from claude_mem.service import control
from tests.mcp_helpers import call, stdio_server
from tests.stores import Stored, build_indexed
from tests.waiting import read_line

# What the Claude Code CLI (2.1.332) sends first, as it sent it (its envelope, its listen).
CLI_META = {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "title": "Claude Code", "version": "2.1.332"},
                      "io.modelcontextprotocol/clientCapabilities": {"roots": {"listChanged": True}, "elicitation": {"form": {}}}}}
MODERN = [
    {"jsonrpc": "2.0", "id": "server-discover-probe-1", "method": "server/discover", "params": CLI_META},
    {"jsonrpc": "2.0", "id": "listen:0", "method": "subscriptions/listen",
     "params": {**CLI_META, "notifications": shim.LISTEN_FOR}},
    *({"jsonrpc": "2.0", "id": n, "method": method, "params": CLI_META}
      for n, method in enumerate(("server/discover", "prompts/list", "resources/list", "tools/list"))),
]
LEGACY = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize",
     "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    {"jsonrpc": "2.0", "id": 2, "method": "ping"},
]


def exchange(argv: list[str], env: dict[str, str], messages: list[dict[str, Any]], expected: int) -> list[dict[str, Any]]:
    """Send `messages` and read `expected` lines back, in the order they came (failing, not
    hanging, when one does not come: the library's server loads the model first on a busy machine)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    proc.stdin.flush()
    try:
        return [json.loads(read_line(proc, timeout_s=120)) for _ in range(expected)]
    finally:
        proc.kill()
        proc.wait()


def keyed(lines: list[dict[str, Any]]) -> dict[str, Any]:
    return {json.dumps(line.get("id", line.get("method"))): line for line in lines}


@pytest.mark.slow
def test_the_shim_answers_what_the_library_answers(data_dir: Path) -> None:
    config = build_indexed(data_dir).config
    write_current_description(config)
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": str(data_dir), "PYTHONPATH": os.pathsep.join(sys.path)}
    answers = shim.read_description(str(data_dir))
    for message in MODERN + LEGACY:  # every request of both openings is answered from the description
        if "id" in message:
            assert shim.local_key(message, "2025-11-25") in answers, message
    ours_cmd = [sys.executable, "-m", "claude_mem", "mcp"]
    library = [sys.executable, "-m", "claude_mem.mcp.server"]  # the real server in a process of its own
    for messages in (MODERN, LEGACY):
        expected = sum("id" in m for m in messages)
        started = time.monotonic()
        ours = keyed(exchange(ours_cmd, env, messages, expected))
        ours_s = time.monotonic() - started
        theirs = keyed(exchange(library, env, messages, expected))
        assert ours == theirs
        assert ours_s < 10, "answered from the description, not by a service that had to start"


def test_a_stale_description_is_not_used(data_dir: Path) -> None:
    data_dir.mkdir(parents=True, exist_ok=True)
    Path(shim.description_path(str(data_dir))).write_text(json.dumps({"fingerprint": "older code", "answers": {"x": 1}}))
    assert shim.read_description(str(data_dir)) == {}
    assert os.path.join("mcp", "server.py") in shim.fingerprint()


def test_only_plain_requests_are_answered_locally() -> None:
    discover = MODERN[0]
    assert shim.local_key(discover, None) == "server/discover 2026-07-28"
    assert shim.local_key({**MODERN[-1], "params": {**CLI_META, "cursor": "x"}}, None) is None  # a cursor: the library's
    assert shim.local_key({"jsonrpc": "2.0", "method": "tools/list", "params": {}}, None) is None  # a notification
    assert shim.local_key({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": envelope("2026-07-28")}, None) is None
    other_listen = {**MODERN[1], "params": {**CLI_META, "notifications": {"toolsListChanged": True}}}
    assert shim.local_key(other_listen, None) is None


Answers = list[tuple[bool, str]]  # (is_error, text) of each call


def in_a_session(tmp_path: Path, scenario: Callable[[Client, Stored], Awaitable[Answers]]) -> tuple[Stored, Answers]:
    """`scenario` run by a session's MCP client over `claude-mem mcp`, on an indexed store whose
    description fits this code; the service stopped after."""
    stored: Stored = build_indexed(tmp_path / "data")
    write_current_description(stored.config)
    cwd = tmp_path / "alpha"
    cwd.mkdir()

    async def main() -> Answers:
        async with Client(stdio_server(Path(stored.config.data_dir), cwd)) as client:
            return await scenario(client, stored)

    try:
        return stored, asyncio.run(main())
    finally:
        control.stop_service(stored.config.data_dir)


@pytest.mark.slow
def test_a_killed_service_costs_nothing_but_time(tmp_path: Path) -> None:
    async def scenario(client: Client, stored: Stored) -> Answers:
        data = stored.config.data_dir
        first = await call(client, "search", query="login crash", limit=3)
        pid = control.state(data).pid
        assert pid
        os.kill(pid, signal.SIGKILL)  # between two calls
        deadline = time.monotonic() + 30
        while control.state(data).running and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        second = await call(client, "search", query="login crash", limit=3)
        third = await call(client, "get_observations", ids=[stored.obs["login"]])
        return [first, second, third]

    stored, [(e1, first), (e2, second), (e3, record)] = in_a_session(tmp_path, scenario)
    assert not e1 and not e2 and not e3, (first, second, record)
    assert f"obs:{stored.obs['login']} | " in first and first.splitlines()[:2] == second.splitlines()[:2]
    assert record.startswith(f"## obs:{stored.obs['login']} · bugfix")


@pytest.mark.slow
def test_a_call_in_flight_when_the_service_dies_is_answered_by_the_next(tmp_path: Path) -> None:
    """The service hangs (SIGSTOP) with a tool call sent to it, then is killed: the shim sends
    the call once more to the service it starts, and the log says so."""
    async def scenario(client: Client, stored: Stored) -> Answers:
        first = await call(client, "search", query="login crash", limit=3)  # the session is hosted by the service now
        pid = control.state(stored.config.data_dir).pid
        assert pid
        os.kill(pid, signal.SIGSTOP)
        second = asyncio.ensure_future(call(client, "search", query="login crash", limit=3))
        await asyncio.sleep(1.0)  # sent, and waiting in the hung service's socket
        assert not second.done()
        os.kill(pid, signal.SIGKILL)
        return [first, await asyncio.wait_for(second, 120)]

    stored, [(e1, first), (e2, second)] = in_a_session(tmp_path, scenario)
    assert not e1 and not e2, (first, second)
    assert f"obs:{stored.obs['login']} | " in first and first.splitlines()[:2] == second.splitlines()[:2]
    log = (Path(stored.config.data_dir) / "logs" / "claude-mem.log").read_text()
    assert "went away while answering: 1 request(s) sent again to the next one, 0 failed" in log, log
    assert log.count("service: listening on") == 2, log


@pytest.mark.slow
def test_a_fresh_service_has_the_description_written_and_serves_tools(tmp_path: Path) -> None:
    """No description fits this code: the service has one written after its warm-up (by a child
    process, keeping the `mcp` library out of the service until a session asks), and the first
    tool call loads the server in the service."""
    from claude_mem.service import client

    stored: Stored = build_indexed(tmp_path / "data")
    data = stored.config.data_dir
    assert shim.read_description(data) == {}
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "service"], env={**env, "CLAUDE_MEM_DATA_DIR": data},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client.call(data, "ping", timeout_s=60, wait=True, start=False)
        deadline = time.monotonic() + 90
        while not shim.read_description(data) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "tools/list 2025-11-25" in shim.read_description(data)
        cwd = tmp_path / "alpha"
        cwd.mkdir()

        async def main() -> tuple[bool, str]:
            async with Client(stdio_server(Path(data), cwd)) as mcp:
                return await call(mcp, "search", query="login crash", limit=3)

        error, text = asyncio.run(main())
        assert not error and f"obs:{stored.obs['login']} | " in text, text
    finally:
        control.stop_service(data)
        proc.wait(30)


@pytest.mark.slow
def test_nothing_captured_yet_over_stdio(tmp_path: Path) -> None:
    """No database yet: no service is started (it would create one); the server in a process of
    its own answers, as before."""
    data = tmp_path / "empty"
    cwd = tmp_path / "alpha"
    cwd.mkdir()

    async def main() -> tuple[bool, str]:
        async with Client(stdio_server(data, cwd)) as client:
            return await call(client, "search", query="anything")

    is_error, text = asyncio.run(main())
    assert not is_error and text == "No memories yet: nothing has been captured on this machine."
    assert not (data / "claude-mem.db").exists() and not control.state(str(data)).running
