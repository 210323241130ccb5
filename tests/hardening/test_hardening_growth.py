"""Growth: a 300-event session (1,000 with --long) whose every tool call returns a huge output grows the database
by a bounded amount per event (the hooks' size caps hold), and forgetting it gives the space
back (`forget --yes` compacts: FTS merge, VACUUM, WAL truncated)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claude_mem import hooks, settings
from tests.hardening.support import record

pytestmark = pytest.mark.slow

EVENTS = 300  # the growth is per event: --long sends 1,000 (LONG_EVENTS)
LONG_EVENTS = 1000
HUGE = 400_000  # characters of stdout per tool call


def db_bytes(data_dir: Path) -> int:
    return sum(p.stat().st_size for p in data_dir.glob("claude-mem.db*"))


def test_hundreds_of_huge_events_grow_the_database_by_a_bounded_amount(tmp_path: Path, data_dir: Path, long_run: bool) -> None:
    events = LONG_EVENTS if long_run else EVENTS
    config = settings.load()
    cap = config.max_field_chars
    base = {"session_id": "growth", "cwd": str(tmp_path), "transcript_path": str(tmp_path / "t.jsonl")}
    assert hooks.main("new", io.BytesIO(json.dumps({**base, "hook_event_name": "UserPromptSubmit",
                                                      "prompt": "run the big job"}).encode()), io.StringIO()) == 0
    empty = db_bytes(data_dir)
    line = "".join(chr(33 + i % 90) for i in range(99)) + "\n"
    slowest = 0.0
    for n in range(events):
        stdout = (f"run {n}\n" + line * (HUGE // len(line)))[:HUGE]
        payload = {**base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"toolu_growth_{n:05d}",
                   "tool_input": {"command": f"make big-{n} " + "x" * (3 * cap)},
                   "tool_response": {"stdout": stdout, "stderr": "", "interrupted": False}}
        raw = json.dumps(payload).encode()
        started = time.perf_counter()
        assert hooks.main("save", io.BytesIO(raw), io.StringIO()) == 0
        slowest = max(slowest, time.perf_counter() - started)
    grown = db_bytes(data_dir) - empty
    per_event = grown / events
    # Two capped fields (input and response), each at most 1.25 x max_field_chars, plus row and page overhead.
    bound = 2 * 1.25 * cap * 1.2
    queued = json.loads(subprocess.run([sys.executable, "-m", "claude_mem", "queue", "--json"], capture_output=True, text=True,
                                       timeout=120).stdout)
    sent = events * (HUGE + 3 * cap)

    forgot = subprocess.run([sys.executable, "-m", "claude_mem", "forget", "--session", "growth", "--yes"],
                            env={**os.environ}, capture_output=True, text=True, timeout=300)
    after = db_bytes(data_dir)
    record(f"growth: {events} events x {HUGE // 1000} KB output", events=len(queued), lost=events - len(queued),
           max_hook_ms=slowest * 1000,
           note=f"{sent / 2**20:.0f} MiB sent -> db +{grown / 2**20:.1f} MiB ({per_event / 1024:.1f} KiB/event, bound "
                f"{bound / 1024:.0f}); forget+VACUUM -> {after / 1024:.0f} KiB")
    assert len(queued) == events
    assert per_event <= bound, f"{per_event:.0f} bytes per event, bound {bound:.0f}"
    assert forgot.returncode == 0, forgot.stderr
    assert after < empty + 256 * 1024, "forgetting the session gave the space back"
    assert slowest < 1.0, "a hook on a 400 KB response stays fast"
