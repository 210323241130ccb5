"""Four Claude sessions at once: each replays a real transcript through the hook commands as
separate processes (every tool call of a turn fired in parallel, more overlap than Claude Code
itself produces), the hooks start one detached worker per session, and the workers talk to the
fake Claude CLI. Every event must be queued once and processed once, nothing may fail with
"database is locked", no observation may land in another session, and no process may be left
once the workers' idle time has passed."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from claude_mem.replay import play_subprocess
from tests.hardening.support import (
    expected_tool_ids,
    leftover_processes,
    model_env,
    record,
    rows,
    session_events,
    transcripts,
    wait_until,
)

pytestmark = pytest.mark.slow

SESSIONS = 4
IDLE_S = 2


def test_four_sessions_at_once(tmp_path: Path, data_dir: Path, long_run: bool) -> None:
    paths = transcripts()
    chosen = [paths[i % len(paths)] for i in range(SESSIONS)]
    limit = None if long_run else 25
    sessions = {f"conc-{n}": session_events(path, f"conc-{n}", tmp_path / f"proj-{n}", limit) for n, path in enumerate(chosen)}
    env = {**os.environ, **model_env(tmp_path), "CLAUDE_MEM_WORKER_AUTOSTART": "1", "CLAUDE_MEM_WORKER_IDLE_S": str(IDLE_S)}

    results: dict[str, list] = {}

    def replay(session_id: str) -> None:
        results[session_id] = play_subprocess(sessions[session_id], env=env, concurrency="turn", max_workers=4)

    threads = [threading.Thread(target=replay, args=(sid,)) for sid in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=900)
    hook_results = [r for rs in results.values() for r in rs]
    assert len(results) == SESSIONS
    assert all(r.returncode == 0 for r in hook_results)
    assert [r.stderr for r in hook_results if r.stderr] == [], "no hook wrote an error (no 'database is locked')"

    db = data_dir / "claude-mem.db"
    wanted = {sid: expected_tool_ids(events) for sid, events in sessions.items()}
    total = sum(len(ids) for ids in wanted.values())

    def drained() -> bool:
        counts = {r["status"]: r["n"] for r in rows(db, "SELECT status, COUNT(*) AS n FROM observation_queue GROUP BY status")}
        tools = rows(db, "SELECT COUNT(*) AS n FROM observation_queue WHERE kind = 'tool'")[0]["n"]
        return tools >= total and not counts.get("pending") and not counts.get("processing")

    assert wait_until(drained, timeout=600, step=0.5), rows(db, "SELECT status, COUNT(*) FROM observation_queue GROUP BY status")
    leaked = leftover_processes(data_dir, timeout=IDLE_S + 60)

    queue = rows(db, "SELECT session_id, kind, tool_use_id, status FROM observation_queue")
    lost = duplicated = 0
    for sid, ids in wanted.items():
        queued = [r["tool_use_id"] for r in queue if r["session_id"] == sid and r["kind"] == "tool"]
        lost += len(ids - set(queued))
        duplicated += len(queued) - len(set(queued))
        assert set(queued) == ids, sid
    runs = rows(db, "SELECT session_id, events_done FROM worker_runs")
    processed = sum(r["events_done"] for r in runs)
    duplicated += max(0, processed - len(queue))  # a row processed twice counts twice here
    # Each observation was written by the observer of its own session's project.
    project = {r["claude_session_id"]: r["project"] for r in rows(db, "SELECT claude_session_id, project FROM sdk_sessions")}
    observations = rows(db, "SELECT session_id, title FROM observations")
    misplaced = [o for o in observations if not o["title"].endswith(f" @{project[o['session_id']]}")]
    log = (data_dir / "logs" / "claude-mem.log").read_text() if (data_dir / "logs" / "claude-mem.log").exists() else ""
    max_hook = max(r.seconds for r in hook_results) * 1000
    record(f"concurrency: {SESSIONS} sessions, parallel hooks", events=len(queue), lost=lost, duplicated=duplicated,
           leaked=len(leaked), max_hook_ms=max_hook, note=f"{len(hook_results)} hook processes")

    assert lost == 0 and duplicated == 0
    assert processed == len(queue), "every row processed exactly once"
    assert {r["session_id"] for r in runs} == set(sessions)
    assert observations and misplaced == []
    assert "database is locked" not in log
    assert leaked == []
