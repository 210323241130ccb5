"""A sleeping observer with the real Claude Code CLI (bundled in the claude-agent-sdk wheel)
against the fake Messages API on 127.0.0.1: three sessions, each a burst of events, then idle
with their workers alive (the observer CLIs end), then a second burst that the model answers in
the same conversations: the next request of each carries its earlier turns."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from claude_mem.demo import scripted_session
from claude_mem.replay import run_hook
from tests.cli_helpers import invoke_json
from tests.fakes.messages_api import FakeMessagesAPI
from tests.hardening.support import our_processes
from tests.observer_replies import observer_reply
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

SESSIONS = ("sess-0", "sess-1", "sess-2")


def project_of(request: object) -> str:
    found = re.search(r'software project "([^"]+)"', request.system_text())  # type: ignore[attr-defined]
    return found.group(1) if found else ""


def all_done() -> bool:
    rows = invoke_json("queue")
    return bool(rows) and all(r["status"] == "done" for r in rows)


def test_idle_observers_sleep_and_the_next_burst_resumes_their_conversations(tmp_path: Path, data_dir: Path) -> None:
    bursts = {}
    for n, session_id in enumerate(SESSIONS):
        steps = scripted_session(str(tmp_path / f"proj-{n}"), session_id)
        cut = next(i for i, (command, _) in enumerate(steps) if command == "summary") + 1
        bursts[session_id] = (steps[:cut], steps[cut:])
    home = tmp_path / "h"
    for d in ("home", "config"):
        (home / d).mkdir(parents=True)
    short_tmp = Path(f"/tmp/cm-sleep-{os.getpid()}")  # the CLI puts a unix socket there: keep it short
    short_tmp.mkdir(exist_ok=True)
    with FakeMessagesAPI(observer_reply) as api:
        env = {**os.environ, "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-not-a-real-key",
               "HOME": str(home / "home"), "CLAUDE_CONFIG_DIR": str(home / "config"), "TMPDIR": str(short_tmp),
               "CLAUDE_MEM_SYNTHESIZER": "model", "CLAUDE_MEM_SEMANTIC_INDEX": "0", "CLAUDE_MEM_OBSERVER_IDLE_S": "3"}
        env.pop("CLAUDE_MEM_CLI_PATH", None)
        for first, _ in bursts.values():
            for command, payload in first:
                assert run_hook(command, payload).returncode == 0
        workers = [subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", sid, "--idle", "300"],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for sid in SESSIONS]
        pids = {w.pid for w in workers}
        try:
            assert wait_until(all_done, 180), "the first bursts are stored"
            assert len({project_of(r) for r in api.messages_requests()}) == 3
            clis = lambda: [p for p in our_processes(data_dir) if p.pid not in pids]  # noqa: E731
            assert wait_until(lambda: not clis(), 60), f"no observer CLI while idle: {clis()}"
            assert all(w.poll() is None for w in workers), "the workers stay"
            before = len(api.messages_requests())

            for _, second in bursts.values():
                for command, payload in second:
                    assert run_hook(command, payload).returncode == 0
            assert wait_until(lambda: all_done() and len(invoke_json("summaries")) == 6, 180), "the second bursts are stored"
            later = api.messages_requests()[before:]
        finally:
            for w in workers:
                w.send_signal(signal.SIGTERM)
            outputs = [w.communicate(timeout=60)[0] for w in workers]
            shutil.rmtree(short_tmp, ignore_errors=True)
    assert all("observer CLI ended after" in out for out in outputs), outputs
    assert {o["source"] for o in invoke_json("observations")} == {"model"}
    assert {s["source"] for s in invoke_json("summaries")} == {"model"}
    for n in range(3):
        mine = [r for r in later if project_of(r) == f"proj-{n}"]
        assert mine, f"session {n} asked the model again"
        history = json.dumps(mine[0].messages)
        # The same conversation: its first request after the idle time carries the first burst's turns.
        assert "test_add fails in calc.py" in history and "<summary>" in history, history[:500]
        assert mine[0].messages[0]["role"] == "user" and len(mine[0].messages) > 2
        assert "continues an earlier observation" not in history, "resumed, not recapped"
    assert not [p for p in our_processes(data_dir) if p.is_running()], "nothing left running"
