"""Privacy and security, end to end: secrets of every kind and `<private>` spans planted in
prompts, tool inputs, tool outputs and the last assistant message go through the real hooks,
the worker (the fake model records everything it is sent), the semantic index, the viewer and
the MCP server. None may appear in the database, the Chroma files, the logs, the spool, what the
model received, or any answer. Injection strings are harmless; files are private; nothing
listens beyond 127.0.0.1 by default."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sqlite3
import stat
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner
from mcp import Client
from starlette.testclient import TestClient

from claude_mem import settings
from claude_mem.cli.app import cli
from claude_mem.mcp.server import build_server
from claude_mem.replay import play_subprocess
from claude_mem.viewer.app import create_app
from tests.hardening.support import FIXTURES, leftover_processes, model_env, record, rows, session_events, transcripts
from tests.planted import MARKER, leaks_in, plant, raw_leaks, stored_text
from tests.waiting import read_line

pytestmark = pytest.mark.slow

INJECTIONS = ["'; DROP TABLE observations; --", '" OR 1=1 --', "NEAR(a b", "title:*", "-x AND (y OR", "obs:1 UNION SELECT *",
              "\\x00", "%", "_", "' OR ''='", "🙂 東京 ñ"]


def test_planted_secrets_reach_nothing(tmp_path: Path, data_dir: Path, long_run: bool) -> None:
    sources = transcripts() if long_run else sorted(FIXTURES.glob("*.jsonl"))
    env = {**os.environ, **model_env(tmp_path, default={"per_event": True})}
    planted_total = 0
    sessions = []
    for n, path in enumerate(sources):
        session = f"privacy-{n}"
        planted = plant(session_events(path, session, tmp_path / f"proj-{n}", None if long_run else 40), start=n * 100_000)
        planted_total += len(planted.markers)
        results = play_subprocess(planted.events, env=env)
        assert all(r.returncode == 0 and not r.stderr for r in results)
        drained = subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", session, "--drain"], env=env,
                                 capture_output=True, text=True, timeout=600)
        assert drained.returncode == 0, drained.stderr[-2000:]
        assert leaks_in(drained.stdout + drained.stderr) == []
        sessions.append(session)

    db = data_dir / "claude-mem.db"
    text = stored_text(db)
    model_input = (tmp_path / "fake.log").read_text()
    config = settings.load()
    # What people and Claude read back: the viewer's API and the MCP tools, asked for everything.
    viewer = TestClient(create_app(config), base_url="http://127.0.0.1:37777")
    answers = [viewer.get("/api/feed?limit=500").text]
    for session in sessions:
        answers.append(viewer.get(f"/api/session/{session}").text)
    for obs in rows(db, "SELECT id FROM observations"):
        answers.append(viewer.get(f"/api/observation/{obs['id']}").text)
    answers += [viewer.get("/api/search", params={"q": q}).text for q in ("key password token", "private note", "BEGIN PRIVATE KEY")]

    async def ask_mcp() -> list[str]:
        ids = [r["id"] for r in rows(db, "SELECT id FROM observations")][:20]
        async with Client(build_server(config, cwd=str(tmp_path / "proj-0"))) as client:
            out = []
            for args in ({"query": "password secret token key"}, {"query": "private"}):
                out.append((await client.call_tool("search", args)).content[0].text)
            out.append((await client.call_tool("get_observations", {"ids": ids})).content[0].text)
            out.append((await client.call_tool("recent_sessions", {})).content[0].text)
            return out

    answers += asyncio.run(ask_mcp())
    leaks = raw_leaks(data_dir) + leaks_in(text) + leaks_in(model_input) + [x for a in answers for x in leaks_in(a)]
    survived = {int(m) for m in MARKER.findall(text)}
    record("privacy: planted secrets", events=len(rows(db, "SELECT id FROM observation_queue")),
           note=f"{planted_total} snippets x 9 kinds; 0 in db/index/logs/model/viewer/mcp" if not leaks else f"LEAKS: {leaks[:3]}")
    assert leaks == [], leaks[:10]
    assert "planted-ctx" in model_input, "the model saw the events, minus their secrets"
    assert survived, "redaction removes secrets, not the text around them"
    assert leftover_processes(data_dir, timeout=30) == []


def capture_fixture(tmp_path: Path, session: str) -> dict[str, str]:
    """The fixture session through the real hooks and a heuristic worker; returns their environment."""
    events = session_events(sorted(FIXTURES.glob("*.jsonl"))[0], session, tmp_path / "proj")
    env = {**os.environ, "CLAUDE_MEM_SYNTHESIZER": "heuristic"}
    assert all(r.returncode == 0 for r in play_subprocess(events, env=env))
    assert subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", session, "--drain"], env=env,
                          capture_output=True, timeout=300).returncode == 0
    return env


def test_injection_strings_are_harmless(tmp_path: Path, data_dir: Path) -> None:
    capture_fixture(tmp_path, "inject")
    db = data_dir / "claude-mem.db"

    def counts() -> dict[str, int]:
        return {t: rows(db, f"SELECT COUNT(*) AS n FROM {t}")[0]["n"] for t in ("observations", "user_prompts", "session_summaries")}

    before = counts()
    tried = 0
    # The CLI in this process, as the CLI fuzz runs it: a process per call (66) cost ~10 s of CPU
    # and ran the same statements.
    runner = CliRunner()
    for text in INJECTIONS:
        for argv in (["search", text, "--json"], ["search", text, "--mode", "keyword", "--json"], ["show", text],
                     ["observations", "--project", text],
                     ["observations", "--file", text, "--json"], ["forget", text]):
            result = runner.invoke(cli, argv, catch_exceptions=True)
            tried += 1
            assert result.exit_code in (0, 1, 2), (argv, result.output)
            assert result.exception is None or isinstance(result.exception, SystemExit), (argv, repr(result.exception))
            assert "Traceback" not in result.output and "syntax error" not in result.output.lower(), (argv, result.output)
    config = settings.load()

    async def ask() -> None:
        async with Client(build_server(config, cwd=str(tmp_path / "proj"))) as client:
            for text in INJECTIONS:
                for tool, args in (("search", {"query": text}), ("timeline", {"query": text}), ("timeline", {"anchor": text}),
                                   ("get_observations", {"ids": [text]}), ("recent_sessions", {"project": text})):
                    result = await client.call_tool(tool, args)
                    assert "Traceback" not in result.content[0].text

    asyncio.run(ask())
    viewer = TestClient(create_app(config), base_url="http://127.0.0.1:37777")
    for text in INJECTIONS:
        for url in ("/api/search", "/api/feed"):
            assert viewer.get(url, params={"q": text, "project": text}).status_code in (200, 400)
        assert viewer.get(f"/api/observation/{text}").status_code in (400, 404)
    assert counts() == before, "no injected statement ran"
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    record("security: injection strings", note=f"{tried} CLI + {len(INJECTIONS) * 5} MCP + viewer calls, tables intact")


def test_files_are_private_and_nothing_listens_beyond_loopback(tmp_path: Path, data_dir: Path) -> None:
    env = capture_fixture(tmp_path, "perms")
    assert subprocess.run([sys.executable, "-m", "claude_mem", "export", "-o", str(data_dir / "export.jsonl")], env=env,
                          capture_output=True, timeout=120).returncode == 0
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    loose = [f"{p.relative_to(data_dir)} {oct(stat.S_IMODE(p.stat().st_mode))}" for p in data_dir.rglob("*")
             if not p.is_symlink() and stat.S_IMODE(p.stat().st_mode) & 0o077]
    assert loose == [], "every file and folder under the data dir is private to its owner"

    # The viewer, started as a user would: bound to 127.0.0.1 only. The MCP server: stdio, no socket.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    viewer = subprocess.Popen([sys.executable, "-m", "claude_mem", "viewer", "--port", str(port), "--no-open"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    mcp_stderr = (tmp_path / "mcp.stderr").open("wb")
    mcp = subprocess.Popen([sys.executable, "-m", "claude_mem", "mcp"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=mcp_stderr)
    try:
        deadline = time.monotonic() + 60
        listening: list = []
        while time.monotonic() < deadline and not listening:
            listening = [c for c in psutil.Process(viewer.pid).net_connections("inet") if c.status == psutil.CONN_LISTEN]
            time.sleep(0.2)
        assert listening and all(c.laddr.ip == "127.0.0.1" for c in listening), listening
        # Sockets are looked for once the server has answered a search (so chromadb and the model
        # are loaded too), not after a guess at how long its start-up takes.
        answer = _mcp_exchange(mcp, [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "test"}}}],
            tmp_path / "mcp.stderr")
        assert "result" in answer, answer
        assert [c for c in psutil.Process(mcp.pid).net_connections("inet") if c.status == psutil.CONN_LISTEN] == []
        refused = subprocess.run([sys.executable, "-m", "claude_mem", "viewer", "--host", "0.0.0.0", "--port", str(port + 1),
                                  "--no-open"], env=env, capture_output=True, text=True, timeout=60)
        assert refused.returncode != 0 and "127.0.0.1" in (refused.stderr + refused.stdout)
    finally:
        for proc in (viewer, mcp):
            proc.terminate()
            proc.wait(timeout=30)
        mcp_stderr.close()
    record("security: file modes, listening sockets", note="data dir 0700, files 0600; viewer 127.0.0.1, MCP stdio only")


def _mcp_exchange(proc: subprocess.Popen, messages: list[dict], stderr: Path | None = None) -> dict:
    """Send JSON-RPC messages to a stdio MCP server; the reply to the last request."""
    assert proc.stdin is not None and proc.stdout is not None
    for message in messages:
        proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()
    want = messages[-1]["id"]
    replies: list[dict] = []
    deadline = time.monotonic() + 120
    try:
        while (reply := json.loads(read_line(proc, max(0.0, deadline - time.monotonic())))).get("id") != want:
            replies.append(reply)
        return reply
    except AssertionError as exc:
        failure = exc
    # What the shim and the service logged says where the request went.
    logs = settings.load().logs_dir
    said = "".join(path.read_text(errors="replace")[-3000:] for path in (Path(logs, "claude-mem.log"), Path(logs, "service.log"), stderr)
                   if path is not None and path.exists())
    raise AssertionError(f"the MCP server did not answer ({failure}; exit {proc.poll()}); replies {replies}\n{said}")
