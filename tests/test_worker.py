"""The worker, end to end through real processes: hooks fill the queue, `claude-mem worker`
drains it through the real claude-agent-sdk talking to a fake Claude CLI (tests/fakes)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from claude_mem import settings
from claude_mem.demo import scripted_session
from claude_mem.index.documents import document_texts
from claude_mem.index.semantic_index import Index
from claude_mem.replay import run_hook
from claude_mem.service import client as service_client
from claude_mem.service.control import stop_service
from claude_mem.service.search import search_memory
from claude_mem.store.db import connect

# The CLI in this process: a `claude-mem` subprocess per look (hundreds while a test polls `status`) cost
# seconds of CPU that the workers under test wait for; tests/test_cli_capture.py runs it as a subprocess.
from tests.cli_helpers import invoke_json
from tests.hardening.support import kill_mid_work, our_processes
from tests.waiting import wait_until
from tests.worker_helpers import GOOD_XML, SUMMARY_XML, fake_env, fake_log, play_demo, run_worker, user_messages


def db(data_dir: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(data_dir / "claude-mem.db")
    conn.row_factory = sqlite3.Row
    return conn


def test_heuristic_worker_drains_everything(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    # Not about the index: no memory service to load a model beside the worker.
    proc = run_worker("sess-demo", {"CLAUDE_MEM_SYNTHESIZER": "heuristic", "CLAUDE_MEM_SEMANTIC_INDEX": "0"})
    assert proc.returncode == 0, proc.stderr
    queue = invoke_json("queue")
    assert queue and all(r["status"] == "done" for r in queue)
    observations = invoke_json("observations")
    assert observations and all(o["source"] == "heuristic" for o in observations)
    titles = " ".join(o["title"] for o in observations)
    assert "calc.py" in titles
    facts = " ".join(f for o in observations for f in o["facts"])
    assert "failed" in facts  # the failing pytest run is remembered
    summaries = invoke_json("summaries")
    assert [s["prompt_number"] for s in summaries] == [1, 2]
    assert summaries[0]["files_edited"] and summaries[0]["files_edited"][0].endswith("calc.py")


@pytest.mark.slow
def test_model_worker_stores_observations_and_summaries(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    second = SUMMARY_XML.replace("<summary>", '<summary request="2">').replace("fixed add()", "documented add()")
    reply = GOOD_XML + SUMMARY_XML + "\n" + second
    env = fake_env(tmp_path, [{"reply": reply}])
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    assert all(r["status"] == "done" for r in invoke_json("queue"))
    observations = invoke_json("observations")
    assert [o["title"] for o in observations] == ["add() subtracted instead of adding"]
    obs = observations[0]
    assert obs["type"] == "bugfix" and obs["source"] == "model" and obs["model"] == "claude-haiku-4-5"
    assert "&" in obs["narrative"] and obs["files_modified"] == ["calc.py"]
    summaries = invoke_json("summaries")
    assert [(s["prompt_number"], s["completed"], s["source"]) for s in summaries] == [
        (1, "fixed add()", "model"), (2, "documented add()", "model")]
    assert obs["prompt_number"] == 1, "placed in the turn of the summary after it"
    # files of a summary come from the events, not from the model
    assert summaries[0]["files_read"][0].endswith("calc.py") and summaries[1]["files_edited"][0].endswith("calc.py")

    log = fake_log(tmp_path)
    starts = [e for e in log if e["event"] == "start"]
    assert len(starts) == 1, "one CLI process for the whole session"
    argv = " ".join(starts[0]["argv"])
    assert "--model claude-haiku-4-5" in argv or "--model=claude-haiku-4-5" in argv
    assert "--setting-sources" in argv and "--tools" in argv
    assert os.path.realpath(starts[0]["cwd"]) == os.path.realpath(data_dir / "observer")
    # Both turns, queued before the worker ran, went out in ONE message: each turn's request,
    # events and end, then the request for a summary per turn (it used to take four requests).
    [text] = user_messages(tmp_path)
    order = ["User's request #1: test_add fails", "Read calc.py", "Edit calc.py", "The turn for request #1 has ended",
             "User's request #2: add a docstring", "The turn for request #2 has ended", '<summary request="N">']
    assert [text.find(part) for part in order] == sorted(text.find(part) for part in order) and text.find(order[0]) >= 0
    assert all(part in text for part in order) and text.count("pytest") >= 2
    with db(data_dir) as conn:
        assert conn.execute("SELECT sdk_session_id FROM sdk_sessions").fetchone()[0]
    # What the observer spent, as the SDK reported it per reply, is what `stats` shows.
    [observer] = [s["observer"] for s in invoke_json("stats")["sessions"] if s["session_id"] == "sess-demo"]
    assert observer["replies"] == 1 and observer["output_tokens"] == max(1, len(reply) // 4)
    assert observer["input_tokens"] > 100  # the message, ~1 token per 4 characters in the fake


@pytest.mark.slow
def test_unparseable_reply_is_kept_raw_and_nudged_once(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    garbage = "I think the user fixed a bug but I will not use XML today."
    env = fake_env(tmp_path, [{"reply": garbage}], default={"per_event": True})
    assert run_worker("sess-demo", env).returncode == 0
    with db(data_dir) as conn:
        raw = conn.execute("SELECT reply, error, queue_ids FROM raw_replies").fetchall()
    assert len(raw) == 1 and raw[0]["reply"].startswith(garbage) and "after a nudge" in raw[0]["error"]
    assert len(json.loads(raw[0]["queue_ids"])) == 7, "the batch: both turns, five events and two ends"
    queue = invoke_json("queue")
    assert all(r["status"] == "done" and r["processed_by"] == "model" and r["attempts"] == 0 for r in queue)
    observations = invoke_json("observations")
    assert [len([o for o in observations if o["prompt_number"] == n]) for n in (1, 2)] == [4, 1], \
        "the nudge was answered for the same events, each in its turn"
    assert [(s["prompt_number"], s["source"]) for s in invoke_json("summaries")] == [(1, "model"), (2, "model")]


@pytest.mark.slow
def test_reply_unusable_after_the_nudge_counts_and_splits_the_batch(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    garbage = "Still no XML from me."
    env = fake_env(tmp_path, [{"reply": garbage}, {"reply": garbage}], default={"per_event": True})
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    assert "splitting it" in proc.stdout
    queue = invoke_json("queue")
    assert all(r["status"] == "done" and r["processed_by"] == "model" for r in queue)
    assert all(r["attempts"] == 0 for r in queue), "the halves answered: no event was charged for the batch's failure"
    with db(data_dir) as conn:
        raw = conn.execute("SELECT reply, error FROM raw_replies").fetchall()
    assert len(raw) == 1 and raw[0]["reply"].count(garbage) == 2


@pytest.mark.slow
def test_a_summary_left_out_is_asked_for_once_then_derived(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    # Both turns in one batch; the reply summarises only the second (naming it) and the firmer
    # retry for the first is answered with an observation again.
    docstring = GOOD_XML.replace("add() subtracted instead of adding", "add() has a docstring")
    wrong = "<observation><type>change</type><title>Wrapped up the fix</title><narrative>done</narrative></observation>"
    env = fake_env(tmp_path, [{"reply": docstring + SUMMARY_XML.replace("<summary>", "<summary request='2'>")},
                              {"reply": wrong}])
    assert run_worker("sess-demo", env).returncode == 0
    summaries = invoke_json("summaries")
    assert [(s["prompt_number"], s["source"]) for s in summaries] == [(1, "derived"), (2, "model")]
    first = summaries[0]
    assert "Wrapped up the fix" in first["completed"] and first["request"].startswith("test_add fails")
    placed = {o["title"]: o["prompt_number"] for o in invoke_json("observations")}
    assert placed == {"add() has a docstring": 2, "Wrapped up the fix": 1}, "by the summary after it, and by the retry's turn"
    recv = [e for e in fake_log(tmp_path) if e["event"] == "recv" and "no <summary> block for request" in json.dumps(e)]
    assert len(recv) == 1 and "request #1." in json.dumps(recv[0]), "exactly one firmer retry, for the turn left out"


@pytest.mark.slow
def test_an_outage_counts_no_attempt_and_clears_on_the_first_success(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    env = fake_env(tmp_path, [{"error": "overloaded"}, {"error": "rate_limit"}, {"error": "api_error"}], default={"per_event": True},
                   CLAUDE_MEM_MAX_ATTEMPTS="1")
    proc = run_worker("sess-demo", env, "--idle", "0")
    assert proc.returncode == 0, proc.stderr
    queue = invoke_json("queue")
    assert all(r["status"] == "done" and r["processed_by"] == "model" and r["attempts"] == 0 for r in queue)
    assert proc.stdout.count("no attempt counted") == 3
    assert "the model answers again" in proc.stdout
    log_text = (data_dir / "logs" / "claude-mem.log").read_text()
    assert log_text.count("model unreachable (") == 1, "one outage, reported once"
    assert invoke_json("status")["model_outages"] == [], "cleared by the first good reply"
    # Each failed turn ended its CLI; the next one resumed the conversation cut at the last stored batch.
    starts = [e for e in fake_log(tmp_path) if e["event"] == "start"]
    assert len(starts) == 4 and not any("--resume-session-at" in " ".join(e["argv"]) for e in starts[:1])


@pytest.mark.slow
def test_events_failing_on_their_own_are_skipped_with_synthesizer_model_until_retry(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    env = fake_env(tmp_path, [], default={"error": "invalid_request"}, CLAUDE_MEM_MAX_ATTEMPTS="2")
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    queue = invoke_json("queue")
    assert all(r["status"] == "skipped" and r["attempts"] == 2 and "invalid_request" in r["last_error"] for r in queue)
    assert "splitting it" in proc.stdout
    status = subprocess.run([sys.executable, "-m", "claude_mem", "status"], capture_output=True, text=True,
                            env={**os.environ, **env}, timeout=30)
    assert "7 events skipped" in status.stdout and "claude-mem retry" in status.stdout, status.stdout
    doctor = subprocess.run([sys.executable, "-m", "claude_mem", "doctor", "--json"], capture_output=True, text=True,
                            env={**os.environ, **env}, timeout=60)
    skipped = next(f for f in json.loads(doctor.stdout) if f["check"] == "skipped events")
    assert doctor.returncode == 1 and not skipped["ok"] and "claude-mem retry" in skipped["detail"]

    (tmp_path / "script.json").write_text(json.dumps({"steps": [], "default": {"per_event": True}}))
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "retry", "--json"], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=30)
    assert proc.returncode == 0 and json.loads(proc.stdout) == {"requeued": 7, "sessions": ["sess-demo"]}
    again = subprocess.run([sys.executable, "-m", "claude_mem", "retry"], capture_output=True, text=True,
                           env={**os.environ, **env}, timeout=30)
    assert again.returncode == 1 and "nothing to retry" in again.stderr
    assert run_worker("sess-demo", env).returncode == 0
    assert all(r["status"] == "done" for r in invoke_json("queue"))
    titles = [o["title"] for o in invoke_json("observations")]
    assert len(titles) == len(set(titles)) and any("Edit" in t for t in titles)


@pytest.mark.slow
def test_no_login_is_one_outage_and_heuristics_take_over(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    env = fake_env(tmp_path, [], default={"error": "auth"}, CLAUDE_MEM_SYNTHESIZER="auto")
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    assert all(r["status"] == "done" for r in invoke_json("queue"))
    observations = invoke_json("observations")
    assert observations and all(o["source"] == "heuristic" for o in observations)
    status = invoke_json("status")
    assert len(status["model_outages"]) == 1 and "auth" in status["model_outages"][0]["observer_error"]
    log_text = (data_dir / "logs" / "claude-mem.log").read_text()
    assert log_text.count("the model cannot be used") == 1


def kill_clis_while_starting(tmp_path: Path, count: int) -> list[int]:
    """SIGKILL the next `count` fake CLIs that start, before they answer the handshake (each
    spends FAKE_CLAUDE_START_SLEEP starting up); returns the pids killed, from a thread."""
    import threading

    killed: list[int] = []

    def run() -> None:
        deadline = time.monotonic() + 60
        while len(killed) < count and time.monotonic() < deadline:
            log = fake_log(tmp_path)
            answered = {e["pid"] for e in log if e["event"] == "recv"}
            for entry in log:
                if entry["event"] == "start" and entry["pid"] not in answered and entry["pid"] not in killed and len(killed) < count:
                    with contextlib.suppress(psutil.Error):
                        psutil.Process(entry["pid"]).kill()
                        killed.append(entry["pid"])
            time.sleep(0.02)

    threading.Thread(target=run, daemon=True).start()
    return killed


@pytest.mark.slow
def test_cli_killed_while_starting_is_an_outage_not_a_missing_model(tmp_path: Path, data_dir: Path) -> None:
    """synthesizer=auto: a CLI killed while it starts is waited out like a 529, not "no usable model"."""
    play_demo(tmp_path / "proj")
    env = fake_env(tmp_path, [], CLAUDE_MEM_SYNTHESIZER="auto", CLAUDE_MEM_MAX_ATTEMPTS="1", FAKE_CLAUDE_START_SLEEP="1",
                   CLAUDE_MEM_RETRY_BACKOFF_S="0.1", CLAUDE_MEM_RETRY_BACKOFF_MAX_S="0.2")
    killed = kill_clis_while_starting(tmp_path, 2)
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    assert len(killed) == 2
    assert proc.stdout.count("model failed (killed: the Claude CLI was killed by SIGKILL while starting") == 2, proc.stdout
    queue = invoke_json("queue")
    assert all(r["status"] == "done" and r["processed_by"] == "model" and r["attempts"] == 0 for r in queue), queue
    assert {o["source"] for o in invoke_json("observations")} == {"model"}
    assert "heuristic" not in proc.stdout and "cannot be used" not in (data_dir / "logs" / "claude-mem.log").read_text()
    assert not list((data_dir / "workers").glob("*.starts")), "the start that worked ended the run of failed starts"


@pytest.mark.slow
def test_a_cli_that_keeps_failing_to_start_counts_as_cannot_start_after_the_limit(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    failing = tmp_path / "failing-claude"
    failing.write_text("#!/bin/sh\necho 'error: this CLI is too old for --input-format' >&2\nexit 2\n")
    failing.chmod(0o755)
    env = fake_env(tmp_path, [], CLAUDE_MEM_SYNTHESIZER="auto", CLAUDE_MEM_CLI_PATH=str(failing),
                   CLAUDE_MEM_OBSERVER_START_GIVE_UP_S="1", CLAUDE_MEM_RETRY_BACKOFF_S="0.2", CLAUDE_MEM_RETRY_BACKOFF_MAX_S="0.4")
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    tries = proc.stdout.count("model failed (start_failed: the Claude CLI exited while starting")
    # An outage first, waited out (no attempt counted): at least GIVE_UP_MIN_STARTS (3) failed
    # starts, the last of which may already be the one reported as cannot_start once the 1 s is
    # up (at load ~10 each failed start took ~1 s: two outage lines, and a ">= 3" failed).
    assert tries >= 2, proc.stdout
    assert "switching this session to the heuristic synthesizer" in proc.stdout
    queue = invoke_json("queue")
    assert all(r["status"] == "done" and r["processed_by"] == "heuristic" for r in queue), queue
    log_text = (data_dir / "logs" / "claude-mem.log").read_text()
    assert log_text.count("the model cannot be used (cannot_start: the Claude CLI has failed to start") == 1, log_text
    status = subprocess.run([sys.executable, "-m", "claude_mem", "status"], capture_output=True, text=True,
                            env={**os.environ, **env}, timeout=30)
    assert "model cannot be used since" in status.stdout and "cannot_start" in status.stdout, status.stdout


@pytest.mark.slow
def test_a_missing_cli_with_synthesizer_model_skips_the_events_with_the_reason(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    env = fake_env(tmp_path, [], CLAUDE_MEM_CLI_PATH=str(tmp_path / "no-such-claude"))
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    queue = invoke_json("queue")
    assert queue and all(r["status"] == "skipped" and r["last_error"].startswith("cannot_start: the Claude CLI cannot start")
                         for r in queue), queue
    log_text = (data_dir / "logs" / "claude-mem.log").read_text()
    assert log_text.count("the model cannot be used (cannot_start") == 1, "reported once, not per batch"
    assert "claude-mem retry --session sess-demo" in log_text


@pytest.mark.slow
def test_reprocess_sends_heuristic_events_through_the_model(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    assert run_worker("sess-demo", {"CLAUDE_MEM_SYNTHESIZER": "heuristic", "CLAUDE_MEM_SEMANTIC_INDEX": "0"}).returncode == 0
    env = fake_env(tmp_path, [], default={"per_event": True})
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "reprocess", "--session", "sess-demo", "--wait", "--json"],
                          capture_output=True, text=True, env={**os.environ, **env}, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"requeued": 7, "session": "sess-demo", "worker": "drained"}
    observations = invoke_json("observations")
    assert observations and all(o["source"] == "model" for o in observations)
    assert {s["source"] for s in invoke_json("summaries")} == {"model"}


@pytest.mark.slow
def test_sigterm_releases_the_batch_and_stops_the_cli(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    env = fake_env(tmp_path, [{"sleep": 300, "per_event": True}])
    worker = subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", "sess-demo"],
                              env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(lambda: any(r["status"] == "processing" for r in invoke_json("queue")), 30), "a batch was claimed"
        # The CLI starts after the claim: wait for it, and do not count the worker itself.
        assert wait_until(lambda: [p for p in our_processes(data_dir) if p.pid != worker.pid], 30), "the fake CLI is running"
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=120)  # it does not wait out the reply: the CLI is stopped mid-sleep (below)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert {r["status"] for r in invoke_json("queue")} == {"pending"}
    # The CLI the worker stopped is gone (waited on: a fixed 0.5 s was too short at load ~30).
    assert wait_until(lambda: not our_processes(data_dir), 15), our_processes(data_dir)
    assert [e for e in fake_log(tmp_path) if e["event"] == "slept"] == []  # stopped mid-reply, not waited out
    with db(data_dir) as conn:
        assert conn.execute("SELECT exit_reason FROM worker_runs").fetchone()[0] == "signal"


@pytest.mark.slow
def test_two_sessions_two_workers_never_mix(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "a", "sess-a")
    play_demo(tmp_path / "b", "sess-b")
    env = fake_env(tmp_path, [], default={"per_event": True, "sleep": 0.2})
    procs = [subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", sid, "--drain"],
                              env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) for sid in ("sess-a", "sess-b")]
    for p in procs:
        assert p.wait(timeout=120) == 0
    observations = invoke_json("observations")
    assert {o["session_id"] for o in observations} == {"sess-a", "sess-b"}
    assert all(r["status"] == "done" for r in invoke_json("queue"))
    by_session = {sid: [o for o in observations if o["session_id"] == sid] for sid in ("sess-a", "sess-b")}
    assert len(by_session["sess-a"]) == len(by_session["sess-b"]) > 0
    with db(data_dir) as conn:
        runs = conn.execute("SELECT session_id, worker_id FROM worker_runs").fetchall()
        assert sorted(r["session_id"] for r in runs) == ["sess-a", "sess-b"]
        assert runs[0]["worker_id"] != runs[1]["worker_id"]


@pytest.mark.slow
def test_racing_hooks_start_exactly_one_worker(tmp_path: Path, data_dir: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    env = {"CLAUDE_MEM_WORKER_AUTOSTART": "1", "CLAUDE_MEM_SYNTHESIZER": "heuristic", "CLAUDE_MEM_WORKER_IDLE_S": "3",
           "CLAUDE_MEM_SEMANTIC_INDEX": "0"}
    base = {"session_id": "sess-race", "cwd": str(project)}
    assert run_hook("new", {**base, "hook_event_name": "UserPromptSubmit", "prompt": "go"}, env={**os.environ, **env}).returncode == 0
    payloads = [{**base, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": {"command": f"echo {i}"},
                 "tool_response": {"stdout": str(i), "stderr": ""}, "tool_use_id": f"t{i}"} for i in range(12)]
    procs = [subprocess.Popen([sys.executable, "-m", "claude_mem", "save"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={**os.environ, **env}) for _ in payloads]
    for p, payload in zip(procs, payloads, strict=True):
        p.stdin.write(json.dumps(payload).encode())
        p.stdin.close()
    for p in procs:
        assert p.wait(timeout=30) == 0
    deadline = time.time() + 60
    while time.time() < deadline:
        if all(r["status"] == "done" for r in invoke_json("queue")):
            break
        time.sleep(0.3)
    queue = invoke_json("queue")
    assert len([r for r in queue if r["kind"] == "tool"]) == 12 and all(r["status"] == "done" for r in queue)
    with db(data_dir) as conn:
        runs = conn.execute("SELECT COUNT(*) FROM worker_runs WHERE session_id = 'sess-race'").fetchone()[0]
    assert runs == 1
    # and it goes away by itself after the idle time
    deadline = time.time() + 30
    while time.time() < deadline and invoke_json("workers"):
        time.sleep(0.5)
    assert invoke_json("workers") == []


# Each run is one kill at a random moment, seeded by its number (every fifth lands in Chroma
# writes too); `pytest --long` runs more seeds.
CHAOS_RUNS, CHAOS_RUNS_LONG = 8, 40


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.name == "test_chaos_kill_9_loses_and_duplicates_nothing":
        metafunc.parametrize("run", range(CHAOS_RUNS_LONG if metafunc.config.getoption("--long") else CHAOS_RUNS))


@pytest.mark.slow
def test_chaos_kill_9_loses_and_duplicates_nothing(tmp_path: Path, data_dir: Path, run: int) -> None:
    """kill -9 the worker at a random moment, then let a new one finish: every event done,
    exactly one observation per event, no process left behind."""
    import random

    rng = random.Random(run)
    play_demo(tmp_path / "proj")
    turn_s = rng.choice([0.1, 0.2, 0.4])
    env = fake_env(tmp_path, [], default={"per_event": True, "sleep": turn_s},
                   # Batches small enough that the session takes several, a turn's end (worker/batching.py's
                   # TURN_END_CHARS) always after its events: a kill between two is possible.
                   CLAUDE_MEM_BATCH_CHARS=str(rng.choice([500, 1000])),
                   CLAUDE_MEM_SEMANTIC_INDEX="1" if run % 5 == 0 else "0")  # some kills land in Chroma writes
    worker = subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", "sess-demo", "--drain"],
                              env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert kill_mid_work(worker, data_dir / "claude-mem.db", "sess-demo", rng, turn_s), "the kill landed while work was left"
    assert run_worker("sess-demo", env).returncode == 0
    queue = invoke_json("queue")
    assert all(r["status"] == "done" for r in queue), [r["status"] for r in queue]
    observations = invoke_json("observations")
    titles = [o["title"] for o in observations]
    tools = [r for r in queue if r["kind"] == "tool"]
    assert len(titles) == len(set(titles)) == len(tools)
    assert len(invoke_json("summaries")) == 2
    if env["CLAUDE_MEM_SEMANTIC_INDEX"] == "1":
        conn = connect(str(data_dir / "claude-mem.db"))
        try:
            assert wait_until(lambda: _service_caught_up(data_dir), 120), "the memory service caught the index up"
            assert Index(settings.load()).drift(conn)["in_sync"]
        finally:
            conn.close()
    deadline = time.time() + 20  # the memory service, if one started, exits after its idle time (3 s here)
    while time.time() < deadline and our_processes(data_dir):
        time.sleep(0.2)
    assert not our_processes(data_dir), "an observer CLI (or the service) outlived its worker"


@pytest.mark.slow
def test_session_end_lets_the_worker_exit_once_drained(tmp_path: Path, data_dir: Path) -> None:
    steps = play_demo(tmp_path / "proj")
    end = {**steps[-1][1], "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}
    end.pop("stop_hook_active", None)
    proc = run_hook("summary", end)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    assert [s["status"] for s in invoke_json("sessions")] == ["ended"]
    queue_before = invoke_json("queue")
    assert len(queue_before) == len([s for s in steps if s[0] in ("save", "summary")]), "SessionEnd queues nothing"
    # Not --drain, and a long idle time: only the ended session makes it stop (it says so; idling
    # out would take the 300 s, past the run's timeout).
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", "sess-demo", "--idle", "300"],
                          env={**os.environ, "CLAUDE_MEM_SYNTHESIZER": "heuristic", "CLAUDE_MEM_SEMANTIC_INDEX": "0"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "session ended" in proc.stdout
    assert all(r["status"] == "done" for r in invoke_json("queue"))
    assert [s["status"] for s in invoke_json("sessions")] == ["ended"], "the last summary does not reopen it"


def test_session_end_of_an_unknown_session_creates_nothing(data_dir: Path) -> None:
    proc = run_hook("summary", {"session_id": "never-seen", "cwd": "/tmp", "hook_event_name": "SessionEnd", "reason": "other"})
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    assert invoke_json("sessions") == []


# --- the semantic index, kept in step by the worker ------------------------------------------------

def _index_state(data_dir: Path) -> dict[str, set[int]]:
    with db(data_dir) as conn:
        rows = conn.execute("SELECT kind, row_id FROM index_state").fetchall()
    out: dict[str, set[int]] = {"observation": set(), "summary": set(), "prompt": set()}
    for r in rows:
        out[r["kind"]].add(r["row_id"])
    return out


def _service_caught_up(data_dir: Path) -> bool:
    try:
        return service_client.call(str(data_dir), "status", timeout_s=5, start=False).get("index_lag") == 0
    except (service_client.ServiceUnavailable, service_client.ServiceError):
        return False


@pytest.mark.slow
def test_worker_hands_what_it_commits_to_the_service_and_vector_search_finds_it(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    env = fake_env(tmp_path, [{"reply": GOOD_XML}, {"reply": SUMMARY_XML}, {"reply": "<nothing/>"}, {"reply": SUMMARY_XML}],
                   CLAUDE_MEM_SEMANTIC_INDEX="1")
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    [obs] = invoke_json("observations")
    assert service_client.running(str(data_dir)), "the worker started the memory service"
    assert wait_until(lambda: _service_caught_up(data_dir), 120), "the service indexed what the worker committed"
    state = _index_state(data_dir)
    with db(data_dir) as conn:
        every = {kind: {r[0] for r in conn.execute(f"SELECT id FROM {table}")}
                 for kind, table in (("observation", "observations"), ("summary", "session_summaries"), ("prompt", "user_prompts"))}
    assert state == every and len(every["prompt"]) == 2 and len(every["summary"]) == 2
    conn = connect(str(data_dir / "claude-mem.db"))
    try:
        # Words the observation does not contain: only the vector side can find it.
        result = search_memory(settings.load(), conn, "arithmetic operator mistake", mode="semantic", kinds=("observation",),
                               limit=3)
        assert result.mode == "semantic" and result.note is None
        assert [h.id for h in result.hits] == [obs["id"]]
        index = Index(settings.load())
        assert index.drift(conn)["in_sync"]
        # Each prompt was indexed again with Claude's reply once its turn was over.
        prompt_docs = {doc_id: text for row in conn.execute("SELECT * FROM user_prompts")
                       for doc_id, text, part in document_texts("prompt", row)}
        assert sum(text.startswith(("Fixed add()", "Added a docstring")) for text in prompt_docs.values()) == 2
        assert set(index.vectors(list(prompt_docs))) == set(prompt_docs)
    finally:
        conn.close()


def _unindexed(data_dir: Path) -> int:
    with db(data_dir) as conn:
        return sum(conn.execute(f"SELECT count(*) FROM {table} t WHERE NOT EXISTS (SELECT 1 FROM index_state s"
                                " WHERE s.kind = ? AND s.row_id = t.id)", (kind,)).fetchone()[0]
                   for kind, table in (("observation", "observations"), ("summary", "session_summaries"),
                                       ("prompt", "user_prompts")))


def _waiting(data_dir: Path) -> int:
    with db(data_dir) as conn:
        return conn.execute("SELECT count(*) FROM observation_queue WHERE status IN ('pending', 'processing')").fetchone()[0]


@pytest.mark.slow
def test_a_drained_queue_means_the_index_holds_every_row(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 51: a batch's queue rows stay processing until the memory service has indexed what
    they gave, so whenever the queue is seen drained, search by meaning finds every row (before,
    the worker's notice was answered at once and the last rows were indexed a moment later)."""
    play_demo(tmp_path / "proj")
    env = fake_env(tmp_path, [{"reply": GOOD_XML}, {"reply": SUMMARY_XML}, {"reply": "<nothing/>"}, {"reply": SUMMARY_XML}],
                   CLAUDE_MEM_SEMANTIC_INDEX="1", CLAUDE_MEM_SERVICE_IDLE_S="600")
    monkeypatch.setenv("CLAUDE_MEM_SERVICE_IDLE_S", "600")
    service_client.ensure_started(str(data_dir))
    assert wait_until(lambda: _service_caught_up(data_dir), 120), "the service is up, its first catch-up done"
    worker = subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", "sess-demo", "--drain"],
                              env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen_drained, deadline = 0, time.monotonic() + 90
    try:
        while (worker.poll() is None or not seen_drained) and time.monotonic() < deadline:
            if _waiting(data_dir) == 0:  # read first: what the index holds is read after the queue said drained
                seen_drained += 1
                assert _unindexed(data_dir) == 0, "the queue drained before the index held its rows"
            time.sleep(0.01)
    finally:
        _, err = worker.communicate(timeout=90)
    assert worker.returncode == 0, err
    assert seen_drained and len(invoke_json("observations")) == 1 and len(invoke_json("summaries")) == 2
    assert all(r["status"] == "done" for r in invoke_json("queue"))


