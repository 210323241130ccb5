"""The semantic index keeps up with SQLite (issue 51): rows committed while the memory service's
catch-up runs are indexed right after it, not minutes later; a worker's notice the service could
not take is kept and taken when it can; `status` says what the index still lacks."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from claude_mem.processes import take_lock
from claude_mem.service import client, control, notices, protocol
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, Summary, insert_observation, upsert_summary
from claude_mem.store.records import ensure_session
from tests import stores
from tests.cli_helpers import invoke_json
from tests.hardening.support import wait_until

pytestmark = pytest.mark.slow

TOPICS = ("invoice totals", "login tokens", "dark mode", "cache eviction", "ci runners", "audit logs", "search ranking",
          "rate limits", "backups", "feature flags")


def _status(data_dir: Path) -> dict | None:
    try:
        return client.call(str(data_dir), "status", timeout_s=5, start=False)
    except (client.ServiceUnavailable, client.ServiceError):
        return None


def _indexed(conn: sqlite3.Connection, kind: str, ids: list[int]) -> set[int]:
    return {r[0] for r in conn.execute(f"SELECT row_id FROM index_state WHERE kind = ? AND row_id IN ({','.join('?' * len(ids))})",
                                       [kind, *ids])}


def _found(data_dir: Path, query: str, ref_kind: str, row_id: int) -> bool:
    answer = client.call(str(data_dir), "search", {"query": query, "mode": "semantic", "limit": 3, "settings":
                                                   {"chroma_url": "", "semantic_index": True, "embedder": "minilm"}}, timeout_s=20)
    return any(h["kind"] == ref_kind and h["id"] == row_id for h in answer["hits"][:3])


def test_rows_committed_while_the_first_catch_up_runs_are_indexed_right_after(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SERVICE_IDLE_S", "300")
    config = stores.config_for(data_dir)
    config.ensure_dirs()
    conn = connect(config.db_path)
    with transaction(conn):
        ensure_session(conn, "s", project="p", cwd="/src/p", transcript_path=None)
        for n in range(600):  # enough that the first catch-up takes a while to embed
            insert_observation(conn, "s", "p", Observation(type="discovery", title=f"Note {n} about {TOPICS[n % 10]}",
                                                           narrative=f"Looked into {TOPICS[n % 10]}, case {n}."), prompt_number=1)
    client.ensure_started(str(data_dir))
    assert wait_until(lambda: ((_status(data_dir) or {}).get("index") or {}).get("job") is not None, 120), "the catch-up started"
    during: list[int] = []
    # One new row each time the catch-up moves on, while it runs: rows committed after it read its work.
    seen = -1
    while (job := ((_status(data_dir) or {}).get("index") or {}).get("job")) is not None:
        if job["done"] != seen:
            seen = job["done"]
            with transaction(conn):
                during.append(insert_observation(conn, "s", "p", Observation(
                    type="decision", title=f"Committed during the catch-up: rule {len(during)} about pelican migration routes"),
                    prompt_number=2) or 0)
            if len(during) == 1:
                # A worker's notice meanwhile is answered at once, not after the catch-up: its
                # queue rows would otherwise wait out the whole first fill, batch after batch.
                assert client.notify_index(config, during, [], [], wait_s=60) is False
                assert ((_status(data_dir) or {}).get("index") or {}).get("job") is not None, "answered before the catch-up ended"
    assert during, "no row was committed while the catch-up ran"
    assert wait_until(lambda: _indexed(conn, "observation", during) == set(during), 60), \
        f"not indexed: {sorted(set(during) - _indexed(conn, 'observation', during))}"
    assert _found(data_dir, "pelican migration routes rule", "observation", during[-1])
    assert (_status(data_dir) or {})["index_lag"] == 0
    conn.close()


def test_a_notice_the_service_could_not_take_waits_for_it(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SERVICE_IDLE_S", "300")
    stored = stores.build(data_dir)
    config = stored.config
    assert client.call(str(data_dir), "ping", timeout_s=30, wait=True)
    assert wait_until(lambda: (_status(data_dir) or {}).get("index_lag") == 0, 60), "the first catch-up"
    control.stop_service(str(data_dir))
    # A turn's summary rewritten in place (the same prompt, the same id) while no service answers:
    # one is exiting, still holding its lock, so none is started meanwhile.
    conn = connect(config.db_path)
    with transaction(conn):
        summary_id = upsert_summary(conn, "sess-alpha", "alpha", Summary(
            request="fix the login crash", learned="the quokka ledger reconciles at midnight"), prompt_number=1)
    conn.close()
    assert summary_id == stored.sums["login"]
    exiting = take_lock(protocol.lock_path(str(data_dir)), 0)
    assert exiting is not None
    try:
        assert client.notify_index(config, [], [summary_id], []) is False
        assert notices.waiting(str(data_dir)) == 1
        status = invoke_json("status")
        assert status["service"]["answering"] is False and status["service"]["notices_waiting"] == 1
    finally:
        os.close(exiting)
    client.ensure_started(str(data_dir))
    assert wait_until(lambda: notices.waiting(str(data_dir)) == 0, 60), "the service took the notice"
    assert wait_until(lambda: (_status(data_dir) or {}).get("index", {}).get("busy") is False, 60)
    assert _found(data_dir, "when does the quokka ledger reconcile", "summary", summary_id), json.dumps(_status(data_dir))[:300]
