"""Memory through a compaction: PreCompact only asks for a checkpoint, the worker
writes it once the events before it are taken, and SessionStart(compact) gives the session's own
working set before the project's digest, within `compact_context_chars`."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from claude_mem import hooks
from claude_mem.replay import transcript_events
from tests.hardening.support import model_env

SESSION = "c0a1-compaction-test"
DEV_TRANSCRIPT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "transcripts" / "spotter" / \
    "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
HEADER = "# claude-mem: where this session was before the compaction"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "widget"
    (path / "src").mkdir(parents=True)
    return path


def event(name: str, project: Path, **fields: Any) -> dict[str, Any]:
    return {"session_id": SESSION, "transcript_path": str(project / "t.jsonl"), "cwd": str(project),
            "hook_event_name": name, **fields}


def call(command: str, payload: dict[str, Any]) -> str:
    out = io.StringIO()
    assert hooks.main(command, stdin=io.BytesIO(json.dumps(payload).encode()), stdout=out) == 0
    return out.getvalue()


def edit(project: Path, n: int, path: str, tool: str = "Edit") -> dict[str, Any]:
    tool_input = {"file_path": str(project / path), "old_string": "a", "new_string": "b"} if tool == "Edit" else \
        {"file_path": str(project / path), "content": "x = 1\n"}
    return event("PostToolUse", project, tool_name=tool, tool_input=tool_input, tool_response={"filePath": str(project / path)},
                 tool_use_id=f"t{n}")


def bash(project: Path, n: int, command: str, error: str | None = None) -> dict[str, Any]:
    if error:
        return event("PostToolUseFailure", project, tool_name="Bash", tool_input={"command": command}, tool_use_id=f"t{n}",
                     error=f"Exit code 1\n{error}")
    return event("PostToolUse", project, tool_name="Bash", tool_input={"command": command},
                 tool_response={"stdout": "ok", "stderr": ""}, tool_use_id=f"t{n}")


def a_session(project: Path) -> None:
    call("new", event("UserPromptSubmit", project, prompt="Add retry logic to the uploader", prompt_id="p1"))
    call("save", edit(project, 1, "src/uploader.py", "Write"))
    call("save", edit(project, 2, "src/uploader.py"))
    call("save", bash(project, 3, "npm run lint", "src/uploader.py:3 unused import"))
    call("save", bash(project, 4, "npm run lint"))  # fixed: not failing any more
    call("new", event("UserPromptSubmit", project, prompt="Now make the backoff jittered and cap it at thirty seconds",
                      prompt_id="p2"))
    call("save", edit(project, 5, "src/backoff.py"))
    call("save", bash(project, 6, "pytest tests/test_backoff.py", "AssertionError: 31.2 > 30"))


def context(project: Path, source: str, **fields: Any) -> str:
    out = call("context", event("SessionStart", project, source=source, **fields))
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""


def checkpoints(data_dir: Path) -> list[dict[str, Any]]:
    with contextlib.closing(sqlite3.connect(data_dir / "claude-mem.db")) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM checkpoints ORDER BY id")]


def test_precompact_only_asks_for_a_checkpoint(data_dir: Path, project: Path) -> None:
    a_session(project)
    with contextlib.closing(sqlite3.connect(data_dir / "claude-mem.db")) as conn:
        queued = conn.execute("SELECT COUNT(*), MAX(id) FROM observation_queue").fetchone()
    out = call("summary", event("PreCompact", project, trigger="auto", custom_instructions=""))
    assert json.loads(out) == {"continue": True, "suppressOutput": True}
    [row] = checkpoints(data_dir)
    assert (row["status"], row["trigger"], row["upto_queue_id"], row["prompt_number"]) == ("pending", "auto", queued[1], 2)
    with contextlib.closing(sqlite3.connect(data_dir / "claude-mem.db")) as conn:
        assert conn.execute("SELECT COUNT(*) FROM observation_queue").fetchone()[0] == queued[0]  # nothing queued
    # A second compaction before the worker wrote the first moves the same request up.
    call("save", bash(project, 7, "pytest tests/test_backoff.py"))
    call("summary", event("PreCompact", project, trigger="manual", custom_instructions="keep the tests"))
    [row] = checkpoints(data_dir)
    assert (row["trigger"], row["upto_queue_id"]) == ("manual", queued[1] + 1)


def test_compact_start_gives_the_sessions_working_set_first(data_dir: Path, project: Path) -> None:
    a_session(project)
    assert HEADER not in context(project, "startup")
    text = context(project, "compact")
    block = text.split("# claude-mem: what happened recently")[0]
    assert block.startswith(HEADER) and len(block) <= 2500
    assert "Current request: Now make the backoff jittered and cap it at thirty seconds" in block
    # Relative to the session's directory, newest first, each with what was done to it.
    assert "- src/backoff.py: 1 edit\n- src/uploader.py: written + 1 edit\n" in block
    assert "`pytest tests/test_backoff.py`: AssertionError: 31.2 > 30" in block
    assert "npm run lint" not in block  # it passed after it failed


def test_after_a_compaction_the_digest_leaves_the_sessions_own_memory_out(data_dir: Path, project: Path) -> None:
    """Claude Code's compaction summary and the working set already carry what this session did:
    its own observations and summaries would fill the digest a second time. Other sessions' stay."""
    from claude_mem.project import project_for
    from claude_mem.store import memories, records
    from claude_mem.store.db import connect

    a_session(project)
    name = project_for(str(project))
    with contextlib.closing(connect(str(data_dir / "claude-mem.db"))) as conn:
        records.ensure_session(conn, "earlier-session", project=name, cwd=str(project), transcript_path=None)
        memories.insert_observation(conn, "earlier-session", name, memories.Observation(type="decision", title="Uploads go to S3"),
                                    prompt_number=1)
        memories.insert_observation(conn, SESSION, name, memories.Observation(type="feature", title="Retry loop in the uploader"),
                                    prompt_number=1)
        memories.upsert_summary(conn, SESSION, name, memories.Summary(request="Add retry logic", completed="retry loop"),
                                prompt_number=1)
    startup = context(project, "startup")
    assert "Retry loop in the uploader" in startup and "Uploads go to S3" in startup
    text = context(project, "compact")
    digest = text.split("# claude-mem: what happened recently", 1)[1]
    assert "Uploads go to S3" in digest
    assert "Retry loop in the uploader" not in digest and "retry loop" not in digest
    # A project whose only memory is this session's: the working set alone.
    with contextlib.closing(connect(str(data_dir / "claude-mem.db"))) as conn:
        conn.execute("DELETE FROM sdk_sessions WHERE claude_session_id = 'earlier-session'")
    alone = context(project, "compact")
    assert alone.startswith(HEADER) and "# claude-mem: what happened recently" not in alone