def test_rows_a_worker_stored_but_had_not_seen_indexed_end_done_not_run_again(data_dir: Path) -> None:
    """A worker killed while it waits for the index leaves its rows processing with their memories
    committed: the next worker must end them done, not give them to the model a second time."""
    from claude_mem.store import queue, queue_rows
    from claude_mem.store.records import ensure_session

    config = settings.load()
    config.ensure_dirs()
    conn = connect(config.db_path)
    try:
        with conn:
            ensure_session(conn, "s", project="p", cwd="/p", transcript_path=None)
            stored, claimed = (queue.enqueue_tool(conn, "s", tool_name="Bash", tool_input=f'{{"command": "ls {n}"}}',
                                                  tool_response="ok", tool_use_id=f"t{n}", is_error=False, duration_ms=None,
                                                  agent_id=None, cwd="/p") for n in (1, 2))
            queue.claim(conn, [stored, claimed], "dead-worker")
            queue.mark_stored(conn, [stored], "model")
        assert queue.counts_by_status(conn)["processing"] == 2, "stored rows wait for the index as processing"
        with conn:
            assert queue.release_processing(conn, "s") == 1
        status = {r.id: (r.status, r.processed_by) for r in queue_rows.list_rows(conn, session_id="s")}
        assert status == {stored: ("done", "model"), claimed: ("pending", None)}
    finally:
        conn.close()


