"""The npm claude-mem ("the peer") observing a transcript, for bench/observer_bill.py: its own
worker (`worker-service.cjs --daemon`, private HOME, data dir and port, Chroma and telemetry
off) and its own hook commands, its observer (the Claude Agent SDK driving the Claude Code CLI
bundled with our claude-agent-sdk, as tests/fixtures/peer/make_peer_db.py runs it) answered by
the fake Messages API at `api_url`. The hooks run at the times given (bench/pace.py); returns once
its queue is empty and the model quiet."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.pace import play

HOOK_OF = {"UserPromptSubmit": "session-init", "PostToolUse": "observation", "PostToolUseFailure": "observation",
           "Stop": "summarize", "SessionEnd": "session-end"}
QUIET_S = 8.0  # no pending message and no new row for this long: the peer is done


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _count(db: Path, sql: str) -> int:
    if not db.exists():
        return -1
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
        try:
            return int(conn.execute(sql).fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return -1


def _wait(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise SystemExit(f"the peer: timed out waiting for {what}")
        time.sleep(0.5)


def run_peer(package: Path, bun: Path, timed: list[tuple[float, dict[str, Any]]], work: Path, api_url: str) -> int:
    """Play the payloads through the peer, each at its time; returns the observations it stored."""
    home, data = work / "home", work / "home" / ".claude-mem"
    data.mkdir(parents=True)
    port = _free_port()
    cli = Path(__import__("claude_agent_sdk").__file__).parent / "_bundled" / "claude"
    env = {**os.environ, "HOME": str(home), "CLAUDE_MEM_DATA_DIR": str(data), "CLAUDE_MEM_WORKER_PORT": str(port),
           "CLAUDE_MEM_CHROMA_ENABLED": "false", "CLAUDE_MEM_TELEMETRY": "false", "DO_NOT_TRACK": "1",
           "CLAUDE_CODE_PATH": str(cli), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "PATH": f"{bun.parent}{os.pathsep}{os.environ['PATH']}"}
    for key in ("CLAUDE_CONFIG_DIR", "CLAUDE_MEM_SYNTHESIZER", "CLAUDE_MEM_SEMANTIC_INDEX"):
        env.pop(key, None)
    # The peer hands its observer only the credentials in <data dir>/.env.
    (data / ".env").write_text(f"ANTHROPIC_BASE_URL={api_url}\nANTHROPIC_API_KEY=sk-bench-not-a-key\n")
    (data / "settings.json").write_text(json.dumps({
        "CLAUDE_CODE_PATH": str(cli), "CLAUDE_MEM_CLAUDE_AUTH_METHOD": "api-key", "CLAUDE_MEM_CHROMA_ENABLED": "false",
        "CLAUDE_MEM_WORKER_PORT": str(port), "CLAUDE_MEM_TELEMETRY": "false"}, indent=2))
    service = package / "plugin" / "scripts" / "worker-service.cjs"
    db = data / "claude-mem.db"
    with open(work / "worker.out", "w") as out:
        worker = subprocess.Popen([str(bun), str(service), "--daemon"], env=env, cwd=work, start_new_session=True,
                                  stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait(lambda: _count(db, "SELECT COUNT(*) FROM session_summaries_fts") >= 0, 120, "its schema")

        def run(payload: dict[str, Any]) -> None:
            hook = HOOK_OF.get(payload.get("hook_event_name", ""))
            if hook:
                subprocess.run([str(bun), str(service), "hook", "claude-code", hook], input=json.dumps(payload), env=env,
                               text=True, capture_output=True, timeout=120)

        play(timed, run)
        last = [-2, time.monotonic()]

        def settled() -> bool:
            now = _count(db, "SELECT (SELECT COUNT(*) FROM pending_messages) * 1000000 + (SELECT COUNT(*) FROM observations)")
            if now != last[0]:
                last[:] = [now, time.monotonic()]
            return now >= 0 and now < 1000000 and time.monotonic() - last[1] > QUIET_S

        _wait(settled, 1800, "its queue to drain")
        stored = _count(db, "SELECT COUNT(*) FROM observations")
        subprocess.run([str(bun), str(service), "stop"], env=env, cwd=work, capture_output=True, timeout=60)
    finally:
        try:
            os.killpg(worker.pid, signal.SIGTERM)  # its observer CLIs share its process group
        except ProcessLookupError:
            pass
        worker.wait(timeout=30)
    return stored
