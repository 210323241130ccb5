"""The heuristic synthesizer gives the same memories for the same events whatever their timing
(issue 51: one replay gave 245 observations, another 315): its batch is a whole turn, taken
once the turn is over (worker/turns.py), however the events arrived while the worker ran."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.hooks import store_in_process
from claude_mem.replay import find_transcripts, transcript_events
from claude_mem.store.db import connect
from tests.hardening.support import wait_until

pytestmark = pytest.mark.slow

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "transcripts"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"


def _transcript() -> Path:
    """The largest transcript at hand: a real one beside the checkout, else the project's fixture."""
    found = (find_transcripts(SHARED) if SHARED.is_dir() else []) or find_transcripts(FIXTURES)
    return max(found, key=lambda p: p.stat().st_size)


def _memories(data_dir: Path) -> Counter[tuple[str, str, str, str]]:
    conn = connect(str(data_dir / "claude-mem.db"))
    try:
        rows = conn.execute("SELECT type, title, subtitle, facts FROM observations").fetchall()
        waiting = conn.execute("SELECT count(*) FROM observation_queue WHERE status != 'done'").fetchone()[0]
    finally:
        conn.close()
    assert waiting == 0
    return Counter((r[0], r[1], r[2], r[3]) for r in rows)


def _env(data_dir: Path) -> dict[str, str]:
    return {**os.environ, "CLAUDE_MEM_DATA_DIR": str(data_dir), "CLAUDE_MEM_SYNTHESIZER": "heuristic",
            "CLAUDE_MEM_SEMANTIC_INDEX": "0", "CLAUDE_MEM_WORKER_AUTOSTART": "0"}


def _queue_done(data_dir: Path) -> bool:
    conn = connect(str(data_dir / "claude-mem.db"))
    try:
        return conn.execute("SELECT count(*) FROM observation_queue WHERE status != 'done'").fetchone()[0] == 0
    finally:
        conn.close()


def test_the_same_events_give_the_same_memories_however_they_arrive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    events = [e.payload for e in transcript_events(_transcript(), session_id="timing")]
    session = "timing"
    # The session ends, so its last turn is over however long the trickle took: no idle limit
    # decides where a turn stops (a loaded machine once outlasted one and split a turn).
    events.append({k: events[0][k] for k in ("session_id", "transcript_path", "cwd")}
                  | {"hook_event_name": "SessionEnd", "reason": "other"})
    # All at once, then one worker drains them: the biggest batches there can be.
    at_once = tmp_path / "at-once"
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(at_once))
    config = settings.load()
    config.ensure_dirs()
    conn = connect(config.db_path)
    store_in_process(config, conn, events)
    conn.close()
    drained = subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", session, "--drain"], env=_env(at_once),
                             capture_output=True, text=True, timeout=300)
    assert drained.returncode == 0, drained.stderr
    # One at a time while a live worker runs: it looks at the queue between any two of them.
    trickled = tmp_path / "trickled"
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(trickled))
    config = settings.load()
    config.ensure_dirs()
    conn = connect(config.db_path)
    store_in_process(config, conn, events[:2])
    worker = subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", session, "--idle", "900"],
                              env=_env(trickled), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for n, event in enumerate(events[2:], 1):
            store_in_process(config, conn, [event])
            if n % 3 == 0:  # now and then, wait until the worker has taken everything it would take
                wait_until(lambda: not conn.execute("SELECT 1 FROM observation_queue WHERE status = 'processing'").fetchone(), 30)
        assert wait_until(lambda: _queue_done(trickled), 120), "the live worker took every event"
    finally:
        worker.terminate()
        worker.wait(30)
        conn.close()
    first, second = _memories(at_once), _memories(trickled)
    assert sum(first.values()) > 3
    assert first == second, (sorted(first - second)[:3], sorted(second - first)[:3])
