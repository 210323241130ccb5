"""The viewer's test store (three projects, hostile markup) and a real viewer process on 127.0.0.1."""

from __future__ import annotations

import re
import signal
import sqlite3
import subprocess
import sys
from typing import Any

from claude_mem.store import queue, records
from claude_mem.store.db import now_ms, transaction
from claude_mem.store.memories import Observation, Summary, insert_observation, upsert_summary

WEBSHOP = "github.com/acme/webshop"


BILLING = "github.com/acme/billing-api"


HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'


def _turn(conn: sqlite3.Connection, session_id: str, project: str, prompt: str, observations: list[Observation],
          summary: Summary | None, *, minutes_ago: int) -> tuple[int, list[int], int | None]:
    """One prompt, what the worker made of it, and its summary, `minutes_ago` (a minute apart each)."""
    start = now_ms() - minutes_ago * 60_000
    number = records.record_prompt(conn, session_id, prompt, None)
    ids = [insert_observation(conn, session_id, project, obs, prompt_number=number, model="claude-haiku-4-5",
                              created_at_epoch=start + (n + 1) * 60_000) for n, obs in enumerate(observations)]
    summary_id = upsert_summary(conn, session_id, project, summary, prompt_number=number) if summary else None
    # The store stamps prompts and summaries with the current time; spread them like a real session.
    conn.execute("UPDATE user_prompts SET created_at_epoch = ? WHERE session_id = ? AND prompt_number = ?", (start, session_id, number))
    conn.execute("UPDATE session_summaries SET created_at_epoch = ? WHERE id = ?", (start + (len(observations) + 1) * 60_000, summary_id))
    return number, [i for i in ids if i is not None], summary_id


