"""The whole capture loop with the real Claude Code CLI as the observer: a transcript is
replayed through the hook commands, then `claude-mem worker` drives the CLI bundled in the
claude-agent-sdk wheel against a fake Anthropic Messages API on 127.0.0.1 until the queue is
drained. Nothing is mocked on our side of the process boundary."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claude_mem.replay import play_subprocess, transcript_events
from claude_mem.worker.observer import MAX_OUTPUT_TOKENS
from tests.conftest import ROOT, TRANSCRIPTS, cli_json
from tests.fakes.messages_api import FakeMessagesAPI
from tests.hardening.support import is_service, our_processes
from tests.observer_replies import observer_reply, real_cli_env

pytestmark = pytest.mark.slow

FIXTURE = ROOT / "tests" / "fixtures" / "transcripts"


def transcripts() -> list[Path]:
    paths = sorted(FIXTURE.glob("*.jsonl"))
    real = TRANSCRIPTS / "claude-code-log" / "a7da6a22-facc-4fcd-8bab-f83c87862004.jsonl"
    if real.exists():
        paths.append(real)
    return paths


@pytest.mark.parametrize("transcript", transcripts(), ids=lambda p: p.stem[:12])
def test_real_cli_observer_drains_a_replayed_session(transcript: Path, tmp_path: Path, data_dir: Path) -> None:
    session_id = f"e2e-{transcript.stem[:8]}"
    events = transcript_events(transcript, session_id=session_id)
    results = play_subprocess(events, concurrency="message")
    assert all(r.returncode == 0 for r in results)
    queue = cli_json("queue")
    tool_rows = [r for r in queue if r["kind"] == "tool"]
    finalize_rows = [r for r in queue if r["kind"] == "finalize"]
    assert tool_rows and finalize_rows

    with FakeMessagesAPI(observer_reply) as api:
        # Not about search: no memory service.
        env = real_cli_env(tmp_path / "h", api, CLAUDE_MEM_SYNTHESIZER="model", CLAUDE_MEM_RETRY_BACKOFF_S="0.2",
                           CLAUDE_MEM_SEMANTIC_INDEX="0")
        started = time.time()
        proc = subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", session_id, "--drain"],
                              env=env, capture_output=True, text=True, timeout=600)
        elapsed = time.time() - started
        requests = api.messages_requests()
    assert proc.returncode == 0, proc.stderr[-2000:]

    queue = cli_json("queue")
    assert all(r["status"] == "done" for r in queue), {r["status"] for r in queue}
    assert len(queue) == len(tool_rows) + len(finalize_rows), "no event lost or added"
    observations = cli_json("observations", "--session", session_id)
    assert observations and all(o["source"] == "model" for o in observations)
    titles = [o["title"] for o in observations]
    assert len(titles) == len(set(titles))
    summaries = cli_json("summaries", "--session", session_id)
    assert len(summaries) == len(finalize_rows), "one summary per Stop"
    assert all(s["source"] == "model" for s in summaries)

    # The observer is a tool-less, settings-less conversation: no tools offered, our system prompt.
    assert requests and all(not r.tools for r in requests)
    assert all("memory observer" in r.system_text() for r in requests)
    # No extended thinking (the CLI's default is a 31,999-token budget, billed as output), and a
    # reply cap that fits a full batch rather than the CLI's 32,000.
    assert all(r.body.get("thinking") == {"type": "disabled"} for r in requests), {json.dumps(r.body.get("thinking")) for r in requests}
    assert all(r.body.get("max_tokens") == MAX_OUTPUT_TOKENS for r in requests)
    # Batching: far fewer model turns than events.
    assert len(requests) < len(tool_rows)
    # No observer CLI left behind (a memory service, if a hook started one, stays until its idle time).
    assert [p for p in our_processes(data_dir) if not is_service(p)] == []
    print(f"\n{transcript.name}: {len(tool_rows)} events, {len(finalize_rows)} turns, {len(requests)} model requests, "
          f"{len(observations)} observations, worker {elapsed:.1f}s")
    json.dumps(observations)  # JSON-serialisable as stored
