"""The two small stored memories the tests share, written through the store's own functions into a
real SQLite database: `populate()` for the CLI and transfer tests (the test's own data dir, with
queue rows and a 400-day-old session), `build()` / `build_indexed()` for the recall tests (a data
dir of their own, a month-old session). Both return a `Stored`: the rows' ids by a short name."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.settings import Config
from claude_mem.store import queue
from claude_mem.store.db import connect, now_iso, transaction
from claude_mem.store.memories import Observation, Summary, insert_observation, upsert_summary
from claude_mem.store.records import ensure_session, record_prompt

DAY_MS = 86_400_000
NOW_MS = int(time.time() * 1000)
OLD_MS = NOW_MS - 30 * DAY_MS  # build(): the month-old session
ANCIENT_MS = NOW_MS - 400 * DAY_MS  # populate(): well past any retention a test sets


@dataclass
class Stored:
    config: Config
    obs: dict[str, int] = field(default_factory=dict)  # by a short name
    sums: dict[str, int] = field(default_factory=dict)
    prompts: dict[str, int] = field(default_factory=dict)
    conn: sqlite3.Connection | None = None  # populate() leaves its connection open for the test


def age_session(conn: sqlite3.Connection, session_id: str, epoch_ms: int) -> None:
    """Move a whole session back in time (rows are stamped with the current time when made)."""
    iso = now_iso(epoch_ms)
    conn.execute("UPDATE sdk_sessions SET started_at = ?, started_at_epoch = ?, updated_at_epoch = ? WHERE claude_session_id = ?",
                 (iso, epoch_ms, epoch_ms, session_id))
    for table in ("user_prompts", "observations", "session_summaries", "observation_queue", "raw_replies"):
        conn.execute(f"UPDATE {table} SET created_at = ?, created_at_epoch = ? WHERE session_id = ?", (iso, epoch_ms, session_id))
    conn.execute("UPDATE observation_queue SET updated_at_epoch = ? WHERE session_id = ?", (epoch_ms, session_id))


def populate() -> Stored:
    """Three sessions: sess-alpha (two prompts, a heuristic observation, a file-touching one),
    sess-beta (another project), sess-old (400 days old, with finished queue rows)."""
    config = settings.load()
    config.ensure_dirs()
    conn = connect(config.db_path)
    obs: dict[str, int] = {}
    sums: dict[str, int] = {}
    with transaction(conn):
        ensure_session(conn, "sess-alpha", project="alpha", cwd="/src/alpha", transcript_path=None)
        record_prompt(conn, "sess-alpha", "fix the login crash", "p-1")
        obs["login"] = insert_observation(conn, "sess-alpha", "alpha", Observation(
            type="bugfix", title="Fixed login crash", subtitle="auth", narrative="The refresh token was null after logout",
            facts=["token refresh raced with logout", "a lock now guards the refresh"], concepts=["race condition"],
            files_read=["src/auth.py"], files_modified=["src/session.py"]), prompt_number=1)
        obs["tests"] = insert_observation(conn, "sess-alpha", "alpha", Observation(
            type="change", title="Ran the test suite", facts=["make test passed"]), prompt_number=1, source="heuristic")
        sums["alpha1"] = upsert_summary(conn, "sess-alpha", "alpha", Summary(
            request="fix the login", learned="tokens expire", completed="login works again", files_edited=["src/session.py"]),
            prompt_number=1)
        record_prompt(conn, "sess-alpha", "now add a dark theme", None)
        obs["dark"] = insert_observation(conn, "sess-alpha", "alpha", Observation(
            type="feature", title="Dark mode toggle", narrative="Colours come from CSS variables so the theme switches at once",
            files_modified=["web/theme.css"]), prompt_number=2, model="claude-haiku-4-5")
        sums["alpha2"] = upsert_summary(conn, "sess-alpha", "alpha", Summary(request="dark theme", completed="toggle added",
                                                                            next_steps="persist the choice"), prompt_number=2)
        queue.enqueue_tool(conn, "sess-alpha", tool_name="Bash", tool_input='{"command": "make test"}',
                           tool_response='{"stdout": "ok"}', tool_use_id="t-1", is_error=False, duration_ms=10,
                           agent_id=None, cwd="/src/alpha")

        ensure_session(conn, "sess-beta", project="beta", cwd=None, transcript_path=None)
        record_prompt(conn, "sess-beta", "why is CI slow", None)
        obs["ci"] = insert_observation(conn, "sess-beta", "beta", Observation(
            type="discovery", title="The CI runner has two cores", facts=["jobs queue behind each other"]), prompt_number=1)
        sums["beta1"] = upsert_summary(conn, "sess-beta", "beta", Summary(request="why is CI slow", learned="two cores"),
                                       prompt_number=1)

        ensure_session(conn, "sess-old", project="alpha", cwd=None, transcript_path=None)
        record_prompt(conn, "sess-old", "set up the billing database", None)
        obs["billing"] = insert_observation(conn, "sess-old", "alpha", Observation(
            type="decision", title="Chose PostgreSQL for billing", narrative="Transactions across ledgers need it"),
            prompt_number=1)
        queue.enqueue_tool(conn, "sess-old", tool_name="Edit", tool_input='{"file_path": "db.py"}', tool_response="{}",
                           tool_use_id="t-old", is_error=False, duration_ms=5, agent_id=None, cwd=None)
        conn.execute("UPDATE observation_queue SET status = 'done' WHERE session_id = 'sess-old'")
        conn.execute("INSERT INTO raw_replies (session_id, reply, error, created_at, created_at_epoch) VALUES (?, ?, ?, ?, ?)",
                     ("sess-old", "<nonsense/>", "no observation", now_iso(), 0))
        age_session(conn, "sess-old", ANCIENT_MS)
    return Stored(config, obs, sums, conn=conn)


def config_for(data_dir: Path) -> Config:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CLAUDE_MEM_DATA_DIR", str(data_dir))
        return settings.load()


def build(data_dir: Path) -> Stored:
    """Project alpha: a session of two turns (login crash fixed, dark mode added) and a month-old
    one (database choice); project beta: one session about the CI runner."""
    config = config_for(data_dir)
    config.ensure_dirs()
    stored = Stored(config)
    conn = connect(config.db_path)
    try:
        with transaction(conn):
            ensure_session(conn, "sess-alpha", project="alpha", cwd="/src/alpha", transcript_path=None)
            ensure_session(conn, "sess-old", project="alpha", cwd="/src/alpha", transcript_path=None)
            ensure_session(conn, "sess-beta", project="beta", cwd="/src/beta", transcript_path=None)
            stored.prompts["login"] = _prompt(conn, "sess-alpha", "the app crashes at login, please fix it")
            stored.obs["login"] = insert_observation(conn, "sess-alpha", "alpha", Observation(
                type="bugfix", title="Fixed login crash", subtitle="auth", narrative="The refresh token was null after logout.",
                facts=["token refresh raced with logout", "a lock now guards the refresh"], concepts=["race condition"],
                files_read=["src/auth.py"], files_modified=["src/session.py"]), prompt_number=1)
            stored.obs["tests"] = insert_observation(conn, "sess-alpha", "alpha", Observation(
                type="change", title="Ran the test suite", facts=["make test passed"]), prompt_number=1)
            stored.sums["login"] = upsert_summary(conn, "sess-alpha", "alpha", Summary(
                request="fix the login crash", investigated="src/auth.py", learned="tokens were refreshed after logout",
                completed="a lock guards the token refresh", next_steps="add a regression test", files_edited=["src/session.py"]),
                prompt_number=1)
            stored.prompts["dark"] = _prompt(conn, "sess-alpha", "add a dark mode")
            stored.obs["dark"] = insert_observation(conn, "sess-alpha", "alpha", Observation(
                type="feature", title="Dark mode theme", narrative="Colours now come from CSS variables.",
                files_modified=["web/theme.css"]), prompt_number=2)
            stored.sums["dark"] = upsert_summary(conn, "sess-alpha", "alpha", Summary(
                request="add a dark mode", completed="dark theme through CSS variables", next_steps="none"), prompt_number=2)
            stored.prompts["db"] = _prompt(conn, "sess-old", "which database for billing?")
            stored.obs["db"] = insert_observation(conn, "sess-old", "alpha", Observation(
                type="decision", title="Chose PostgreSQL for the billing service", narrative="Transactions and JSON columns.",
                facts=["SQLite was too limited for concurrent writers"]), prompt_number=1)
            stored.sums["db"] = upsert_summary(conn, "sess-old", "alpha", Summary(
                request="pick a database for billing", completed="chose PostgreSQL"), prompt_number=1)
            stored.obs["ci"] = insert_observation(conn, "sess-beta", "beta", Observation(
                type="discovery", title="The CI runner has 2 cores", facts=["parallel tests are capped at 2"]), prompt_number=1)
            stored.sums["ci"] = upsert_summary(conn, "sess-beta", "beta", Summary(request="speed up CI", learned="2 cores"),
                                               prompt_number=1)
            iso = now_iso(OLD_MS)
            for table in ("user_prompts", "observations", "session_summaries"):
                conn.execute(f"UPDATE {table} SET created_at = ?, created_at_epoch = ? WHERE session_id = 'sess-old'", (iso, OLD_MS))
            conn.execute("UPDATE sdk_sessions SET started_at_epoch = ?, updated_at_epoch = ? WHERE claude_session_id = 'sess-old'",
                         (OLD_MS, OLD_MS))
    finally:
        conn.close()
    return stored


def _prompt(conn, session_id: str, text: str) -> int:
    number = record_prompt(conn, session_id, text, None)
    return conn.execute("SELECT id FROM user_prompts WHERE session_id = ? AND prompt_number = ?", (session_id, number)).fetchone()[0]


def build_indexed(data_dir: Path) -> Stored:
    from claude_mem.index.semantic_index import Index

    stored = build(data_dir)
    conn = connect(stored.config.db_path)
    try:
        Index(stored.config).index_missing(conn)
    finally:
        conn.close()
    return stored
