"""A small but varied store for the CLI and transfer tests, built through the store's own
functions (real SQLite, the test's data dir), and a CliRunner helper."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psutil
from click.testing import CliRunner, Result

import claude_mem.cli.commands  # noqa: F401  (registers the commands)
from claude_mem import settings
from claude_mem.cli import cli
from claude_mem.store import queue
from claude_mem.store.db import connect, now_iso, transaction
from claude_mem.store.memories import Observation, Summary, insert_observation, upsert_summary
from claude_mem.store.records import ensure_session, record_prompt
from claude_mem.worker import spawn

DAY_MS = 86_400_000
OLD_MS = int(time.time() * 1000) - 400 * DAY_MS  # well past any retention a test sets


@dataclass
class Stored:
    conn: sqlite3.Connection
    obs: dict[str, int]  # by a short name
    sums: dict[str, int]


def _age(conn: sqlite3.Connection, session_id: str, epoch_ms: int) -> None:
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
        _age(conn, "sess-old", OLD_MS)
    return Stored(conn, obs, sums)


@contextlib.contextmanager
def registered_worker(session_id: str) -> Iterator[str]:
    """This test process registered as the session's live worker, the way a worker registers
    (holding the session's lock, with an info file naming its pid)."""
    config = settings.load()
    os.makedirs(config.workers_dir, exist_ok=True)
    fd = spawn.acquire_lock(config.workers_dir, session_id)
    assert fd is not None
    with open(spawn.info_path(config.workers_dir, session_id), "w") as fh:
        json.dump({"session_id": session_id, "pid": os.getpid(), "create_time": psutil.Process().create_time(),
                   "started_at_epoch": int(time.time() * 1000), "synthesizer": "heuristic"}, fh)
    try:
        yield session_id
    finally:
        os.close(fd)


def dead_chroma() -> dict[str, str]:
    """Settings that point the index at a port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return {"CLAUDE_MEM_CHROMA_URL": f"http://127.0.0.1:{s.getsockname()[1]}"}


def one_error_line(output: str) -> str:
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert "Traceback" not in output
    return lines[0]


def invoke(*args: str, code: int = 0, env: dict[str, str] | None = None, input: str | None = None) -> Result:
    result = CliRunner().invoke(cli, list(args), env=env, input=input)
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    return result


def invoke_json(*args: str, env: dict[str, str] | None = None) -> Any:
    return json.loads(invoke(*args, "--json", env=env).stdout)


def fts_ids(conn: sqlite3.Connection, table: str, query: str) -> list[int]:
    return [r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (query,))]


def table_rows(conn: sqlite3.Connection, table: str, key: str) -> list[dict[str, Any]]:
    """Every row without its surrogate id, in a stable order."""
    rows = [{k: v for k, v in dict(r).items() if k != "id"} for r in conn.execute(f"SELECT * FROM {table}")]
    return sorted(rows, key=lambda r: json.dumps([r[k] for k in key.split(",")], default=str))
