"""A transcript's hooks replayed at a pace, for bench/observer_bill.py.

- "drain": every event stored first, then one worker drains the queue (how the bill was measured
  until issue 49: every batch is as full as the batching allows).
- "hook": each hook as soon as the one before it returned, the worker the hooks start observing
  meanwhile, as in use (a hook process takes ~0.1 s; a real session's events are as dense only
  when Claude calls tools back to back).
- "real": the session's own pace: each event when the transcript's timestamps say, every gap
  capped at `max_gap` seconds (a lunch break would only add waiting).

Both systems get the same schedule and a SessionEnd at its end; a run is over once the system
has drained its queue.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from claude_mem.replay import HookEvent, run_event, transcript_events

PACES = ("drain", "hook", "real")
QUIET_S = 2.0  # the queue empty and no worker alive for this long: ours is done


def _epoch(stamp: str) -> float | None:
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def moved(payload: dict[str, Any], cwd: Path) -> dict[str, Any]:
    """The payload as if its project had been in `cwd` (a folder that exists here): the paths
    inside the session's folder stay inside it, as they were written."""
    folder = str(payload.get("cwd") or "").rstrip("/")
    text = json.dumps(payload)
    if folder:
        text = text.replace(json.dumps(folder + "/")[1:-1], json.dumps(str(cwd) + "/")[1:-1])
    return {**json.loads(text), "cwd": str(cwd)}


def schedule(path: Path, cwd: Path, pace: str, max_gap: float) -> list[tuple[float, dict[str, Any]]]:
    """(seconds after the start, payload) of every hook event, a SessionEnd last."""
    events = transcript_events(path, session_id="bench")
    out: list[tuple[float, dict[str, Any]]] = []
    at, last = 0.0, None
    for event in events:
        stamp = _epoch(event.timestamp)
        if pace == "real" and stamp is not None and last is not None:
            at += min(max(stamp - last, 0.0), max_gap)
        last = stamp if stamp is not None else last
        out.append((at, moved(event.payload, cwd)))
    end = {"session_id": "bench", "transcript_path": str(path), "cwd": str(cwd), "hook_event_name": "SessionEnd",
           "reason": "other"}
    out.append((at, end))
    return out


def play(timed: list[tuple[float, dict[str, Any]]], run: Callable[[dict[str, Any]], None]) -> float:
    """Run each payload at its time (never before the one before it returned); returns the seconds taken."""
    start = time.monotonic()
    for at, payload in timed:
        wait = start + at - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        run(payload)
    return time.monotonic() - start


def play_ours(timed: list[tuple[float, dict[str, Any]]], env: Mapping[str, str], db: Path, workers_dir: Path,
              timeout: float = 3600) -> float:
    """Our hooks as real processes (they start the session's worker); returns once it has drained
    the queue and exited, the seconds from the first hook."""
    from claude_mem.worker.spawn import worker_alive

    start = time.monotonic()

    def run(payload: dict[str, Any]) -> None:
        event = HookEvent(payload)
        if event.command() is not None:
            result = run_event(event, env=env, timeout=120)
            if result.returncode != 0:
                raise SystemExit(f"hook {event.command()} failed: {result.stderr[-500:]}")

    play(timed, run)
    quiet_since = None
    while time.monotonic() - start < timeout:
        busy = worker_alive(str(workers_dir), "bench") or _waiting(db) != 0
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > QUIET_S:
            return quiet_since - start
        time.sleep(0.5)
    raise SystemExit(f"our worker did not drain the queue in {timeout:.0f} s")


def _waiting(db: Path) -> int:
    """Queue rows not settled yet (-1 while the database cannot be read)."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM observation_queue WHERE status IN ('pending', 'processing')")
                       .fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return -1


def tree_env(tree: Path | None) -> dict[str, str]:
    """The environment that makes `python -m claude_mem` run another checkout's code (a baseline
    measured in the same run), or nothing for this one."""
    if tree is None:
        return {}
    # PYTHONSAFEPATH: the current folder (this checkout, when the bench runs from it) does not come first.
    return {"PYTHONPATH": os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH", "")) if p),
            "PYTHONSAFEPATH": "1"}