def seed_store(conn: sqlite3.Connection) -> dict[str, Any]:
    """Three sessions in two projects, the way a week of work looks; returns the ids tests need."""
    ids: dict[str, Any] = {}
    with transaction(conn):
        for sid, project, cwd in (("sess-checkout-1", WEBSHOP, "/home/ana/webshop"), ("sess-search-2", WEBSHOP, "/home/ana/webshop"),
                                  ("sess-py312-3", BILLING, "/home/ana/billing-api")):
            records.ensure_session(conn, sid, project=project, cwd=cwd, transcript_path=None)
        _, ids["checkout"], ids["checkout_summary"] = _turn(
            conn, "sess-checkout-1", WEBSHOP, "Checkout sometimes charges twice when the user double-clicks Pay. Find out why and fix it.",
            [Observation("discovery", "Pay button has no in-flight guard",
                         subtitle="checkout.js posts the form on every click and the API accepts duplicates",
                         narrative="Two clicks within ~300 ms send two POST /payments requests; both reach the payment provider.",
                         facts=["POST /payments had no idempotency key", "the button stays enabled while the request runs"],
                         concepts=["payments", "idempotency"], files_read=["web/checkout.js", "api/payments.py"]),
             Observation("bugfix", "Idempotency key on payment requests stops double charges",
                         subtitle="the client sends an Idempotency-Key; the API replays the first answer",
                         narrative="checkout.js creates one key per checkout and disables Pay while the request is in flight.\n"
                                   "api/payments.py stores keys for 24 h and returns the stored response for a repeated key.",
                         facts=["POST /payments requires an Idempotency-Key header", "keys are kept 24 h in Redis"],
                         concepts=["payments", "idempotency", "redis"],
                         files_read=["api/payments.py"], files_modified=["api/payments.py", "web/checkout.js"])],
            Summary(request="Stop double charges when Pay is double-clicked",
                    investigated="checkout.js click handling and the payments endpoint",
                    learned="the API accepted duplicate requests: nothing tied two posts of one checkout together",
                    completed="idempotency keys on POST /payments; Pay is disabled while a payment runs",
                    next_steps="add a regression test for the double-submit case",
                    files_edited=["api/payments.py", "web/checkout.js"]), minutes_ago=190)
        _, ids["regression"], _ = _turn(
            conn, "sess-checkout-1", WEBSHOP, "Add a regression test for the double-submit case",
            [Observation("change", "Regression test for double-submitted payments",
                         subtitle="tests/test_payments.py posts twice with one key and expects one charge",
                         facts=["the second request returns the first response"], files_modified=["tests/test_payments.py"])],
            Summary(request="Regression test for double submits", completed="test_double_submit_charges_once passes"), minutes_ago=150)
        _, ids["search"], _ = _turn(
            conn, "sess-search-2", WEBSHOP, "Why is product search so slow on large catalogs?",
            [Observation("discovery", "Product search ran a LIKE scan over 2M rows",
                         subtitle="ILIKE '%term%' on products.name cannot use an index", files_read=["api/search.py"]),
             Observation("decision", "Use PostgreSQL full-text search instead of Elasticsearch",
                         subtitle="a GIN index on a tsvector column; no new service to run",
                         facts=["search p95 went from 2.4 s to 80 ms on the staging catalog"], concepts=["search", "postgresql"],
                         files_modified=["migrations/0042_product_search.sql", "api/search.py"])],
            None, minutes_ago=70)
        _, ids["py312"], _ = _turn(
            conn, "sess-py312-3", BILLING, "Upgrade to Python 3.12 and fix what breaks",
            [Observation("change", "CI and Docker images moved to Python 3.12", files_modified=[".github/workflows/ci.yml", "Dockerfile"]),
             Observation("bugfix", "Replaced datetime.utcnow() calls deprecated in 3.12",
                         facts=["datetime.now(UTC) is used everywhere now"], files_modified=["billing/invoices.py"])],
            Summary(request="Upgrade to Python 3.12", completed="CI green on 3.12", learned="utcnow() is deprecated in 3.12"),
            minutes_ago=25)
        done = [queue.enqueue_tool(conn, "sess-checkout-1", tool_name="Edit", tool_input="{}", tool_response="{}",
                                   tool_use_id=f"toolu_{n}", is_error=False, duration_ms=5, agent_id=None, cwd=None) for n in range(4)]
        queue.mark_done(conn, [i for i in done if i], "model")
        queue.enqueue_tool(conn, "sess-py312-3", tool_name="Bash", tool_input="{}", tool_response="{}", tool_use_id="toolu_p",
                           is_error=False, duration_ms=5, agent_id=None, cwd=None)
        failed = queue.enqueue_tool(conn, "sess-py312-3", tool_name="Read", tool_input="{}", tool_response="{}",
                                    tool_use_id="toolu_f", is_error=False, duration_ms=5, agent_id=None, cwd=None)
        queue.mark_failed(conn, [failed], "observer: model overloaded (529)", max_attempts=1, backoff_s=0)
    return ids


def insert(conn: sqlite3.Connection, session_id: str, project: str, title: str, **fields: Any) -> int:
    with transaction(conn):
        new_id = insert_observation(conn, session_id, project, Observation(fields.pop("type", "feature"), title, **fields), prompt_number=1)
    assert new_id is not None
    return new_id


def page_token(client: Any) -> str:
    """The per-launch token the viewer wrote into its page, as the page's script reads it."""
    found = re.search(r'<meta name="claude-mem-write-token" content="([^"]+)">', client.get("/").text)
    assert found is not None and found[1] != "{{write-token}}"
    return found[1]


def start_viewer(*args: str) -> tuple[subprocess.Popen[str], str]:
    """`claude-mem viewer` in a subprocess; returns it and the address it printed."""
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "viewer", "--no-open", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("claude-mem viewer: http"):
        proc.kill()
        raise AssertionError(f"viewer did not start: {line!r} {proc.communicate()[1]}")
    return proc, line.split(": ", 1)[1].strip()


# What uvicorn logs when a request (an open event stream) outlived the server's graceful shutdown
# and had to be cancelled: a shutdown that waited its whole timeout out.
WAITED_OUT = "timeout graceful shutdown exceeded"


def stop_viewer(proc: subprocess.Popen[str], grace_s: float = 30.0) -> str:
    """SIGTERM, wait for it to exit by itself; returns what it wrote on stderr."""
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"viewer ignored SIGTERM for {grace_s}s") from None
    return proc.stderr.read() if proc.stderr else ""
