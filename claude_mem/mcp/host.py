"""The MCP server every session uses, hosted by the memory service.

Each Claude Code session runs `claude-mem mcp` (mcp/shim.py, standard library only), which
speaks to the memory service over its socket: after an `mcp` request the connection carries that
session's MCP messages, served here by the real server (mcp/server.py build_server, the `mcp`
library) for the session's folder, id and settings. The service pays the `mcp` import once for
every session, when the first one asks for its server.

What describes the server (`server/discover`, `initialize`, `tools/list`, `ping`, at every
protocol version the library serves) is asked of the same server and written to
`<data dir>/mcp-description.json`, keyed to the code that produced it (shim.fingerprint): a
session's shim answers those from the file at once, while the service may still be starting.
The service has it written after its model's warm-up when the file does not fit its code, by a
child process (`python -m claude_mem.mcp.host`), so the library stays out of the service until
a session needs it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from claude_mem.jsonfile import write_json_atomic
from claude_mem.mcp import shim
from claude_mem.settings import DATA_DIR_ENV, Config

CLIENT = {"name": "claude-mem-describe", "version": "1"}


class McpHost:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.fingerprint = shim.fingerprint()  # of the code this process started with
        self._loading: asyncio.Future[None] | None = None  # the server imported here (a session asked for it)
        self._describing: asyncio.Future[None] | None = None

    def start_loading(self, after: concurrent.futures.Future[Any] | None = None) -> None:
        """Once `after` is done (the service's model warm-up: ~1.5 s of imports on 2 cores would
        slow the first searches), see that the shims' description fits this code, writing it in a
        child process if not: the `mcp` library (~30 MiB of the service's RSS at 100k
        observations: 612-618 MiB with it loaded at start, 566-588 without, after 200 searches)
        is imported here only when a session first asks for its server (`loaded`)."""
        loop = asyncio.get_running_loop()
        go = asyncio.Event()
        if after is None:
            go.set()
        else:
            after.add_done_callback(lambda _: loop.call_soon_threadsafe(go.set))

        async def describe_apart() -> None:
            await go.wait()
            if self._loading is None and not shim.read_description(self.config.data_dir):
                await asyncio.to_thread(self._describe_apart)

        self._describing = asyncio.ensure_future(describe_apart())

    def _describe_apart(self) -> None:
        env = {**os.environ, DATA_DIR_ENV: self.config.data_dir}
        with contextlib.suppress(OSError, subprocess.SubprocessError):  # a session's request loads it here instead
            subprocess.run([sys.executable, "-m", "claude_mem.mcp.host"], env=env, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=120)

    async def loaded(self) -> None:
        if self._loading is None:
            self._loading = asyncio.ensure_future(asyncio.to_thread(self._load))
        await asyncio.shield(self._loading)

    def _load(self) -> None:
        from claude_mem.mcp.server import build_server

        server = build_server(self.config, session_id="", project_dir="", workdir=self.config.data_dir)
        try:
            answers = asyncio.run(describe(server))
        finally:
            server.memory.close()  # type: ignore[attr-defined]
        write_description(self.config.data_dir, answers, self.fingerprint)

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, hello: dict[str, Any],
                    touch: Callable[[], None]) -> None:
        """One session's MCP messages over this connection, until the session's shim goes away."""
        from claude_mem.mcp.server import build_server

        settings = given if isinstance(given := hello.get("settings"), dict) else {}
        config = Config(self.config.data_dir, {**self.config.values, **settings})
        server = build_server(config, session_id=str(hello.get("session_id") or ""),
                              project_dir=str(hello.get("project_dir") or ""), workdir=str(hello.get("cwd") or "") or None)
        try:
            await run_over(server, _lines_from(reader, touch), _Writer(writer))
        finally:
            await asyncio.to_thread(server.memory.close)  # type: ignore[attr-defined]


async def run_over(server: Any, lines: AsyncIterator[str], out: Any) -> None:
    """Serve `server` over lines in and a writer out, as the library serves stdio."""
    from mcp.server.stdio import stdio_server

    low = server._lowlevel_server  # what MCPServer.run_stdio_async drives
    async with stdio_server(stdin=lines, stdout=out) as (read, write):  # type: ignore[arg-type]
        await low.run(read, write, low.create_initialization_options())


async def _lines_from(reader: asyncio.StreamReader, touch: Callable[[], None]) -> AsyncIterator[str]:
    while True:
        try:
            line = await reader.readline()
        except (ValueError, ConnectionError):  # a line past the socket's limit, or the shim gone
            return
        if not line:
            return
        touch()  # a session using memory keeps the service up
        yield line.decode("utf-8", "replace")


class _Writer:
    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode())

    async def flush(self) -> None:
        await self.writer.drain()


class _Collect:
    """Answers to the requests `describe` sends, and a signal once all came."""

    def __init__(self, expected: int) -> None:
        self.lines: list[str] = []
        self.expected = expected
        self.done = asyncio.Event()

    async def write(self, text: str) -> None:
        self.lines.extend(line for line in text.splitlines() if line.strip())
        if len(self.lines) >= self.expected:
            self.done.set()

    async def flush(self) -> None:
        pass


async def _ask(server: Any, messages: list[dict[str, Any]], expected: int | None = None) -> list[dict[str, Any]]:
    """What `server` answers to `messages` (`expected` lines), sent as one connection's lines."""
    out = _Collect(sum("id" in m for m in messages) if expected is None else expected)

    async def lines() -> AsyncIterator[str]:
        for message in messages:
            yield json.dumps(message) + "\n"
        await asyncio.wait_for(out.done.wait(), 30)

    await run_over(server, lines(), out)
    return [json.loads(line) for line in out.lines]


