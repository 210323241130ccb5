"""A worker's runs: its row in worker_runs (start, end, the tokens its observer spent), and the
model replies it could not use (raw_replies), kept rather than dropped."""

from __future__ import annotations

import json
import sqlite3

from claude_mem.store.costs import USAGE_FIELDS
from claude_mem.store.db import now_ms


def start_run(conn: sqlite3.Connection, session_id: str, *, pid: int, create_time: float, worker_id: str,
              synthesizer: str) -> int:
    """A run's row; returns its id. Call inside a transaction."""
    cur = conn.execute(
        "INSERT INTO worker_runs (session_id, pid, create_time, worker_id, synthesizer, started_at_epoch)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (session_id, pid, create_time, worker_id, synthesizer, now_ms()))
    return int(cur.lastrowid or 0)


def finish_run(conn: sqlite3.Connection, run_id: int | None, reason: str, *, events: int, observations: int) -> None:
    """Why and when the run ended, and what it did. Call inside a transaction."""
    conn.execute(
        "UPDATE worker_runs SET ended_at_epoch = ?, exit_reason = ?, events_done = ?, observations_stored = ?"
        " WHERE id = ?",
        (now_ms(), reason, events, observations, run_id))


def add_usage(conn: sqlite3.Connection, run_id: int, usage: dict[str, int | None]) -> None:
    """Add one model reply and the tokens the SDK says it cost. Call inside a transaction."""
    conn.execute(
        "UPDATE worker_runs SET model_replies = model_replies + 1, input_tokens = input_tokens + ?,"
        " output_tokens = output_tokens + ?, cache_read_input_tokens = cache_read_input_tokens + ?,"
        " cache_creation_input_tokens = cache_creation_input_tokens + ? WHERE id = ?",
        (*(int(usage.get(k) or 0) for k in USAGE_FIELDS), run_id))


def add_echoes(conn: sqlite3.Connection, run_id: int, count: int) -> None:
    """Observations refused as repeats of what the session holds (worker/echoes.py). Call inside a transaction."""
    conn.execute("UPDATE worker_runs SET echoes_refused = echoes_refused + ? WHERE id = ?", (count, run_id))


def keep_raw_reply(conn: sqlite3.Connection, session_id: str, queue_ids: list[int], reply: str, error: str) -> None:
    """A reply that yielded nothing usable, with the queue rows it answered. Call inside a transaction."""
    conn.execute(
        "INSERT INTO raw_replies (session_id, queue_ids, reply, error, created_at, created_at_epoch)"
        " VALUES (?, ?, ?, ?, datetime('now'), ?)",
        (session_id, json.dumps(queue_ids), reply, error, now_ms()))
