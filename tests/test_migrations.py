"""The store: migrations, pragmas, refusing a newer schema, carrying data across upgrades, FTS."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from claude_mem.store import memories, records
from claude_mem.store.db import SchemaTooNewError, connect, latest_version, migrations, transaction
from claude_mem.store.queue import QueueStatus
from claude_mem.store.rows import Checkpoint, Prompt, QueuedEvent, Session, StoredObservation, StoredSummary
from tests.migration_helpers import copy_first_migrations

EXPECTED_COLUMNS = {
    "sdk_sessions": {"claude_session_id", "sdk_session_id", "project", "cwd", "user_prompt", "status", "prompt_counter",
                     "started_at", "started_at_epoch", "updated_at_epoch", "completed_at_epoch", "host"},
    "user_prompts": {"session_id", "prompt_number", "prompt_text", "reply_text", "created_at_epoch"},
    "observation_queue": {"session_id", "kind", "tool_name", "tool_input", "tool_response", "tool_use_id", "prompt_number",
                          "status", "attempts", "last_error", "created_at_epoch", "updated_at_epoch", "is_error"},
    "observations": {"session_id", "project", "type", "title", "subtitle", "narrative", "facts", "concepts", "files_read",
                     "files_modified", "prompt_number", "content_hash", "model", "created_at_epoch"},
    "session_summaries": {"session_id", "project", "request", "investigated", "learned", "completed", "next_steps",
                          "files_read", "files_edited", "notes", "prompt_number", "created_at_epoch"},
}
FTS_TABLES = ("observations_fts", "session_summaries_fts", "user_prompts_fts")


def columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}


def tables(conn: sqlite3.Connection) -> set[str]:
    return {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_a_blank_database_gets_every_migration(tmp_path: Path) -> None:
    conn = connect(str(tmp_path / "m.db"))
    known = migrations()
    assert known and [m.version for m in known] == list(range(1, len(known) + 1))
    rows = conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    assert [tuple(r) for r in rows] == [(m.version, m.name) for m in known]
    assert conn.execute("PRAGMA user_version").fetchone()[0] == latest_version() == len(known)
    present = tables(conn)
    for table, expected in EXPECTED_COLUMNS.items():
        assert table in present
        assert expected <= columns(conn, table), (table, expected - columns(conn, table))
    for fts in FTS_TABLES:
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (fts,)).fetchone()[0]
        assert "fts5" in sql.lower()
    # a second open applies nothing and changes nothing
    conn.close()
    conn = connect(str(tmp_path / "m.db"))
    assert conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0] == len(known)


def test_the_queue_statuses_are_those_the_schema_allows(tmp_path: Path) -> None:
    """QueueStatus is the one definition of the statuses; the table's CHECK is the other place
    they are written, and the two must agree (a status the CHECK refuses would fail a worker)."""
    conn = connect(str(tmp_path / "s.db"))
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'observation_queue'").fetchone()[0]
    allowed = re.search(r"CHECK\s*\(\s*status\s+IN\s*\(([^)]*)\)", sql, re.IGNORECASE)
    assert allowed is not None
    assert sorted(v.strip().strip("'") for v in allowed.group(1).split(",")) == sorted(s.value for s in QueueStatus)


@pytest.mark.parametrize(("record", "table"), [(QueuedEvent, "observation_queue"), (Session, "sdk_sessions"),
                                              (Prompt, "user_prompts"), (Checkpoint, "checkpoints"),
                                              (StoredObservation, "observations"), (StoredSummary, "session_summaries")])
def test_each_record_has_one_field_for_each_column_of_its_table(tmp_path: Path, record: type, table: str) -> None:
    """store/rows.py's records are the rows the rest reads: a column a migration adds without its
    field (or a field the table lost) fails here. In the table's order where the order is seen
    (the viewer's JSON of a session and a prompt, `claude-mem observations --json` and `summaries --json`;
    the queue keeps `claude-mem queue --json`'s)."""
    conn = connect(str(tmp_path / "s.db"))
    columns = [r["name"] for r in conn.execute(f"PRAGMA table_info({table})")]
    names = [f.name for f in dataclasses.fields(record)]
    assert sorted(names) == sorted(columns)
    if record is not QueuedEvent:
        assert names == columns


def test_pragmas(tmp_path: Path) -> None:
    conn = connect(str(tmp_path / "m.db"), busy_timeout_ms=4321)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1  # NORMAL
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 4321
    assert connect(str(tmp_path / "m.db")).execute("PRAGMA busy_timeout").fetchone()[0] >= 3000
    with pytest.raises(sqlite3.IntegrityError):  # foreign keys are enforced
        conn.execute("INSERT INTO user_prompts (session_id, prompt_number, prompt_text, created_at, created_at_epoch)"
                     " VALUES ('nope', 1, 'x', 't', 0)")
    with pytest.raises(sqlite3.IntegrityError):  # observation types are checked
        records.ensure_session(conn, "s", project="p", cwd=None, transcript_path=None)
        memories.insert_observation(conn, "s", "p", memories.Observation(type="musing", title="t"), prompt_number=1)


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    connect(path).close()
    newer = latest_version() + 3
    raw = sqlite3.connect(path)
    raw.execute(f"PRAGMA user_version = {newer}")
    raw.close()
    with pytest.raises(SchemaTooNewError) as info:
        connect(path)
    message = str(info.value)
    assert f"version {newer}" in message and f"({latest_version()})" in message
    assert "upgrade" in message


def test_a_failing_migration_leaves_nothing_half_done(tmp_path: Path) -> None:
    directory = tmp_path / "migrations"
    directory.mkdir()
    first = migrations()[0]
    shutil.copy(first.path, directory / os.path.basename(first.path))
    (directory / "0002_broken.sql").write_text("CREATE TABLE half_done (x INTEGER);\nINSERT INTO no_such_table VALUES (1);\n")
    path = str(tmp_path / "m.db")
    with pytest.raises(sqlite3.OperationalError):
        connect(path, migrations_dir=str(directory))
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    assert "half_done" not in tables(conn)
    assert conn.execute("SELECT MAX(version) FROM schema_migrations").fetchone()[0] == 1


# --- upgrades --------------------------------------------------------------------------------

NOW = 1_790_000_000_000
SESSION = "upgrade-session"
# Representative rows for the tables we know; columns a version does not have yet are left out.
FIXTURES: dict[str, dict[str, Any]] = {
    "vector_spaces": {"id": 7, "name": "3f9c-collection@0123456789abcdef"},  # the vectors' row (space 7) points here
    "sdk_sessions": {"claude_session_id": SESSION, "sdk_session_id": "sdk-1", "project": "github.com/acme/widget",
                     "cwd": "/work/widget", "transcript_path": "/t.jsonl", "user_prompt": "fix the flaky test",
                     "status": "active", "prompt_counter": 2, "started_at": "2026-09-01T00:00:00.000Z",
                     "started_at_epoch": NOW, "updated_at_epoch": NOW, "observer_error": None, "synthesizer": "model"},
    "user_prompts": {"session_id": SESSION, "prompt_number": 1, "prompt_text": "fix the flaky test in parser",
                     "prompt_id": "p-1", "created_at": "2026-09-01T00:00:00.000Z", "created_at_epoch": NOW},
    "observation_queue": {"session_id": SESSION, "kind": "tool", "tool_name": "Bash", "tool_input": '{"command": "pytest"}',
                          "tool_response": '{"stdout": "1 failed"}', "tool_use_id": "toolu_1", "is_error": 1,
                          "duration_ms": 1200, "prompt_number": 1, "status": "done", "attempts": 1,
                          "created_at": "2026-09-01T00:00:01.000Z", "created_at_epoch": NOW + 1000,
                          "updated_at_epoch": NOW + 1000, "processed_by": "model"},
    "observations": {"session_id": SESSION, "project": "github.com/acme/widget", "type": "bugfix",
                     "title": "Parser race fixed", "subtitle": "lock around cache", "narrative": "The flaky parser test",
                     "facts": '["cache was shared"]', "concepts": '["concurrency"]', "files_read": '["parser.py"]',
                     "files_modified": '["parser.py"]', "prompt_number": 1, "source": "model", "model": "claude-haiku-4-5",
                     "content_hash": "abc123", "created_at": "2026-09-01T00:00:02.000Z", "created_at_epoch": NOW + 2000},
    "session_summaries": {"session_id": SESSION, "project": "github.com/acme/widget", "request": "fix the flaky test",
                          "investigated": "parser cache", "learned": "shared state", "completed": "added a lock",
                          "next_steps": "none", "files_read": '["parser.py"]', "files_edited": '["parser.py"]',
                          "notes": "", "prompt_number": 1, "source": "model", "created_at": "2026-09-01T00:00:03.000Z",
                          "created_at_epoch": NOW + 3000},
    "raw_replies": {"session_id": SESSION, "queue_ids": "[1]", "reply": "<garbled", "error": "no XML",
                    "created_at": "2026-09-01T00:00:04.000Z", "created_at_epoch": NOW + 4000},
    "worker_runs": {"session_id": SESSION, "pid": 4242, "create_time": 1.5, "worker_id": "w-1", "synthesizer": "model",
                    "started_at_epoch": NOW, "events_done": 3},
    "marks": {"old_id": 1, "new_id": 1, "relation": "supersedes", "author": "person", "reason": "moved to 8443",
                     "created_at_epoch": NOW + 5000},
    "mark_sweep": {"through_id": 3, "upto_id": 9},
    "observation_revisions": {"observation_id": 1, "author": "person", "changed": '["title"]', "type": "bugfix",
                              "title": "Parser race", "narrative": "", "facts": "[]", "created_at_epoch": NOW + 6000},
}
FTS_SHADOW_SUFFIXES = ("_data", "_idx", "_content", "_docsize", "_config")
RENAMED = {"memory_links": "marks", "link_sweep": "mark_sweep"}  # by 0015: the rows stay, under the new name


def user_tables(conn: sqlite3.Connection) -> list[str]:
    """Tables holding data, in creation order (so referenced tables come first), without
    bookkeeping, virtual FTS tables and their shadow tables."""
    rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid").fetchall()
    virtual = [name for name, sql in rows if sql and sql.upper().startswith("CREATE VIRTUAL TABLE")]
    skip = {"schema_migrations", "sqlite_sequence", *virtual}
    skip |= {v + suffix for v in virtual for suffix in FTS_SHADOW_SUFFIXES}
    return [name for name, _ in rows if name not in skip and not name.startswith("sqlite_")]


def representative_row(conn: sqlite3.Connection, table: str) -> dict[str, Any]:
    """The fixture's columns that exist at this version, plus a plain value for any other
    NOT NULL column without a default, so that a table added by a future migration gets a row
    too: the first value its `CHECK (col IN (...))` allows, a session id where it references
    sessions, else a value of its type. (If a table needs more, add it to FIXTURES.)"""
    info = conn.execute(f"PRAGMA table_info({table})").fetchall()
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()[0]
    references = {fk[3]: fk[4] for fk in conn.execute(f"PRAGMA foreign_key_list({table})")}
    rowid_alias = [c[1] for c in info if c[5] and (c[2] or "").upper() == "INTEGER"] if sum(c[5] > 0 for c in info) == 1 else []
    fixture = FIXTURES.get(RENAMED.get(table, table), {})
    row: dict[str, Any] = {}
    for _cid, name, decl, notnull, default, pk in info:
        if name in fixture:
            row[name] = fixture[name]
        elif name in rowid_alias:
            continue
        elif name in references and references[name] == "claude_session_id":
            row[name] = SESSION
        elif (notnull or pk) and default is None:
            allowed = re.search(rf"CHECK\s*\(\s*{name}\s+IN\s*\(\s*'([^']*)'", sql, re.IGNORECASE)
            affinity = (decl or "").upper()
            if allowed:
                row[name] = allowed.group(1)
            elif "INT" in affinity:
                row[name] = 7
            elif "REAL" in affinity or "FLOA" in affinity:
                row[name] = 1.25
            else:
                row[name] = f"{table}-{name}"
    return row


def find_row(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> sqlite3.Row | None:
    where = " AND ".join(f"{name} IS ?" for name in row)
    found = conn.execute(f"SELECT * FROM {table} WHERE {where}", list(row.values())).fetchall()
    assert len(found) <= 1
    return found[0] if found else None


@pytest.mark.parametrize("k", range(1, latest_version() + 1))
def test_data_survives_every_later_migration(tmp_path: Path, k: int) -> None:
    path = str(tmp_path / "m.db")
    conn = connect(path, migrations_dir=str(copy_first_migrations(k, tmp_path / f"first-{k}")))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == k
    inserted: dict[str, dict[str, Any]] = {}
    with transaction(conn):
        for table in user_tables(conn):
            row = representative_row(conn, table)
            names = ", ".join(row)
            marks = ", ".join("?" * len(row))
            conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(row.values()))
            inserted[table] = row
    assert "sdk_sessions" in inserted and "observations" in inserted
    conn.close()

    conn = connect(path)  # the real migrations folder: applies k+1..N
    assert conn.execute("PRAGMA user_version").fetchone()[0] == latest_version()
    versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
    assert versions == list(range(1, latest_version() + 1))
    for table, row in inserted.items():
        found = find_row(conn, RENAMED.get(table, table), row)
        assert found is not None, f"{table} lost (or changed) its row upgrading from version {k}"
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # the search index still finds what was there before the upgrade
    assert conn.execute("SELECT rowid FROM observations_fts WHERE observations_fts MATCH 'parser'").fetchall()
    assert conn.execute("SELECT rowid FROM session_summaries_fts WHERE session_summaries_fts MATCH 'lock'").fetchall()
    assert conn.execute("SELECT rowid FROM user_prompts_fts WHERE user_prompts_fts MATCH 'flaky'").fetchall()
    # ... and the file lookup of the PreToolUse hook (migration 0006) knows the files of older rows.
    obs_id = find_row(conn, "observations", inserted["observations"])["id"]
    files = conn.execute("SELECT name, path, modified FROM observation_files WHERE observation_id = ? ORDER BY modified", (obs_id,))
    assert [tuple(r) for r in files] == [("parser.py", "parser.py", 0), ("parser.py", "parser.py", 1)]


def test_two_processes_migrating_a_new_database_at_once(tmp_path: Path) -> None:
    script = (
        "import sys, time\n"
        "from claude_mem.store.db import connect\n"
        "start = float(sys.argv[2])\n"
        "time.sleep(max(0.0, start - time.time() - 0.02))\n"
        "while time.time() < start:\n"
        "    pass\n"
        "conn = connect(sys.argv[1])\n"
        "print(conn.execute('PRAGMA user_version').fetchone()[0])\n"
    )
    for attempt in range(3):
        path = str(tmp_path / f"race-{attempt}.db")
        start = time.time() + 0.6
        procs = [subprocess.Popen([sys.executable, "-c", script, path, repr(start)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            assert proc.returncode == 0, err
            assert out.strip() == str(latest_version())
        conn = sqlite3.connect(path)
        versions = [r[0] for r in conn.execute("SELECT version FROM schema_migrations ORDER BY version")]
        assert versions == list(range(1, latest_version() + 1))
        conn.close()


def test_opening_a_new_database_waits_for_a_writer_instead_of_failing(tmp_path: Path) -> None:
    """SQLite refuses the switch to WAL at once (no busy wait) while another connection writes
    to a new database; this is what two processes creating the database together run into."""
    path = tmp_path / "new.db"
    path.touch()
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
    timer.start()
    try:
        started = time.monotonic()
        conn = connect(str(path), busy_timeout_ms=5000)
        assert time.monotonic() - started >= 0.2
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == latest_version()
    finally:
        timer.join()
        holder.close()


def fts_ids(conn: sqlite3.Connection, table: str, query: str) -> list[int]:
    return [r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid", (query,))]


def test_fts_triggers_follow_inserts_updates_and_deletes(tmp_path: Path) -> None:
    conn = connect(str(tmp_path / "m.db"))
    with transaction(conn):
        records.ensure_session(conn, "s1", project="p", cwd="/w", transcript_path=None)
        prompt_number = records.record_prompt(conn, "s1", "please refactor the tokenizer", None)
        obs_id = memories.insert_observation(
            conn, "s1", "p", memories.Observation(type="discovery", title="Tokenizer caches vocabulary",
                                                  narrative="found while profiling", facts=["uses lru_cache"]),
            prompt_number=prompt_number)
        summary_id = memories.upsert_summary(conn, "s1", "p", memories.Summary(request="refactor tokenizer",
                                                                               learned="vocabulary is cached"),
                                             prompt_number=prompt_number)
    prompt_id = conn.execute("SELECT id FROM user_prompts").fetchone()[0]
    assert fts_ids(conn, "observations_fts", "vocabulary") == [obs_id]
    assert fts_ids(conn, "observations_fts", "lru_cache") == [obs_id]  # facts are indexed
    assert fts_ids(conn, "session_summaries_fts", "cached") == [summary_id]
    assert fts_ids(conn, "user_prompts_fts", "tokenizer") == [prompt_id]

    with transaction(conn):
        conn.execute("UPDATE observations SET title = 'Parser streams input' WHERE id = ?", (obs_id,))
        memories.upsert_summary(conn, "s1", "p", memories.Summary(request="refactor parser", learned="streaming helps"),
                                prompt_number=prompt_number)
        conn.execute("UPDATE user_prompts SET prompt_text = 'now the parser' WHERE id = ?", (prompt_id,))
    assert fts_ids(conn, "observations_fts", "vocabulary") == []
    assert fts_ids(conn, "observations_fts", "streams") == [obs_id]
    assert fts_ids(conn, "session_summaries_fts", "cached") == []
    assert fts_ids(conn, "session_summaries_fts", "streaming") == [summary_id]
    assert fts_ids(conn, "user_prompts_fts", "tokenizer") == []
    assert fts_ids(conn, "user_prompts_fts", "parser") == [prompt_id]

    with transaction(conn):
        conn.execute("DELETE FROM observations")
        conn.execute("DELETE FROM session_summaries")
        conn.execute("DELETE FROM user_prompts")
    for table, word in (("observations_fts", "streams"), ("session_summaries_fts", "streaming"), ("user_prompts_fts", "parser")):
        assert fts_ids(conn, table, word) == []
        # the index agrees with its content table
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")


# What text/cjk.spaced gives for TOKENIZER_VERSION 1. A change to it without a new version would
# leave stores indexed by the old rules, whose deletes then corrupt the contentless keyword index.
PINNED_SPACED = {
    "缓存失效": " 缓存 存失 失效 ",
    "キャッシュの問題を直した": " キャ ャッ ッシ シュ    問題    直   ",
    "서버 포트 변경": " 서버   포트   변경 ",
    "plain ascii stays": "plain ascii stays",
}


def test_the_tokenizer_version_names_what_spaced_gives() -> None:
    from claude_mem.text import cjk

    assert cjk.TOKENIZER_VERSION == 1, "a new version pins its own output here"
    assert {text: cjk.spaced(text) for text in PINNED_SPACED} == PINNED_SPACED


def _unigrams(text: str | None) -> str:
    """Another rewriting than today's, as a future tokenizer might be: CJK runs as single characters."""
    from claude_mem.text.cjk import segments

    return "".join(f" {' '.join(piece)} " if kind else piece for piece, kind in segments(text or ""))


def _store_two(path: Path) -> tuple[sqlite3.Connection, int, int]:
    conn = connect(str(path))
    with transaction(conn):
        records.ensure_session(conn, "s1", project="p", cwd="/w", transcript_path=None)
        ids = [memories.insert_observation(conn, "s1", "p", memories.Observation(type="discovery", title=title),
                                           prompt_number=1) for title in ("缓存失效的问题", "端口改成八千")]
    return conn, ids[0], ids[1]


@pytest.mark.parametrize("bumped", [True, False])
def test_a_new_tokenizer_version_rebuilds_the_keyword_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            bumped: bool) -> None:
    from claude_mem.store import db

    conn, forgotten, kept = _store_two(tmp_path / "m.db")
    stamp = "SELECT value FROM store_meta WHERE key = 'keyword_tokenizer'"
    assert conn.execute(stamp).fetchone()[0] == "1"
    conn.close()
    monkeypatch.setattr(db, "spaced", _unigrams)  # the code now rewrites text another way
    if bumped:
        monkeypatch.setattr(db, "TOKENIZER_VERSION", 2)
    conn = connect(str(tmp_path / "m.db"))
    assert conn.execute(stamp).fetchone()[0] == ("2" if bumped else "1")
    with transaction(conn):
        conn.execute("DELETE FROM observations WHERE id = ?", (forgotten,))  # forget, through the triggers
    # The kept row is found by the new rules' tokens; nothing is left of the forgotten one.
    assert fts_ids(conn, "observations_fts", _unigrams("端").strip()) == ([kept] if bumped else [])
    left = fts_ids(conn, "observations_fts", "缓存") + fts_ids(conn, "observations_fts", "缓")
    assert (left == []) is bumped, "without a new version, the forgotten row's old tokens stay in the index"


def test_database_file_is_private(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "m.db"
        conn = connect(str(path))
        with transaction(conn):
            records.ensure_session(conn, "s", project="p", cwd=None, transcript_path=None)
    finally:
        os.umask(old)
    for p in (path, Path(str(path) + "-wal"), Path(str(path) + "-shm")):
        if p.exists():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    session = records.get_session(conn, "s")
    assert session is not None and session.project == "p"


@pytest.mark.parametrize("k", [3, latest_version()])
def test_ids_of_forgotten_memories_are_never_reused(tmp_path: Path, k: int) -> None:
    """A ref an agent holds ("obs:2") must never come to name another memory, and the viewer's
    stream follows growing ids: deleting the newest row must not hand its id to the next one,
    in a new database or in one created before ids were made stable (version 3)."""
    path = str(tmp_path / "m.db")
    connect(path, migrations_dir=str(copy_first_migrations(k, tmp_path / "first"))).close()
    conn = connect(path)
    records.ensure_session(conn, "s", project="p", cwd=None, transcript_path=None)
    inserts = {
        "observations": lambda n: memories.insert_observation(conn, "s", "p", memories.Observation(type="change", title=f"step {n}"),
                                                     prompt_number=n),
        "session_summaries": lambda n: memories.upsert_summary(conn, "s", "p", memories.Summary(request=f"turn {n}"), prompt_number=n),
        "user_prompts": lambda n: conn.execute("SELECT id FROM user_prompts WHERE session_id = 's' AND prompt_number = ?",
                                               (records.record_prompt(conn, "s", f"prompt {n}", None),)).fetchone()[0],
    }
    for table, insert in inserts.items():
        first, newest = insert(1), insert(2)
        assert first < newest
        with transaction(conn):
            conn.execute(f"DELETE FROM {table} WHERE id = ?", (newest,))
        assert insert(3) > newest, f"{table} gave a forgotten id to a new row"


def test_rebuilding_observations_keeps_marks_ids_and_the_forgotten_high_water_mark(tmp_path: Path) -> None:
    """0017 rebuilds observations and marks (a CHECK cannot change in place): the drop must not
    cascade to the marks, the ids stay, and an id forgotten before the upgrade is never reused."""
    path = str(tmp_path / "m.db")
    conn = connect(path, migrations_dir=str(copy_first_migrations(16, tmp_path / "first")))
    records.ensure_session(conn, "s", project="p", cwd=None, transcript_path=None)
    with transaction(conn):  # as the code of schema 16 wrote them (today's writes 0017's columns too)
        ids = [conn.execute("INSERT INTO observations (session_id, project, type, title, prompt_number, content_hash, created_at,"
                            " created_at_epoch) VALUES ('s', 'p', 'change', ?, ?, ?, '', 1) RETURNING id",
                            (f"port {n}", n, f"h{n}")).fetchone()[0] for n in (1, 2, 3)]
    with transaction(conn):
        conn.execute("INSERT INTO marks (old_id, new_id, relation, author, created_at_epoch) VALUES (?, ?, 'supersedes', 'person', 1)",
                     (ids[0], ids[1]))
        conn.execute("DELETE FROM observations WHERE id = ?", (ids[2],))
    conn.close()

    conn = connect(path)
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert [tuple(r) for r in conn.execute("SELECT old_id, new_id, relation, author FROM marks")] == [
        (ids[0], ids[1], "supersedes", "person")]
    assert [r[0] for r in conn.execute("SELECT id FROM observations ORDER BY id")] == ids[:2]
    row = conn.execute("SELECT source, provenance, guard_note, released_at_epoch, scope FROM observations WHERE id = ?",
                       (ids[0],)).fetchone()
    assert tuple(row) == ("model", "[]", "", None, "")
    assert memories.insert_observation(conn, "s", "p", memories.Observation(type="change", title="port 4"), prompt_number=4) > ids[2]
    with transaction(conn):  # the wider CHECKs: a person's memory, the agent's mark, a conflict
        conn.execute("UPDATE observations SET source = 'person' WHERE id = ?", (ids[0],))
        conn.execute("INSERT INTO marks (old_id, new_id, relation, author, created_at_epoch) VALUES (?, ?, 'conflicts', 'agent', 2)",
                     (ids[1], ids[0]))
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("UPDATE observations SET source = 'somebody' WHERE id = ?", (ids[0],))
    # the triggers were made again: deleting an observation still cascades to its marks and files
    with transaction(conn):
        conn.execute("DELETE FROM observations WHERE id = ?", (ids[1],))
    assert conn.execute("SELECT count(*) FROM marks").fetchone()[0] == 0
