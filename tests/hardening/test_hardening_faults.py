"""Faults: workers killed with SIGKILL at random moments, a model that fails in every way it
can, a database that turns read-only or runs out of disk mid-session, a semantic index that is
down or deleted. Hooks must still exit 0 quickly, nothing queued may be lost or stored twice,
search must fall back to keywords and say so, and `doctor --fix` / `reindex` must bring
everything back."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.replay import play_subprocess, store_in_process
from claude_mem.store.db import connect
from tests.hardening.support import (
    FIXTURES,
    expected_tool_ids,
    kill_mid_work,
    leftover_processes,
    model_env,
    record,
    rows,
    session_events,
    transcripts,
)

FIXTURE = sorted(FIXTURES.glob("*.jsonl"))[0]


def worker_argv(session_id: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "claude_mem", "worker", "--session", session_id, *extra]


def store(data_dir: Path, events: list) -> None:
    """Fill the queue through the hooks' own code, in-process (the hooks are not under test here)."""
    old = os.environ.get("CLAUDE_MEM_DATA_DIR")
    os.environ["CLAUDE_MEM_DATA_DIR"] = str(data_dir)
    try:
        config = settings.load(strict=True)
        config.ensure_dirs()
        conn = connect(config.db_path)
        store_in_process(config, conn, [e.payload for e in events])
        conn.close()
    finally:
        if old is not None:
            os.environ["CLAUDE_MEM_DATA_DIR"] = old


