"""Helpers for the CLI tests: a CliRunner call that checks the exit code, a registered live worker,
an unreachable Chroma, table snapshots. The stores they run on are in tests/stores.py."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import psutil
from click.testing import CliRunner, Result

from claude_mem import settings
from claude_mem.cli.app import cli
from claude_mem.worker import spawn


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
    # An exception the CLI did not turn into a one-line error fails the test, whatever code it expects.
    result = CliRunner().invoke(cli, list(args), env=env, input=input, catch_exceptions=False)
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