def envelope(version: str) -> dict[str, Any]:
    return {"_meta": {"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientInfo": CLIENT,
                      "io.modelcontextprotocol/clientCapabilities": {}}}


async def describe(server: Any) -> dict[str, Any]:
    """The server's own answers to what describes it, at every version the library serves,
    keyed as shim.local_key keys a request."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    answers: dict[str, Any] = {}
    for version in MODERN_PROTOCOL_VERSIONS:
        asked = [(n, method) for n, method in enumerate(shim.LOCAL_METHODS)]
        listen = {"jsonrpc": "2.0", "id": "listen", "method": shim.LISTEN,
                  "params": {**envelope(version), "notifications": shim.LISTEN_FOR}}
        got = await _ask(server, [*({"jsonrpc": "2.0", "id": n, "method": method, "params": envelope(version)}
                                    for n, method in asked), listen], expected=len(asked) + 1)
        answers.update({f"{method} {version}": _result(got, n) for n, method in asked})
        # The listen request is answered by a notification first (its stream stays open).
        answers[f"{shim.LISTEN} {version}"] = next(
            (a for a in got if "method" in a and a.get("params", {}).get("_meta", {}).get(shim.SUBSCRIPTION_ID) == "listen"), None)
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        got = await _ask(server, [
            {"jsonrpc": "2.0", "id": 0, "method": "initialize",
             "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": CLIENT}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}])
        answers.update({f"initialize {version}": _result(got, 0), f"tools/list {version}": _result(got, 1),
                        f"ping {version}": _result(got, 2)})
    return {key: value for key, value in answers.items() if value is not None}


def _result(answers: list[dict[str, Any]], request_id: int) -> dict[str, Any] | None:
    return next((a["result"] for a in answers if a.get("id") == request_id and "result" in a), None)


def write_description(data_dir: str, answers: dict[str, Any], fingerprint: str) -> str:
    path = shim.description_path(data_dir)
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    write_json_atomic(path, {"fingerprint": fingerprint, "answers": answers})
    return path


def write_current_description(config: Config) -> str:
    """Describe the server in this process (`install`, `doctor --fix`): for the first session's shim."""
    from claude_mem.mcp.server import build_server

    fingerprint = shim.fingerprint()
    server = build_server(config, session_id="", project_dir="", workdir=config.data_dir)
    try:
        return write_description(config.data_dir, asyncio.run(describe(server)), fingerprint)
    finally:
        server.memory.close()  # type: ignore[attr-defined]


if __name__ == "__main__":  # the memory service's child that writes the description (McpHost.start_loading)
    from claude_mem import settings

    os.umask(0o077)
    write_current_description(settings.load(strict=False))
