"""The heuristic synthesizer takes a turn whole or not at all, even when the hooks store the rest
of the turn and its end while the worker is between two reads of the queue (worker/turns.py).

A trickled replay (tests/test_heuristic_timing.py) once failed so on a loaded machine: the worker
read prompt 2's pending events (rows 104-177), the hooks then stored six more events of the turn
and its Stop, and the worker, looking for the turn's end after those rows, found the Stop and
took 104-177 as the whole turn. Here the hooks' events land at that moment every time: SQLite's
trace callback stores them as the worker's connection starts its next statement after reading
the queue. A compaction's checkpoint, likewise, is written only once the events the hooks stored
before its PreCompact are taken, even those stored after the worker last read the queue.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from claude_mem import settings
from claude_mem.hooks import store_in_process
from claude_mem.store import queue_rows
from claude_mem.store.db import connect
from claude_mem.worker import batching, checkpoint

SESSION = "turn-end"


def _event(name: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": SESSION, "transcript_path": "/dev/null", "cwd": "/tmp/widget", "hook_event_name": name, **fields}


def _bash(n: int) -> dict[str, Any]:
    return _event("PostToolUse", tool_name="Bash", tool_input={"command": f"pytest tests/test_{n}.py"},
                  tool_response={"stdout": f"{n} passed", "stderr": ""}, tool_use_id=f"t{n}", prompt_id="p1")


# How the turn is over: each is stored after the turn's last events, in the same moment.
ENDS = {
    "its Stop": _event("Stop", prompt_id="p1", last_assistant_message="Done."),
    "the next prompt": _event("UserPromptSubmit", prompt="now the docs", prompt_id="p2"),
    "the session's end": _event("SessionEnd", reason="other"),
    "a compaction's checkpoint": _event("PreCompact", trigger="auto"),
}


def _land_after_the_first_queue_read(conn: sqlite3.Connection, hooks: sqlite3.Connection, config: settings.Config,
                                     payloads: list[dict[str, Any]]) -> list[str]:
    """Store `payloads` through the hooks' connection as `conn` starts its next statement after
    one that reads the queue; returns what went wrong in the callback (SQLite swallows it)."""
    state = {"read": False, "landed": False}
    errors: list[str] = []

    def trace(sql: str) -> None:
        if state["landed"]:
            return
        if state["read"]:
            state["landed"] = True
            try:
                store_in_process(config, hooks, payloads)
            except Exception as exc:  # reported by the test, not lost in SQLite
                errors.append(repr(exc))
        elif "FROM observation_queue" in sql:
            state["read"] = True

    conn.set_trace_callback(trace)
    return errors


@pytest.mark.parametrize("end", list(ENDS))
def test_a_turn_that_ends_while_the_worker_reads_it_is_taken_whole(data_dir: Path, end: str) -> None:
    config = settings.load()
    config.ensure_dirs()
    hooks = connect(config.db_path)
    worker = connect(config.db_path)
    try:
        store_in_process(config, hooks, [_event("UserPromptSubmit", prompt="make the tests pass", prompt_id="p1"),
                                         *(_bash(n) for n in range(1, 5))])
        rows = queue_rows.next_pending(worker, SESSION)
        assert len(rows) == 4
        errors = _land_after_the_first_queue_read(worker, hooks, config, [*(_bash(n) for n in range(5, 8)), ENDS[end]])
        first, _, _ = batching.choose(worker, config, SESSION, rows, hold=True, heuristic=True)
        worker.set_trace_callback(None)
        assert errors == []
        whole = [r["id"] for r in hooks.execute("SELECT id FROM observation_queue WHERE kind = 'tool' ORDER BY id")]
        assert len(whole) == 7
        # While the worker looked the turn was going on (it waits) or over (it takes all of it):
        # never the events it had read and not those stored before the turn's end.
        assert first is None or [r.id for r in first] == whole, f"took {[r.id for r in first]} of {whole}"
        again, _, _ = batching.choose(worker, config, SESSION, queue_rows.next_pending(worker, SESSION), hold=True, heuristic=True)
        assert again is not None and [r.id for r in again] == whole
    finally:
        worker.close()
        hooks.close()


def test_a_checkpoint_waits_for_the_events_stored_just_before_it_while_the_worker_looked(data_dir: Path) -> None:
    """The worker found nothing pending, then the hooks stored an event and the PreCompact after
    it: the checkpoint waits until that event is taken (else the turn is no longer cut there)."""
    config = settings.load()
    config.ensure_dirs()
    hooks = connect(config.db_path)
    worker = connect(config.db_path)
    try:
        store_in_process(config, hooks, [_event("UserPromptSubmit", prompt="make the tests pass", prompt_id="p1")])
        rows = queue_rows.next_pending(worker, SESSION)  # what the worker's loop passes on to its checkpoint
        assert rows == []
        store_in_process(config, hooks, [_bash(1), ENDS["a compaction's checkpoint"]])
        assert checkpoint.due(worker, SESSION, rows) is None
        taken, _, _ = batching.choose(worker, config, SESSION, queue_rows.next_pending(worker, SESSION), hold=True, heuristic=True)
        assert taken is not None and [r.tool_use_id for r in taken] == ["t1"]
    finally:
        worker.close()
        hooks.close()