def drain(data_dir: Path, session_id: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(worker_argv(session_id, "--drain"), env={**os.environ, **env, "CLAUDE_MEM_DATA_DIR": str(data_dir)},
                          capture_output=True, text=True, timeout=timeout)


def titles(data_dir: Path, session_id: str) -> list[str]:
    return [r["title"] for r in rows(data_dir / "claude-mem.db", "SELECT title FROM observations WHERE session_id = ?", (session_id,))]


# --- workers killed at random moments ----------------------------------------------------------

def test_workers_killed_at_random_moments(tmp_path: Path, data_dir: Path, long_run: bool) -> None:
    path = transcripts()[0]
    session = "chaos"
    events = session_events(path, session, tmp_path / "proj", None if long_run else 30)
    turn_s = 0.3
    env = model_env(tmp_path, default={"per_event": True, "tag_project": True, "sleep": turn_s})

    reference_dir = tmp_path / "reference"
    store(reference_dir, events)
    assert drain(reference_dir, session, env).returncode == 0
    reference = titles(reference_dir, session)
    assert reference

    store(data_dir, events)
    rng = random.Random(20261122)
    kills = 15 if long_run else 4
    interrupted = 0
    for _ in range(kills):
        proc = subprocess.Popen(worker_argv(session), env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not kill_mid_work(proc, data_dir / "claude-mem.db", session, rng, turn_s):
            break  # the work is done: later kills would prove nothing
        interrupted += 1
    final = drain(data_dir, session, env)
    assert final.returncode == 0, final.stderr[-2000:]

    queue = rows(data_dir / "claude-mem.db", "SELECT status, last_error FROM observation_queue")
    stored = titles(data_dir, session)
    lost = len(set(reference) - set(stored)) + sum(1 for r in queue if r["status"] not in ("done", "skipped"))
    duplicated = len(stored) - len(set(stored))
    leaked = leftover_processes(data_dir, timeout=30)
    record("faults: kill -9 of workers", events=len(queue), lost=lost, duplicated=duplicated, leaked=len(leaked),
           note=f"{interrupted} kills mid-work")
    assert all(r["status"] == "done" or (r["status"] == "skipped" and r["last_error"]) for r in queue)
    assert sorted(stored) == sorted(reference), "the same memories as an undisturbed run: none lost, none twice"
    assert leaked == []
    assert interrupted >= min(kills, 3), f"only {interrupted} kill(s) landed while work was left"


# --- a model that fails in every way -----------------------------------------------------------

GARBAGE = "Sure! Here are my thoughts on the session, in prose and without any markup at all."
CUT_MID_XML = "<observation><type>bugfix</type><title>Fixed the parser for trunc"


def test_model_failures_lose_nothing(tmp_path: Path, data_dir: Path) -> None:
    session = "model-faults"
    events = session_events(FIXTURE, session, tmp_path / "proj")
    failures = [{"error": "overloaded"}, {"reply": GARBAGE}, {"crash": True, "partial": "<observation><ti"},
                {"sleep": 5, "reply": "too late"}, {"reply": CUT_MID_XML}, {"error": "rate_limit"}, {"error": "auth"},
                {"error": "api_error"}]
    # Two attempts: the crash and the timeout in a row use up one batch's, so `retry` is exercised.
    env = model_env(tmp_path, steps=failures, CLAUDE_MEM_OBSERVER_TIMEOUT_S="2", CLAUDE_MEM_MAX_ATTEMPTS="2")
    store(data_dir, events)
    first = drain(data_dir, session, env)
    assert first.returncode == 0, first.stderr[-2000:]
    db = data_dir / "claude-mem.db"
    after_failures = rows(db, "SELECT status, attempts, last_error FROM observation_queue")
    assert all(r["status"] in ("done", "skipped") for r in after_failures)
    assert all(r["last_error"] for r in after_failures if r["status"] == "skipped"), "a skipped row says why"
    skipped = sum(r["status"] == "skipped" for r in after_failures)
    assert skipped, "some event used up its attempts"
    retry = subprocess.run([sys.executable, "-m", "claude_mem", "retry"], env={**os.environ, **env},
                           capture_output=True, text=True, timeout=60)
    assert retry.returncode == 0, retry.stderr
    assert drain(data_dir, session, env).returncode == 0
    queue = rows(db, "SELECT status FROM observation_queue")
    raw = rows(db, "SELECT reply, error FROM raw_replies")
    outage = rows(db, "SELECT observer_error FROM sdk_sessions WHERE claude_session_id = ?", (session,))
    lost = sum(r["status"] != "done" for r in queue)
    record("faults: model errors (8 kinds)", events=len(queue), lost=lost, note=f"{skipped} skipped then retried, {len(raw)} raw kept")
    assert lost == 0
    assert any(GARBAGE in r["reply"] for r in raw), "a reply with nothing usable is kept raw"
    assert outage and outage[0]["observer_error"] is None, "the auth outage was recorded, then cleared by a good turn"
    log = (data_dir / "logs" / "claude-mem.log").read_text()
    assert log.count("the model cannot be used") == 1, "one outage, reported once"
    # (the rate_limit step answers a summary's firm retry here, whose failure only means "derive it")
    for kind in ("overloaded", "crashed", "timeout", "api_error"):
        assert f"model failed ({kind}" in log, f"the {kind} failure really happened"
    assert titles(data_dir, session)


# --- the database turns read-only, or the disk fills up ------------------------------------------

@contextlib.contextmanager
def immutable(path: Path) -> Iterator[None]:
    """Read-only even for root (the immutable attribute); plain permissions otherwise."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
            pytest.fail("running as root and `chattr +i` does not work here: cannot make the data dir read-only")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        return
    mode = path.stat().st_mode
    path.chmod(mode & ~0o222)
    try:
        yield
    finally:
        path.chmod(mode)


@contextlib.contextmanager
def full_disk(db: Path, tmp_path: Path) -> Iterator[None]:
    """The database (through a symlink) on a tiny tmpfs that is then filled to the last byte."""
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(tiny)], capture_output=True)
    if mounted.returncode:
        pytest.fail(f"cannot mount a tmpfs to fill: {mounted.stderr.decode().strip()}")
    try:
        for suffix in ("", "-wal", "-shm"):
            source = db.with_name(db.name + suffix)
            if source.exists():
                shutil.copy2(source, tiny / source.name)
                source.unlink()
            source.symlink_to(tiny / source.name)
        filler = tiny / "filler"
        with open(filler, "wb", buffering=0) as fh, contextlib.suppress(OSError):
            while True:
                fh.write(b"\0" * 4096)
        yield
        filler.unlink()
        for suffix in ("", "-wal", "-shm"):
            link = db.with_name(db.name + suffix)
            if link.is_symlink():
                target = tiny / link.name
                link.unlink()
                if target.exists():
                    shutil.copy2(target, link)
    finally:
        subprocess.run(["umount", "-l", str(tiny)], check=False)


@pytest.mark.parametrize("fault", ["read-only", "disk-full"])
def test_storage_faults_mid_session_lose_nothing(fault: str, tmp_path: Path, data_dir: Path) -> None:
    session = f"storage-{fault}"
    events = session_events(FIXTURE, session, tmp_path / "proj")
    env = {**os.environ}
    a, b = len(events) // 3, 2 * len(events) // 3
    results = play_subprocess(events[:a], env=env)
    db = data_dir / "claude-mem.db"
    with immutable(data_dir) if fault == "read-only" else full_disk(db, tmp_path):
        during = play_subprocess(events[a:b], env=env)
        spooled = [p for p in (data_dir / "spool").glob("*.json")]
    results += during + play_subprocess(events[b:], env=env)
    assert all(r.returncode == 0 for r in results)
    assert any(r.stderr for r in during), "the fault was real: hooks said they spooled"
    assert spooled, "events the database could not take were kept in the spool"
    assert all("kept in" in r.stderr for r in during if r.stderr and r.command != "context")
    drained = subprocess.run(worker_argv(session, "--drain", "--synthesizer", "heuristic"), env=env, capture_output=True, text=True,
                             timeout=300)
    assert drained.returncode == 0, drained.stderr[-2000:]

    wanted = expected_tool_ids(events)
    queue = rows(db, "SELECT tool_use_id, kind, status FROM observation_queue")
    queued = [r["tool_use_id"] for r in queue if r["kind"] == "tool"]
    prompts = rows(db, "SELECT prompt_number FROM user_prompts WHERE session_id = ? ORDER BY prompt_number", (session,))
    lost = len(wanted - set(queued))
    max_hook = max(r.seconds for r in during) * 1000
    record(f"faults: database {fault}", events=len(queue), lost=lost, duplicated=len(queued) - len(set(queued)), max_hook_ms=max_hook,
           note=f"{len(spooled)} spooled, then stored")
    assert lost == 0 and len(queued) == len(set(queued))
    assert [p["prompt_number"] for p in prompts] == list(range(1, len(prompts) + 1)), "prompts keep their order"
    assert all(r["status"] == "done" for r in queue)
    assert list((data_dir / "spool").glob("*.json")) == []
    assert max_hook < 10_000, "a hook facing a broken database still returns quickly"


# --- the semantic index down, or deleted -----------------------------------------------------------

def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "claude_mem", *args], env={**os.environ, **(env or {})}, capture_output=True,
                          text=True, timeout=300)


def test_index_down_or_deleted_then_repaired(tmp_path: Path, data_dir: Path) -> None:
    session = "index-faults"
    events = session_events(FIXTURE, session, tmp_path / "proj")
    store(data_dir, events)
    # A Chroma server that is not there: capture goes on, search says it answered from keywords.
    down = {"CLAUDE_MEM_CHROMA_URL": "http://127.0.0.1:9"}
    worker = drain(data_dir, session, {**down, "CLAUDE_MEM_SYNTHESIZER": "heuristic"})
    assert worker.returncode == 0, worker.stderr[-2000:]
    assert all(r["status"] == "done" for r in rows(data_dir / "claude-mem.db", "SELECT status FROM observation_queue"))
    found = cli("search", "config", "--json", env=down)
    assert found.returncode in (0, 1), found.stderr
    answer = json.loads(found.stdout)
    assert answer["mode"] == "fts" and "keyword" in (answer.get("note") or "")

    # Back to the embedded index, which holds nothing yet: doctor sees the drift and --fix indexes.
    doctor = cli("doctor", "--json")
    assert doctor.returncode == 1 and any(f["check"].startswith("index") and not f["ok"] for f in json.loads(doctor.stdout))
    fixed = cli("doctor", "--fix", "--json")
    assert any(f["check"].startswith("index") and f["fixed"] for f in json.loads(fixed.stdout)), fixed.stdout
    assert cli("doctor").returncode == 0

    # The index folder deleted: search still answers (keywords), reindex rebuilds it.
    shutil.rmtree(data_dir / "chroma")
    after_delete = json.loads(cli("search", "config", "--json").stdout)
    assert after_delete["hits"], "keyword results survive a deleted index"
    rebuilt = cli("reindex", "--json")
    assert rebuilt.returncode == 0, rebuilt.stderr
    hybrid = json.loads(cli("search", "config", "--json").stdout)
    assert hybrid["mode"] == "hybrid" and hybrid["hits"]
    assert cli("doctor").returncode == 0
    record("faults: index down, then deleted", events=len(events), note="keyword fallback said so; doctor --fix, reindex")