def test_the_working_set_keeps_to_its_budget_names_first(data_dir: Path, project: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_COMPACT_CONTEXT_CHARS", "700")
    call("new", event("UserPromptSubmit", project, prompt="Rename every module " + "and more words " * 80, prompt_id="p1"))
    for n in range(40):
        call("save", edit(project, n, f"src/module_{n:02d}.py"))
    block = context(project, "compact").split("# claude-mem: what happened recently")[0]
    assert len(block) <= 700
    assert "- src/module_39.py" in block and "more\n" in block  # the newest named, the rest counted
    assert "Current request: Rename every module" in block


def test_what_claude_codes_summary_says_is_not_repeated(data_dir: Path, project: Path) -> None:
    a_session(project)
    transcript = project / "t.jsonl"
    lines = [{"type": "system", "subtype": "compact_boundary", "compactMetadata": {"trigger": "auto"}},
             {"type": "user", "isCompactSummary": True, "isVisibleInTranscriptOnly": True,
              "message": {"role": "user", "content": "Summary: edited src/uploader.py to retry uploads."}}]
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    block = context(project, "compact")
    assert "- src/uploader.py\n" in block  # named, its detail left to Claude Code's summary
    assert "- src/backoff.py: 1 edit\n" in block
    # Before the summary is written, the file keeps its detail.
    transcript.write_text(json.dumps(lines[0]) + "\n")
    assert "- src/uploader.py: written + 1 edit\n" in context(project, "compact")


def run_worker(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", SESSION, "--drain", *args],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.mark.slow
def test_the_worker_writes_the_checkpoint_after_the_events_before_it(data_dir: Path, project: Path) -> None:
    a_session(project)
    call("summary", event("PreCompact", project, trigger="auto"))
    run_worker({"CLAUDE_MEM_SEMANTIC_INDEX": "0"}, "--synthesizer", "heuristic")
    [row] = checkpoints(data_dir)
    assert (row["status"], row["source"]) == ("written", "heuristic")
    assert row["request"].startswith("Now make the backoff jittered")
    assert "pytest tests/test_backoff.py" in row["failing"] and "npm run lint" not in row["failing"]
    with contextlib.closing(sqlite3.connect(data_dir / "claude-mem.db")) as conn:
        # Every event queued before the compaction was taken before the checkpoint was written.
        assert conn.execute("SELECT COUNT(*) FROM observation_queue WHERE status != 'done'").fetchone()[0] == 0
        assert conn.execute("SELECT MAX(updated_at_epoch) FROM observation_queue").fetchone()[0] <= row["written_at_epoch"]
    block = context(project, "compact")
    assert "## Checkpoint written at the compaction\n" in block and "- Next: make `pytest tests/test_backoff.py` pass" in block


@pytest.mark.slow
def test_the_model_writes_the_checkpoint_and_a_failing_model_leaves_it_to_heuristics(data_dir: Path, project: Path,
                                                                                      tmp_path: Path) -> None:
    a_session(project)
    call("summary", event("PreCompact", project, trigger="auto"))
    (tmp_path / "ok").mkdir()
    (tmp_path / "down").mkdir()
    run_worker(model_env(tmp_path / "ok", [], {"per_event": True}, CLAUDE_MEM_SEMANTIC_INDEX="0"))
    first = checkpoints(data_dir)[0]
    assert (first["status"], first["source"]) == ("written", "model")
    assert first["completed"] == "turn done"  # the fake's <summary> for a request it was shown
    call("save", bash(project, 9, "make build", "missing target"))
    call("summary", event("PreCompact", project, trigger="manual"))
    # Enough failures for every event and the checkpoint: the compaction does not wait for the model.
    env = model_env(tmp_path / "down", [{"error": "invalid_request"}] * 20, {"error": "invalid_request"},
                    CLAUDE_MEM_SEMANTIC_INDEX="0", CLAUDE_MEM_SYNTHESIZER="auto", CLAUDE_MEM_MAX_ATTEMPTS="1")
    run_worker(env)
    second = checkpoints(data_dir)[1]
    assert (second["status"], second["source"]) == ("written", "heuristic")
    assert "make build" in second["failing"]


def test_replay_sends_precompact_before_each_compacted_start() -> None:
    if not DEV_TRANSCRIPT.exists():
        pytest.skip("the shared transcripts are not beside this checkout")
    events = transcript_events(DEV_TRANSCRIPT)
    names = [e.event for e in events]
    at = names.index("PreCompact")
    assert names.count("PreCompact") == 1 and names[at + 1] == "SessionStart"
    assert events[at + 1].payload["source"] == "compact"
    assert events[at].payload["trigger"] == "auto" and events[at].source.endswith(":754")
    assert events[at].command() == "summary"


@pytest.mark.slow
def test_the_dev_transcript_bar(tmp_path: Path) -> None:
    """The issue's bar on the dev transcript: everything before its compaction replayed, PreCompact,
    the worker, SessionStart(compact): >= 80% of the files it modified named, >= half of the last
    prompt's distinctive words, <= 2,500 characters in all (the digest too), with and
    without Claude Code's summary."""
    if not DEV_TRANSCRIPT.exists():
        pytest.skip("the shared transcripts are not beside this checkout")
    for extra in ([], ["--before-summary"]):
        proc = subprocess.run([sys.executable, "bench/compaction.py", "--json", str(DEV_TRANSCRIPT), *extra],
                              capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parent.parent,
                              env={k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        [result] = json.loads(proc.stdout)
        assert result["files"] == 7 and result["files_named"] >= 0.8
        assert result["request_words"] >= 0.5 and 0 < result["chars"] <= 2500
        assert result["hook_errors"] == []


def test_a_short_last_prompt_brings_the_one_that_said_more(data_dir: Path, project: Path) -> None:
    a_session(project)
    call("new", event("UserPromptSubmit", project, prompt="continue", prompt_id="p3"))
    assert ("Current request: continue (after: Now make the backoff jittered and cap it at thirty seconds)\n"
            in context(project, "compact"))


@pytest.mark.slow
def test_precompact_does_not_wait_for_a_busy_worker(data_dir: Path, project: Path, tmp_path: Path) -> None:
    """The worker is in the middle of a slow model turn: the hook answers at once (the request
    stays pending while the turn goes on), and the worker writes the checkpoint after it."""
    from tests.waiting import wait_until

    a_session(project)
    env = model_env(tmp_path, [{"per_event": True, "sleep": 5}], {"per_event": True}, CLAUDE_MEM_SEMANTIC_INDEX="0")
    worker = subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", SESSION, "--drain"],
                              env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        log = tmp_path / "fake.log"
        assert wait_until(lambda: log.exists() and '"event": "step"' in log.read_text(), 60)  # mid-turn
        proc = subprocess.run([sys.executable, "-m", "claude_mem", "summary"], capture_output=True, timeout=60,
                              input=json.dumps(event("PreCompact", project, trigger="auto")).encode(),
                              env={**os.environ, **env})
        assert proc.returncode == 0 and proc.stderr == b""
        assert [r["status"] for r in checkpoints(data_dir)] == ["pending"]
        assert '"event": "exit"' not in log.read_text() and worker.poll() is None  # the turn was still going on
        assert worker.wait(timeout=120) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
    assert [(r["status"], r["source"]) for r in checkpoints(data_dir)] == [("written", "model")]
