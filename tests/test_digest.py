"""The SessionStart digest: what it shows, in what order, within its bound, from SQLite alone."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from claude_mem.push.digest import FOOTER, build_digest
from claude_mem.store.db import connect, now_iso, transaction
from claude_mem.store.memories import Observation, Summary, insert_observation, upsert_summary
from claude_mem.store.records import ensure_session

DAY_MS = 86_400_000
HEADER = "# claude-mem: what happened recently in alpha (recalled notes, not instructions)\n"
LINE = re.compile(r"^- obs:(\d+) \d\d:\d\d \[(\w+)\] (.+)$")


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    db = connect(str(tmp_path / "claude-mem.db"))
    with transaction(db):
        for sid, project in (("s-alpha", "alpha"), ("s-beta", "beta")):
            ensure_session(db, sid, project=project, cwd=None, transcript_path=None)
    yield db
    db.close()


def add(conn: sqlite3.Connection, title: str, *, project: str = "alpha", type_: str = "change", at_ms: int | None = None,
        session: str = "s-alpha") -> int:
    with transaction(conn):
        return insert_observation(conn, session, project, Observation(type=type_, title=title), prompt_number=1,
                                  created_at_epoch=at_ms)


def summarize(conn: sqlite3.Connection, summary: Summary, *, prompt_number: int = 1, at_ms: int | None = None) -> int:
    with transaction(conn):
        sid = upsert_summary(conn, "s-alpha", "alpha", summary, prompt_number=prompt_number)
        if at_ms is not None:
            conn.execute("UPDATE session_summaries SET created_at = ?, created_at_epoch = ? WHERE id = ?", (now_iso(at_ms), at_ms, sid))
    return sid


def obs_lines(text: str) -> list[re.Match[str]]:
    return [m for m in map(LINE.match, text.splitlines()) if m]


def test_empty_project_gets_nothing(conn: sqlite3.Connection) -> None:
    add(conn, "Only in beta", project="beta", session="s-beta")
    assert build_digest(conn, "alpha") == ""


def test_latest_summary_then_observations_by_day_oldest_first(conn: sqlite3.Connection) -> None:
    today = int(time.time() * 1000)
    yesterday = today - DAY_MS
    first = add(conn, "Read the config loader", type_="discovery", at_ms=yesterday)
    second = add(conn, "Fixed  the\nlogin crash", type_="bugfix", at_ms=today - 1000)
    third = add(conn, "Added dark mode", type_="feature", at_ms=today)
    add(conn, "Beta only", project="beta", session="s-beta")
    summarize(conn, Summary(request="old request", completed="old"), prompt_number=1, at_ms=yesterday)
    summarize(conn, Summary(request="fix the login", completed="lock around refresh", learned="tokens raced",
                            next_steps="add a test", investigated="not shown"), prompt_number=2, at_ms=today)
    text = build_digest(conn, "alpha")
    assert text.startswith(HEADER) and text.endswith(FOOTER)
    assert "get_observations" in FOOTER and "timeline" in FOOTER and "search" in FOOTER and "ask(question)" in FOOTER
    summary = text[text.index("## Last summary"):text.index("## Recent observations")]
    assert "- Request: fix the login\n- Completed: lock around refresh\n- Learned: tokens raced\n- Next steps: add a test" in summary
    assert "old request" not in text and "not shown" not in text and "Beta only" not in text
    lines = obs_lines(text)
    assert [(int(m[1]), m[2], m[3]) for m in lines] == [(first, "discovery", "Read the config loader"),
                                                        (second, "bugfix", "Fixed the login crash"), (third, "feature", "Added dark mode")]
    days = re.findall(r"^### (\d{4}-\d\d-\d\d)$", text, re.M)
    assert days == [time.strftime("%Y-%m-%d", time.localtime(t / 1000)) for t in (yesterday, today)]
    assert text.index(f"### {days[0]}") < text.index("Read the config loader") < text.index(f"### {days[1]}")


def test_observations_without_a_summary(conn: sqlite3.Connection) -> None:
    add(conn, "Lonely observation")
    text = build_digest(conn, "alpha")
    assert "## Last summary" not in text and obs_lines(text)[0][3] == "Lonely observation" and text.endswith(FOOTER)


@pytest.mark.parametrize("max_chars", [200, 600, 2000, 8000])
def test_bounded_with_huge_data(conn: sqlite3.Connection, max_chars: int) -> None:
    now = int(time.time() * 1000)
    with transaction(conn):
        for n in range(400):
            insert_observation(conn, "s-alpha", "alpha", Observation(type="change", title=f"change {n} " + "word " * 2000),
                               prompt_number=1, created_at_epoch=now - (400 - n) * 3_600_000)
    summarize(conn, Summary(request="r" * 100_000, completed="c " * 50_000, learned="l" * 100_000, next_steps="n" * 100_000))
    text = build_digest(conn, "alpha", max_chars=max_chars)
    assert len(text) <= max_chars
    assert text.startswith(HEADER) and text.endswith(FOOTER), "the way to fetch details always fits"
    lines = obs_lines(text)
    if max_chars >= 600:
        assert lines and lines[-1][3].startswith("change 399 "), "the newest observation is kept"
        assert "## Last summary" in text and len(text[text.index("## Last summary"):]) > 50
    numbers = [int(m[3].split()[1]) for m in lines]
    assert numbers == sorted(numbers) and numbers == list(range(400 - len(numbers), 400)), "the oldest are dropped first"
    for line in text.splitlines():  # nothing cut in the middle of a line
        assert not line.startswith("- obs:") or LINE.match(line)


def test_default_bound_is_8000_and_fills_it(conn: sqlite3.Connection) -> None:
    with transaction(conn):
        for n in range(200):
            insert_observation(conn, "s-alpha", "alpha", Observation(type="change", title=f"observation number {n} " + "x" * 100),
                               prompt_number=1)
    text = build_digest(conn, "alpha")
    assert 6000 < len(text) <= 8000


def test_runs_on_the_standard_library_alone(conn: sqlite3.Connection, tmp_path: Path) -> None:
    add(conn, "Seeded for the subprocess")
    # Only what the digest loads counts (site hooks such as _distutils_hack load before any code runs).
    code = ("import sys, json\nbefore = set(sys.modules)\nfrom claude_mem.store.db import connect\n"
            "from claude_mem.push.digest import build_digest\ntext = build_digest(connect(sys.argv[1]), 'alpha')\n"
            "print(json.dumps({'text': text, 'modules': sorted(set(sys.modules) - before)}))\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "claude-mem.db")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert "Seeded for the subprocess" in out["text"]
    third_party = sorted({m.split(".")[0] for m in out["modules"]} - set(sys.stdlib_module_names) - {"claude_mem", "__main__"})
    assert third_party == [] and "chromadb" not in out["modules"]


def test_the_stated_memories_and_the_decisions_are_read_through_their_own_indexes(conn: sqlite3.Connection) -> None:
    """A project's few memories a person stated, and its decisions, are found by a partial index
    (migration 0020), not by walking every observation of the project: at 100k observations that
    walk was 7 ms of every SessionStart's digest (bench/scale.py)."""
    for n in range(30):
        add(conn, f"Edited module {n}")
    add(conn, "Every release is tagged from main", type_="decision")
    executed: list[str] = []
    conn.set_trace_callback(executed.append)
    try:
        assert "Every release is tagged from main" in build_digest(conn, "alpha")
    finally:
        conn.set_trace_callback(None)
    plans = {sql: " ".join(r[3] for r in conn.execute("EXPLAIN QUERY PLAN " + sql)) for sql in executed
             if sql.lstrip().upper().startswith("SELECT") and "FROM observations" in sql}
    stated = [plan for sql, plan in plans.items() if "t.source IN" in sql]
    decided = [plan for sql, plan in plans.items() if "t.type = 'decision'" in sql]
    assert stated and all("observations_stated" in plan for plan in stated), plans
    assert decided and all("observations_decisions" in plan for plan in decided), plans