def _stored(data_dir: Path) -> int:
    with db(data_dir) as conn:
        return conn.execute("SELECT count(*) FROM observation_queue WHERE status = 'processing'"
                            " AND processed_by IS NOT NULL").fetchone()[0]


@pytest.mark.slow
def test_a_sigterm_while_the_index_is_awaited_stops_the_worker_and_its_rows_end_done_once(tmp_path: Path,
                                                                                         data_dir: Path) -> None:
    """The wait for the memory service's index runs beside the worker's event loop (worker/indexing.py):
    a SIGTERM stops the worker while a silent service holds the notice, its rows left stored (their
    memories committed), and the next worker ends them done without observing them again. When the
    wait blocked the loop, the signal was taken only once the wait ran out, the rows done by then."""
    import fcntl
    import socket
    import threading

    from claude_mem.service import protocol

    play_demo(tmp_path / "proj")
    lock = os.open(protocol.lock_path(str(data_dir)), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # a service runs: the worker waits for its answer
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.bind(protocol.socket_path(str(data_dir)))
    silent.listen()
    taken: list[socket.socket] = []  # accepted and never answered
    threading.Thread(target=lambda: [taken.append(silent.accept()[0]) for _ in range(20)], daemon=True).start()
    env = {**os.environ, "CLAUDE_MEM_SYNTHESIZER": "heuristic", "CLAUDE_MEM_SEMANTIC_INDEX": "1"}
    worker = subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", "sess-demo"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert wait_until(lambda: _stored(data_dir) and taken, 60), "a batch stored, its notice with the service"
        worker.send_signal(signal.SIGTERM)
        _, err = worker.communicate(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
        for conn in taken:
            conn.close()
        silent.close()
        os.close(lock)
    stored = _stored(data_dir)
    assert stored, f"the worker stopped during the wait, its rows stored, not done: {err[-2000:]}"
    with db(data_dir) as conn:
        assert conn.execute("SELECT exit_reason FROM worker_runs").fetchone()[0] == "signal"
    with db(data_dir) as conn:
        left = conn.execute("SELECT count(*) FROM observation_queue WHERE status != 'done'").fetchone()[0] - stored
    again = run_worker("sess-demo", {"CLAUDE_MEM_SYNTHESIZER": "heuristic", "CLAUDE_MEM_SEMANTIC_INDEX": "0"})
    assert again.returncode == 0, again.stderr
    # The stored rows end done as they are; only the rows never taken are observed.
    assert f"exiting (drained): {left} events" in again.stdout, (stored, left, again.stdout)
    assert {r["status"] for r in invoke_json("queue")} == {"done"}


@pytest.mark.slow
def test_broken_index_never_stops_capture_and_rows_are_indexed_later(tmp_path: Path, data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    chroma = data_dir / "chroma"
    chroma.mkdir(parents=True)
    (chroma / "chroma.sqlite3").write_bytes(b"not a database " * 200)
    # One service for the whole worker run, however slow the machine: with the suite's 15 s idle
    # a worker slowed down at load ~10 outlived it, and a second service logged the failure again.
    env = fake_env(tmp_path, [], default={"per_event": True}, CLAUDE_MEM_SEMANTIC_INDEX="1", CLAUDE_MEM_SERVICE_IDLE_S="600")
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    assert all(r["status"] == "done" for r in invoke_json("queue"))
    observations = invoke_json("observations")
    assert len(observations) == len([r for r in invoke_json("queue") if r["kind"] == "tool"])
    log = data_dir / "logs" / "claude-mem.log"
    assert wait_until(lambda: "semantic index unavailable" in log.read_text(), 60)
    assert _index_state(data_dir) == {"observation": set(), "summary": set(), "prompt": set()}
    assert log.read_text().count("semantic index unavailable") == 1, "logged once, not once per batch"

    # Chroma repaired (here: its broken folder removed): the next service catches up on start.
    stop_service(str(data_dir))
    shutil.rmtree(chroma)
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    assert wait_until(lambda: _service_caught_up(data_dir), 120)
    state = _index_state(data_dir)
    assert state["observation"] == {o["id"] for o in observations}
    assert len(state["summary"]) == 2 and len(state["prompt"]) == 2
    assert f"index caught up: {len(observations) + 4} row(s) indexed" in log.read_text()


def test_indexer_says_when_its_jobs_are_done(data_dir: Path) -> None:
    from claude_mem.service.indexer import Indexer

    config = settings.load()
    config.ensure_dirs()
    connect(config.db_path).close()
    lines: list[str] = []
    indexer = Indexer(config, Index(config), lines.append)
    assert indexer.idle(), "nothing handed over yet"
    indexer.start()
    indexer.notify([], [])
    assert wait_until(indexer.idle, 60) and indexer._unfinished == 0
    assert indexer.close(10) and not indexer.thread.is_alive()
    assert not any("failed" in line or "unavailable" in line for line in lines), lines


@pytest.mark.slow
def test_workers_beyond_the_cap_wait_and_are_served_oldest_first(tmp_path: Path, data_dir: Path) -> None:
    """max_workers=1 and three sessions: one worker at a time, the others wait in the queue (status
    says who and since when), each exiting or idle worker hands its slot to the oldest waiting."""
    gate = tmp_path / "answer"  # the model answers nobody until the test has seen the others wait
    env = fake_env(tmp_path, [], default={"per_event": True, "hold_until": str(gate)}, CLAUDE_MEM_WORKER_AUTOSTART="1",
                   CLAUDE_MEM_MAX_WORKERS="1", CLAUDE_MEM_WORKER_IDLE_S="60")
    os.environ.update(env)  # the hooks, status and the workers they start all see the cap
    try:
        for n, session in enumerate(("sess-a", "sess-b", "sess-c")):
            for command, payload in scripted_session(str(tmp_path / f"proj-{n}"), session):
                assert run_hook(command, payload).returncode == 0
        # sess-a's worker holds the one slot, its model busy: status says who waits.
        def both_waiting() -> dict | None:
            status = invoke_json("status")
            return status if len(status["waiting_sessions"]) == 2 else None

        status = wait_until(both_waiting, 120)
        assert status and {w["session_id"] for w in status["waiting_sessions"]} == {"sess-b", "sess-c"}, status
        assert [w["session_id"] for w in status["workers"]] == ["sess-a"]
        gate.write_text("")
        most_alive = 0
        deadline = time.time() + 240
        while time.time() < deadline:
            status = invoke_json("status")
            most_alive = max(most_alive, len(status["workers"]))
            if status["queue"]["pending"] == 0 and status["queue"]["processing"] == 0:
                break
            time.sleep(0.3)
        assert all(r["status"] == "done" for r in invoke_json("queue")), "every session was served"
        assert most_alive == 1, "never more workers than max_workers"
        with db(data_dir) as conn:
            runs = conn.execute("SELECT session_id, exit_reason FROM worker_runs ORDER BY id").fetchall()
        served = [r["session_id"] for r in runs]
        assert served[:3] == ["sess-a", "sess-b", "sess-c"], served
        assert all("yielding" in (r["exit_reason"] or "") for r in runs[:2]), [tuple(r) for r in runs]
    finally:
        for key in env:
            os.environ.pop(key, None)
        # The last worker has no one to yield to and would idle out its 60 s: stopped as a logout
        # stops it (SIGTERM), not waited for.
        for proc in our_processes(data_dir):
            with contextlib.suppress(psutil.Error):
                proc.terminate()
        wait_until(lambda: not our_processes(data_dir), 60, step=0.2)
