"""What the hardening scenarios share: the report they fill, the sessions they replay, and the
process census that proves nothing was left running.

Every scenario calls `record(...)` with its numbers; tests/conftest.py prints them as one table
at the end of the run (docs/reliability.md shows the latest). `--long` (see
tests/conftest.py) makes every scenario deeper: more events, more kills, more fuzz cases.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import psutil

from claude_mem.hooks import matches_skip_list
from claude_mem.replay import TOOL_EVENTS, HookEvent, find_transcripts, transcript_events
from claude_mem.settings import DEFAULT_SKIP_TOOLS
from tests.conftest import ROOT, TRANSCRIPTS
from tests.fakes.fake_claude import write_wrapper
from tests.waiting import wait_until

FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"


@dataclass
class Row:
    scenario: str
    events: int = 0
    lost: int = 0
    duplicated: int = 0
    leaked: int = 0
    fuzz_cases: int = 0
    max_hook_ms: float = 0.0
    note: str = ""


REPORT: list[Row] = []  # this process's rows; tests/conftest.py hands each test's on with its report


def record(scenario: str, **numbers: Any) -> Row:
    row = Row(scenario, **numbers)
    REPORT.append(row)
    return row


def report_table(rows: list[Row]) -> list[str]:
    head = f"{'scenario':<40} {'events':>7} {'lost':>5} {'dup':>5} {'leaked':>6} {'fuzz':>7} {'max hook ms':>11}  note"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r.scenario:<40} {r.events:>7} {r.lost:>5} {r.duplicated:>5} {r.leaked:>6} {r.fuzz_cases:>7}"
                     f" {r.max_hook_ms:>11.0f}  {r.note}")
    total = Row("TOTAL", **{k: sum(getattr(r, k) for r in rows) for k in ("events", "lost", "duplicated", "leaked", "fuzz_cases")})
    total.max_hook_ms = max((r.max_hook_ms for r in rows), default=0.0)
    lines.append(f"{total.scenario:<40} {total.events:>7} {total.lost:>5} {total.duplicated:>5} {total.leaked:>6}"
                 f" {total.fuzz_cases:>7} {total.max_hook_ms:>11.0f}")
    return lines


def report_json(rows: list[Row]) -> str:
    return json.dumps([asdict(r) for r in rows])


# --- sessions to replay ----------------------------------------------------------------------

def transcripts() -> list[Path]:
    """The real transcripts when ../shared is there, always the project's own fixture."""
    real = find_transcripts(TRANSCRIPTS) if TRANSCRIPTS.is_dir() else []
    return [*real, *find_transcripts(FIXTURES)]


def session_events(path: Path, session_id: str, cwd: Path, limit: int | None = None) -> list[HookEvent]:
    """A transcript's hook events as one session in its own project (`cwd`), optionally only its
    first `limit` tool events (and the prompts and Stops among them)."""
    cwd.mkdir(parents=True, exist_ok=True)
    events = transcript_events(path, session_id=session_id)
    out: list[HookEvent] = []
    tools = 0
    for e in events:
        if e.event in TOOL_EVENTS:
            tools += 1
            if limit is not None and tools > limit:
                break
        e.payload["cwd"] = str(cwd)
        out.append(e)
    if limit is not None and out and out[-1].event != "Stop":
        last = next((e for e in reversed(events) if e.event == "Stop"), None)
        if last is not None:
            out.append(HookEvent({**last.payload, "cwd": str(cwd)}, source=last.source))
    return out


def expected_tool_ids(events: list[HookEvent]) -> set[str]:
    return {e.payload["tool_use_id"] for e in events
            if e.event in TOOL_EVENTS and not matches_skip_list(e.payload["tool_name"], DEFAULT_SKIP_TOOLS)}


def model_env(tmp_path: Path, steps: list[dict] | None = None, default: dict | None = None, **extra: str) -> dict[str, str]:
    """Environment for hooks and workers whose observer is the fake Claude CLI."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": steps or [], "default": default or {"per_event": True, "tag_project": True}}))
    return {
        "CLAUDE_MEM_CLI_PATH": write_wrapper(tmp_path / "fakebin"),
        "CLAUDE_MEM_SYNTHESIZER": "model",
        "CLAUDE_MEM_RETRY_BACKOFF_S": "0",
        "FAKE_CLAUDE_SCRIPT": str(script),
        "FAKE_CLAUDE_LOG": str(tmp_path / "fake.log"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
        # The memory service a worker starts must be gone within the census's wait, too.
        "CLAUDE_MEM_SERVICE_IDLE_S": "3",
        # A transcript replayed in part leaves its last turn open: its batch would wait batch_wait_s
        # (120 s) for an end that never comes (tests/test_batching.py tests that wait).
        "CLAUDE_MEM_BATCH_WAIT_S": "2",
        **extra,
    }


def rows(db: Path, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db, timeout=30)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def kill_mid_work(proc: Any, db: Path, session_id: str, rng: Any, turn_s: float) -> bool:
    """SIGKILL a worker while its session still has events waiting, at a random point of a model
    turn (each lasts `turn_s`) once a random share of the session is done. True when it died with
    work left, False when it finished first (a kill after the work proves nothing)."""
    def counts() -> dict[str, int]:
        return {r["status"]: r["n"] for r in rows(db, "SELECT status, COUNT(*) AS n FROM observation_queue"
                                                      " WHERE session_id = ? GROUP BY status", (session_id,))}

    first = counts()
    target = rng.randint(0, max(0, sum(first.values()) - 2))
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        now = counts()
        if now.get("done", 0) >= target and now.get("pending") and (now.get("processing") or now.get("done")):
            break
        time.sleep(0.01)
    # Rows still pending need another turn after the one in flight: the worker cannot be done
    # within half a turn from here.
    time.sleep(rng.uniform(0, turn_s / 2))
    left = counts()
    alive = proc.poll() is None
    proc.kill()
    proc.wait()
    return alive and bool(left.get("pending") or left.get("processing"))


# --- the process census ------------------------------------------------------------------------

def our_processes(data_dir: Path) -> list[psutil.Process]:
    """Live processes of this memory: workers (and anything they start) inherit its
    CLAUDE_MEM_DATA_DIR; observer CLIs run in <data dir>/observer. The whole process table is
    read, so a detached worker that escaped its parent is found too."""
    found = []
    for p in psutil.process_iter(["pid", "status"]):
        if p.pid == os.getpid() or p.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        try:
            if p.environ().get("CLAUDE_MEM_DATA_DIR") == str(data_dir) or p.cwd().startswith(str(data_dir)):
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            pass
    return found


def is_service(proc: psutil.Process) -> bool:
    """The data folder's memory service: it outlives workers on purpose, until its idle time."""
    try:
        cmd = proc.cmdline()
    except (psutil.Error, OSError):
        return False
    return "claude_mem" in cmd and "service" in cmd


def leftover_processes(data_dir: Path, timeout: float) -> list[psutil.Process]:
    """What is still running after `timeout` seconds (workers exit after their idle time)."""
    wait_until(lambda: not our_processes(data_dir), timeout, step=0.25)
    return our_processes(data_dir)
