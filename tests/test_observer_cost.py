"""The observer's cost, bounded, through real processes (hooks, `claude-mem worker`, the real
claude-agent-sdk driving the fake Claude CLI): its CLI sleeps between bursts and the next batch
resumes the same conversation; a daily token budget hands the rest of the day to the heuristic
synthesizer (auto) or lets events wait for tomorrow (model), and `reprocess` redoes them; a
subagent's own tool calls can be folded into its Task call."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from claude_mem.demo import scripted_session
from claude_mem.replay import play_subprocess, run_hook, transcript_events
from claude_mem.store import budget
from claude_mem.store.db import connect, transaction
from tests.cli_helpers import invoke_json
from tests.conftest import ROOT
from tests.hardening.support import our_processes
from tests.waiting import wait_until
from tests.worker_helpers import fake_env, fake_log, run_worker, user_messages

FIXTURE = ROOT / "tests" / "fixtures" / "transcripts" / "7d3c1f0e-5b2a-4c8e-9a61-2f4e8b0c9d17.jsonl"


def play(steps: list[tuple[str, dict]]) -> None:
    for command, payload in steps:
        proc = run_hook(command, payload)
        assert proc.returncode == 0 and not proc.stderr, proc.stderr


def demo_bursts(project: Path, session_id: str = "sess-demo") -> tuple[list, list]:
    """The demo session as two bursts: the first prompt's turn, then the second's."""
    steps = scripted_session(str(project), session_id)
    cut = next(i for i, (command, _) in enumerate(steps) if command == "summary") + 1
    return steps[:cut], steps[cut:]


def all_done() -> bool:
    rows = invoke_json("queue")
    return bool(rows) and all(r["status"] == "done" for r in rows)


@pytest.mark.slow  # a worker, a service or a Chroma server for seconds
def test_the_observer_sleeps_between_bursts_and_resumes_its_conversation(tmp_path: Path, data_dir: Path) -> None:
    steps = scripted_session(str(tmp_path / "proj"), "sess-demo")
    first, second = steps[:4], steps[4:]  # the first prompt's Read and failing test run; then its fix, and prompt 2
    play(first)
    # A batch goes at once (no waiting for its turn's end): the bursts are what this test is about.
    env = fake_env(tmp_path, [], FAKE_CLAUDE_SESSIONS=str(tmp_path / "sessions"), CLAUDE_MEM_OBSERVER_IDLE_S="1",
                   CLAUDE_MEM_BATCH_WAIT_S="0")
    worker = subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", "sess-demo", "--idle", "120"],
                              env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_until(all_done, 60), "the first burst is stored"
        others = lambda: [p for p in our_processes(data_dir) if p.pid != worker.pid]  # noqa: E731
        assert wait_until(lambda: not others(), 20), "the observer CLI is ended while the worker idles"
        assert worker.poll() is None, "the worker itself stays"
        with sqlite3.connect(data_dir / "claude-mem.db") as conn:
            conversation, cut_at = conn.execute("SELECT sdk_session_id, sdk_resume_at FROM sdk_sessions").fetchone()
        assert conversation and cut_at
        sent_before = len(user_messages(tmp_path))

        play(second)
        assert wait_until(all_done, 60), "the second burst is stored"
    finally:
        worker.send_signal(signal.SIGTERM)
        output = worker.communicate(timeout=30)[0]
    starts = [e for e in fake_log(tmp_path) if e["event"] == "start"]
    # One CLI per burst; on a loaded machine the second burst's hooks may come more than the 1 s
    # idle apart, and the CLI sleeps between them too: every later start resumes the conversation.
    assert len(starts) >= 2, "the CLI started again for the second burst"
    argv = " ".join(starts[1]["argv"])
    assert f"--resume={conversation}" in argv and f"--resume-session-at={cut_at}" in argv, argv
    assert all("--resume=" in " ".join(s["argv"]) for s in starts[1:]), "never a fresh conversation"
    # The same conversation goes on: no recap, nothing it holds sent again.
    earlier, later = user_messages(tmp_path)[:sent_before], user_messages(tmp_path)[sent_before:]
    assert "User's request #1: test_add fails" in earlier[0]
    assert later and not any("continues an earlier observation" in t for t in later)
    assert not any("User's request #1" in t for t in later), "the request it saw is not sent again"
    assert "User's request #2" in "".join(later)
    assert {o["source"] for o in invoke_json("observations")} == {"model"}
    assert {s["source"] for s in invoke_json("summaries")} == {"model"}
    assert "observer CLI ended after" in output and "observer_idle_s" in output


@pytest.mark.slow  # a worker, a service or a Chroma server for seconds
def test_a_conversation_that_cannot_be_resumed_starts_again_with_the_request_it_is_about(tmp_path: Path, data_dir: Path) -> None:
    steps = scripted_session(str(tmp_path / "proj"), "sess-demo")
    first, second = steps[:4], steps[4:]  # the second burst begins with more of request #1
    play(first)
    sessions = tmp_path / "sessions"
    env = fake_env(tmp_path, [], FAKE_CLAUDE_SESSIONS=str(sessions), CLAUDE_MEM_OBSERVER_IDLE_S="1", CLAUDE_MEM_BATCH_WAIT_S="0")
    worker = subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", "sess-demo", "--idle", "120"],
                              env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_until(all_done, 60), "the first burst is stored"
        assert wait_until(lambda: not [p for p in our_processes(data_dir) if p.pid != worker.pid], 20), "the CLI sleeps"
        sent_before = len(user_messages(tmp_path))
        for known in sessions.iterdir():  # the conversation is lost: the next resume fails
            known.unlink()
        play(second)
        assert wait_until(all_done, 60), "the second burst is stored"
    finally:
        worker.send_signal(signal.SIGTERM)
        output = worker.communicate(timeout=30)[0]
    assert "could not resume the observer conversation" in output
    fresh = user_messages(tmp_path)[sent_before:][0]
    assert "continues an earlier observation" in fresh, "a recap of what is recorded"
    assert "User's request #1: test_add fails" in fresh, "and the request its events belong to"
    assert {o["source"] for o in invoke_json("observations")} == {"model"}


@pytest.mark.slow  # a worker, a service or a Chroma server for seconds
def test_a_reached_budget_hands_the_rest_of_the_day_to_heuristics_and_reprocess_redoes_it(tmp_path: Path, data_dir: Path) -> None:
    first, second = demo_bursts(tmp_path / "proj")
    play(first + second)
    # Batches of 2,000 characters: turn 1's events, then its end with turn 2's edit, then turn 2's end.
    env = fake_env(tmp_path, [], CLAUDE_MEM_SYNTHESIZER="auto", CLAUDE_MEM_OBSERVER_DAILY_TOKENS="100",
                   CLAUDE_MEM_BATCH_CHARS="2000")
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    # The first batch's reply alone costs more than 100 tokens: no request after it.
    assert len(user_messages(tmp_path)) == 1
    assert all_done(), "every event is still done"
    observations = invoke_json("observations")
    assert {o["source"] for o in observations} == {"model", "heuristic"}
    assert {s["source"] for s in invoke_json("summaries")} == {"heuristic"}
    status = invoke_json("status", env=env)
    spent = status["observer_budget"]
    assert spent["reached"] and spent["budget"] == 100 and spent["tokens"] >= 100 and spent["reached_at_epoch"]
    human = subprocess.run([sys.executable, "-m", "claude_mem", "status"], capture_output=True, text=True,
                           env={**os.environ, **env}, timeout=60).stdout
    assert "budget reached" in human and "of 100 observer tokens today" in human and "observer_daily_tokens" in human
    stats = invoke_json("stats", env=env)
    assert stats["observer_today"]["tokens"] == spent["tokens"] and stats["observer_today"]["reached"]
    log_text = (data_dir / "logs" / "claude-mem.log").read_text()
    assert log_text.count("observer_daily_tokens reached") == 1, "said once"

    raised = {**env, "CLAUDE_MEM_OBSERVER_DAILY_TOKENS": "1000000"}
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "reprocess", "--session", "sess-demo", "--wait", "--json"],
                          capture_output=True, text=True, env={**os.environ, **raised}, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert {o["source"] for o in invoke_json("observations")} == {"model"}
    assert {s["source"] for s in invoke_json("summaries")} == {"model"}
    assert all_done()


@pytest.mark.slow  # a worker, a service or a Chroma server for seconds
def test_with_synthesizer_model_a_reached_budget_lets_events_wait_for_tomorrow(tmp_path: Path, data_dir: Path) -> None:
    first, second = demo_bursts(tmp_path / "proj")
    play(first + second)
    env = fake_env(tmp_path, [], CLAUDE_MEM_OBSERVER_DAILY_TOKENS="100", CLAUDE_MEM_BATCH_CHARS="2000")
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    assert len(user_messages(tmp_path)) == 1
    rows = invoke_json("queue")
    waiting = [r for r in rows if r["status"] == "pending"]
    assert waiting and all(r["status"] in ("done", "pending") for r in rows)
    with sqlite3.connect(data_dir / "claude-mem.db") as conn:
        due = {r[0] for r in conn.execute("SELECT next_attempt_epoch FROM observation_queue WHERE status = 'pending'")}
    assert due == {budget.next_day_ms()}, "they wait for local midnight"
    assert all(r["last_error"].startswith(budget.WAITING_REASON) for r in waiting)
    assert not [o for o in invoke_json("observations") if o["source"] == "heuristic"]

    raised = {**env, "CLAUDE_MEM_OBSERVER_DAILY_TOKENS": "1000000"}
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "reprocess", "--session", "sess-demo", "--wait", "--json"],
                          capture_output=True, text=True, env={**os.environ, **raised}, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["requeued"] == len(waiting)
    assert all_done()
    assert {o["source"] for o in invoke_json("observations")} == {"model"}


def test_several_workers_count_one_budget_and_one_of_them_says_it_is_reached(tmp_path: Path, data_dir: Path) -> None:
    connect(str(tmp_path / "b.db")).close()
    script = textwrap.dedent(f"""
        import sys
        from claude_mem.store import budget
        from claude_mem.store.db import connect, transaction
        conn = connect({str(tmp_path / "b.db")!r})
        for _ in range(40):
            with transaction(conn):
                budget.add(conn, {{"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 1}})
                if budget.mark_reached(conn, 1000):
                    print("reached")
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=ROOT) for _ in range(4)]
    outputs = [p.communicate(timeout=60)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert "".join(outputs).count("reached") == 1
    conn = connect(str(tmp_path / "b.db"))
    day = budget.spent(conn)
    assert (day["replies"], day["total"], day["budget"]) == (160, 160 * 11, 1000)
    # A larger budget reached later is said again; the same one, or a smaller one, is not.
    with transaction(conn):
        assert budget.mark_reached(conn, 1000) is None
        assert budget.mark_reached(conn, 500) is None
        assert budget.mark_reached(conn, 1760)["budget"] == 1760


def test_today_is_the_local_calendar_day(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    try:
        moment = 1795665600  # 2026-11-26 01:20 UTC: still the 25th in Los Angeles
        assert budget.today(moment) == "2026-11-25"
        midnight = budget.next_day_ms(moment) / 1000
        assert time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(midnight)) == "2026-11-26 00:00:00"
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


@pytest.mark.parametrize("fold", [True, False])
def test_a_subagents_calls_are_folded_into_its_task_call_or_observed_one_by_one(tmp_path: Path, data_dir: Path, fold: bool) -> None:
    events = transcript_events(FIXTURE, session_id="sess-sub")
    assert all(r.returncode == 0 for r in play_subprocess(events))
    env = fake_env(tmp_path, [], CLAUDE_MEM_FOLD_SUBAGENTS="1" if fold else "0")
    proc = run_worker("sess-sub", env)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(data_dir / "claude-mem.db") as conn:
        rows = conn.execute("SELECT agent_id, status, processed_by FROM observation_queue WHERE kind = 'tool'").fetchall()
    subagent = [r for r in rows if r[0]]
    assert subagent and all(r[1] == "done" for r in rows)
    assert {r[2] for r in subagent} == ({"folded"} if fold else {"model"})
    sent = "\n".join(user_messages(tmp_path))
    assert "Task (Explore)" in sent, "the Task call, with what the subagent returned, is always observed"
    # The subagent's own calls (a Read of client.py and a Grep for Authorization) reach the model only unfolded.
    assert ("Grep 'Authorization'" in sent) is not fold
