"""The web viewer's HTTP side, through Starlette's TestClient on a real SQLite store, and the
`claude-mem viewer` command (click's runner for its refusals, a real server for the rest)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psutil
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from claude_mem import settings
from claude_mem.cli.viewer import viewer as viewer_command
from claude_mem.service import client as service_client
from claude_mem.store import injections, records
from claude_mem.store.db import connect, now_ms, transaction
from claude_mem.viewer import data
from claude_mem.viewer.app import STATIC_DIR, create_app
from claude_mem.viewer.guard import TOKEN_COOKIE
from claude_mem.worker import spawn
from tests.viewer_helpers import BILLING, HOSTILE, WAITED_OUT, WEBSHOP, insert, seed_store, start_viewer, stop_viewer


@pytest.fixture
def config(data_dir: Path) -> settings.Config:
    cfg = settings.load()
    cfg.ensure_dirs()
    return cfg


@pytest.fixture
def store(config: settings.Config) -> Iterator[tuple[sqlite3.Connection, dict[str, Any]]]:
    conn = connect(config.db_path)
    ids = seed_store(conn)
    yield conn, ids
    conn.close()


def client_for(config: settings.Config, **kwargs: Any) -> TestClient:
    kwargs.setdefault("use_index", False)
    return TestClient(create_app(config, poll_s=0.02, **kwargs), base_url="http://127.0.0.1:37777")


@pytest.fixture
def client(config: settings.Config, store: tuple[sqlite3.Connection, dict[str, Any]]) -> Iterator[TestClient]:
    with client_for(config) as c:
        yield c


def assert_error(response: httpx.Response, status: int, words: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert words in response.json()["error"]


# -- the page -----------------------------------------------------------------------------------

def test_page_and_assets_are_served_with_a_strict_policy(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script src="/static/app.js"' in page.text and "/static/style.css" in page.text
    csp = page.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"
    for name, kind in (("app.js", "javascript"), ("style.css", "text/css")):
        asset = client.get(f"/static/{name}")
        assert asset.status_code == 200 and kind in asset.headers["content-type"]
    assert client.get("/static/missing.js").status_code == 404


def test_the_page_needs_nothing_from_outside() -> None:
    for name in os.listdir(STATIC_DIR):
        text = Path(STATIC_DIR, name).read_text().replace('xmlns="http://www.w3.org/2000/svg"', "")  # a name, not a fetch
        assert not re.search(r"https?://|//cdn|@import|url\(", text), name


def test_the_script_never_parses_stored_text_as_html() -> None:
    script = Path(STATIC_DIR, "app.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "DOMParser"):
        assert sink not in script, sink


# -- the feed and the event stream --------------------------------------------------------------

def test_feed_lists_the_newest_first_with_a_cursor(client: TestClient, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    conn, ids = store
    body = client.get("/api/feed").json()
    items = body["items"]
    assert {i["kind"] for i in items} == {"prompt", "observation", "summary"}
    assert len(items) == 4 + 7 + 3  # prompts, observations, summaries
    stamps = [i["created_at_epoch"] for i in items]
    assert stamps == sorted(stamps, reverse=True)
    assert body["cursor"] == str(data.current_cursor(conn))
    obs = next(i for i in items if i["kind"] == "observation" and i["id"] == ids["checkout"][1])
    assert obs["title"] == "Idempotency key on payment requests stops double charges" and obs["type"] == "bugfix"
    assert obs["project"] == WEBSHOP and obs["session_id"] == "sess-checkout-1"

    billing = client.get("/api/feed", params={"project": BILLING}).json()["items"]
    assert billing and {i["project"] for i in billing} == {BILLING}
    assert len(client.get("/api/feed", params={"limit": 3}).json()["items"]) == 3


@pytest.mark.parametrize("limit", ["0", "501", "ten", "1.5"])
def test_feed_rejects_a_bad_limit(client: TestClient, limit: str) -> None:
    assert_error(client.get("/api/feed", params={"limit": limit}), 400, "limit")


def test_projects_are_listed_with_their_sessions(client: TestClient) -> None:
    projects = {p["project"]: p["sessions"] for p in client.get("/api/projects").json()["projects"]}
    assert projects == {WEBSHOP: 2, BILLING: 1}


def read_events(response: httpx.Response, want: int, timeout_s: float = 10.0) -> list[tuple[str, str | None, Any]]:
    """(event, id, data) of the stream's item events, until `want` of them arrived."""
    events: list[tuple[str, str | None, Any]] = []
    event, event_id = "", None
    deadline = time.monotonic() + timeout_s
    for line in response.iter_lines():
        assert time.monotonic() < deadline, f"only {events} within {timeout_s}s"
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: ") and event == "item":
            events.append((event, event_id, json.loads(line[6:])))
            if len(events) >= want:
                return events
        elif not line:
            event, event_id = "", None
    raise AssertionError(f"stream ended after {events}")


def test_stream_pushes_rows_as_they_are_stored(client: TestClient, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    conn, _ = store
    cursor = client.get("/api/feed").json()["cursor"]
    with client.stream("GET", "/api/stream", params={"after": cursor, "project": WEBSHOP}) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        insert(conn, "sess-py312-3", BILLING, "Not for this project")  # filtered out, but the cursor moves past it
        first = insert(conn, "sess-search-2", WEBSHOP, "Cached facet counts per category")
        events = read_events(response, 1)
    assert [e[2]["id"] for e in events] == [first]
    assert events[0][2]["kind"] == "observation" and events[0][2]["title"] == "Cached facet counts per category"
    assert data.Cursor.parse(events[0][1]).observation == first


def test_stream_resumes_from_the_last_event_id(client: TestClient, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    conn, _ = store
    cursor = client.get("/api/feed").json()["cursor"]
    missed = insert(conn, "sess-search-2", WEBSHOP, "Stored while the browser was reconnecting")
    with client.stream("GET", "/api/stream", params={"after": "0.0.0"}, headers={"Last-Event-ID": cursor}) as response:
        events = read_events(response, 1)
    assert events[0][2]["id"] == missed  # the header wins over the older `after` of the URL


def test_stream_without_a_cursor_starts_at_the_present(client: TestClient, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    conn, _ = store
    with client.stream("GET", "/api/stream") as response:
        new = insert(conn, "sess-search-2", WEBSHOP, "Only rows stored after opening")
        assert read_events(response, 1)[0][2]["id"] == new


@pytest.mark.parametrize("after", ["1.2", "a.b.c", "1.2.3.4", "-1.0.0"])
def test_stream_rejects_a_bad_cursor(client: TestClient, after: str) -> None:
    assert_error(client.get("/api/stream", params={"after": after}), 400, "cursor")


def test_new_since_reads_a_backlog_in_batches(config: settings.Config, store: tuple[sqlite3.Connection, dict[str, Any]],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    conn, _ = store
    monkeypatch.setattr(data, "STREAM_BATCH", 2)
    start = data.current_cursor(conn)
    new = [insert(conn, "sess-search-2", WEBSHOP, f"Backlog row {n}") for n in range(3)]
    with data.reader(config.db_path) as reader:
        items, cursor, more = data.new_since(reader, start)
        assert [i["id"] for i in items] == new[:2] and more
        items, cursor, more = data.new_since(reader, cursor)
        assert [i["id"] for i in items] == new[2:] and not more


# -- details ------------------------------------------------------------------------------------

def test_observation_detail(client: TestClient, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    _, ids = store
    body = client.get(f"/api/observation/{ids['checkout'][1]}").json()
    obs = body["observation"]
    assert obs["facts"] == ["POST /payments requires an Idempotency-Key header", "keys are kept 24 h in Redis"]
    assert obs["files_modified"] == ["api/payments.py", "web/checkout.js"] and obs["model"] == "claude-haiku-4-5"
    assert body["prompt"]["prompt_text"].startswith("Checkout sometimes charges twice")
    assert body["session"]["claude_session_id"] == "sess-checkout-1" and body["session"]["project"] == WEBSHOP


@pytest.mark.parametrize(("path", "status", "words"), [
    ("/api/observation/99999", 404, "no observation 99999"),
    ("/api/observation/abc", 400, "positive whole number"),
    ("/api/observation/-3", 400, "positive whole number"),
    ("/api/observation/1.5", 400, "positive whole number"),
    ("/api/session/no-such-session", 404, "no session"),
    ("/api/nothing-here", 404, "nothing at /api/nothing-here"),
])
def test_details_answer_bad_ids_clearly(client: TestClient, path: str, status: int, words: str) -> None:
    assert_error(client.get(path), status, words)


def test_session_timeline_is_in_turn_order(client: TestClient, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    _, ids = store
    body = client.get("/api/session/sess-checkout-1").json()
    assert body["session"]["project"] == WEBSHOP
    order = [(e["kind"], e["prompt_number"]) for e in body["entries"]]
    assert order == [("prompt", 1), ("observation", 1), ("observation", 1), ("summary", 1),
                     ("prompt", 2), ("observation", 2), ("summary", 2)]
    assert [e["id"] for e in body["entries"] if e["kind"] == "observation"] == ids["checkout"] + ids["regression"]
    assert body["entries"][3]["next_steps"] == "add a regression test for the double-submit case"


def test_session_ids_with_odd_characters(client: TestClient, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    conn, _ = store
    odd = "team/run 7?x=1#a"
    with transaction(conn):
        records.ensure_session(conn, odd, project=WEBSHOP, cwd=None, transcript_path=None)
        records.record_prompt(conn, odd, "hello", None)
    body = client.get("/api/session/" + quote(odd, safe=""))
    assert body.status_code == 200, body.text
    assert body.json()["session"]["claude_session_id"] == odd


def test_costs_and_what_a_session_was_given(client: TestClient, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    conn, ids = store
    pushed = f"obs:{ids['checkout'][0]}"
    injections.record(conn, "sess-search-2", WEBSHOP, "prompt", [pushed], 400, note="hybrid")
    injections.record(conn, "sess-search-2", WEBSHOP, "fetch", [pushed], 1200)
    injections.record(conn, "sess-py312-3", BILLING, "digest", [], 800, note="startup")
    with transaction(conn):
        conn.execute("INSERT INTO worker_runs (session_id, pid, create_time, worker_id, started_at_epoch, model_replies,"
                     " input_tokens, output_tokens) VALUES ('sess-search-2', 1, 1.0, 'w-costs', ?, 3, 5000, 700)", (now_ms(),))
    body = client.get("/api/stats", params={"project": WEBSHOP}).json()
    assert [p["project"] for p in body["projects"]] == [WEBSHOP]  # the other project's digest is not counted
    total = body["total"]
    assert total["injected_tokens"]["prompt"] == 100 and total["injected_tokens"]["fetch"] == 300
    assert total["injected_tokens"]["digest"] == 0 and total["observer"]["input_tokens"] == 5000
    assert (total["pushed_observations"], total["fetched_observations"], total["fetched_after_push"]) == (1, 1, 1)
    given = client.get("/api/session/sess-search-2").json()["injections"]
    assert [(i["kind"], i["refs"], i["tokens"]) for i in given] == [("prompt", [pushed], 100), ("fetch", [pushed], 300)]
    assert "Memory in context" in (Path(STATIC_DIR) / "app.js").read_text()


# -- search -------------------------------------------------------------------------------------

def test_search_uses_the_shared_search_and_its_filters(client: TestClient, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    _, ids = store
    body = client.get("/api/search", params={"q": "double charges idempotency"}).json()
    assert body["mode"] == "keyword" and body["note"] == "semantic index not configured: keyword results only"
    assert body["hits"][0]["kind"] == "observation" and body["hits"][0]["id"] in ids["checkout"]
    assert {"snippet", "score", "files", "session_id", "project", "title"} <= set(body["hits"][0])
    billing = client.get("/api/search", params={"q": "python upgrade datetime", "project": BILLING}).json()["hits"]
    assert billing and {h["project"] for h in billing} == {BILLING}
    decisions = client.get("/api/search", params={"q": "search", "type": "decision"}).json()["hits"]
    assert [h["id"] for h in decisions] == [ids["search"][1]]
    prompts = client.get("/api/search", params={"q": "python", "kinds": "prompt"}).json()["hits"]
    assert prompts and {h["kind"] for h in prompts} == {"prompt"}


@pytest.mark.parametrize(("params", "words"), [
    ({}, "q is required"),
    ({"q": "   "}, "q is required"),
    ({"q": "x" * 1001}, "longer than 1000"),
    ({"q": "x", "type": "bug"}, "type must be one of"),
    ({"q": "x", "mode": "magic"}, "mode must be one of hybrid, keyword, semantic"),
    ({"q": "x", "kinds": "observation,files"}, "kinds must be"),
    ({"q": "x", "limit": "0"}, "limit must be from 1 to 100"),
])
def test_search_rejects_bad_input(client: TestClient, params: dict[str, str], words: str) -> None:
    assert_error(client.get("/api/search", params=params), 400, words)


@pytest.mark.slow
def test_search_falls_back_to_keywords_when_the_index_is_down(store: tuple[sqlite3.Connection, dict[str, Any]],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]  # nothing listens there once the probe is closed
    monkeypatch.setenv("CLAUDE_MEM_CHROMA_URL", f"http://127.0.0.1:{closed_port}")
    with client_for(settings.load(), use_index=True) as c:
        body = c.get("/api/search", params={"q": "idempotency"}).json()
    assert body["mode"] == "keyword" and body["hits"]
    assert "unavailable" in body["note"] and body["note"].endswith("keyword results only")


def test_search_with_the_index_off_says_so_and_creates_nothing(data_dir: Path, store: tuple[sqlite3.Connection, dict[str, Any]],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INDEX", "0")
    with client_for(settings.load(), use_index=True) as c:
        body = c.get("/api/search", params={"q": "idempotency"}).json()
    assert body["mode"] == "keyword" and body["hits"] and "is off (setting semantic_index)" in body["note"]
    assert not (data_dir / "chroma").exists() and not service_client.running(str(data_dir))


@pytest.mark.slow
def test_first_search_needs_no_index_and_the_service_builds_it(data_dir: Path, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    with client_for(settings.load(), use_index=True) as c:
        first = c.get("/api/search", params={"q": "idempotency"}).json()
        assert first["hits"], first
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with contextlib.suppress(service_client.ServiceUnavailable, service_client.ServiceError):
                if service_client.call(str(data_dir), "status", timeout_s=5, start=False)["index_lag"] == 0:
                    break
            time.sleep(0.2)
        later = c.get("/api/search", params={"q": "idempotency"}).json()
    assert later["mode"] == "hybrid" and later["note"] is None and later["hits"]


def test_search_finds_by_meaning_with_the_real_index(config: settings.Config, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    from claude_mem.index.semantic_index import Index

    conn, ids = store
    index = Index(config)
    index.index_missing(conn)
    with client_for(config, index=index) as c:
        body = c.get("/api/search", params={"q": "customers billed two times", "limit": 5}).json()
    index.close()
    assert body["mode"] == "hybrid" and body["note"] is None
    assert any(h["kind"] == "observation" and h["id"] in ids["checkout"] for h in body["hits"][:3]), body["hits"]


# -- health -------------------------------------------------------------------------------------

def test_health_reports_queue_workers_and_the_last_error(client: TestClient, config: settings.Config) -> None:
    body = client.get("/api/health").json()
    assert body["queue"] == {"pending": 1, "processing": 0, "done": 4, "skipped": 1}
    assert body["counts"] == {"sessions": 3, "prompts": 4, "observations": 7, "summaries": 3, "raw_replies": 0}
    assert body["workers"] == []
    assert body["last_error"]["message"] == "observer: model overloaded (529)" and body["last_error"]["source"] == "queue"

    # A live worker is a process holding the session's lock and described by its info file.
    fd = spawn.acquire_lock(config.workers_dir, "sess-py312-3")
    assert fd is not None
    info = {"session_id": "sess-py312-3", "pid": os.getpid(), "create_time": psutil.Process().create_time(),
            "started_at_epoch": now_ms(), "synthesizer": "heuristic"}
    Path(spawn.info_path(config.workers_dir, "sess-py312-3")).write_text(json.dumps(info))
    try:
        workers = client.get("/api/health").json()["workers"]
        assert [(w["session_id"], w["pid"], w["alive"]) for w in workers] == [("sess-py312-3", os.getpid(), True)]
    finally:
        os.close(fd)
    assert client.get("/api/health").json()["workers"] == []


def test_the_newest_error_wins_whatever_its_source(client: TestClient, config: settings.Config,
                                                   store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    conn, _ = store
    with transaction(conn):
        conn.execute("UPDATE observation_queue SET updated_at_epoch = ? WHERE last_error IS NOT NULL", (now_ms() - 10_000,))
        conn.execute("UPDATE sdk_sessions SET observer_error = 'Not logged in', observer_error_at_epoch = ?"
                     " WHERE claude_session_id = 'sess-search-2'", (now_ms() - 5_000,))
    health = client.get("/api/health").json()
    error = health["last_error"]
    assert (error["source"], error["message"], error["session_id"]) == ("observer", "Not logged in", "sess-search-2")
    [outage] = health["outages"]
    assert outage["claude_session_id"] == "sess-search-2" and outage["observer_error"] == "Not logged in"
    assert outage["waiting"] == 0 and health["skipped"]["count"] == 1 and health["skipped"]["last_error"]
    from claude_mem.logs import log_line

    log_line(config.logs_dir, "worker", "error: chroma index unavailable")
    error = client.get("/api/health").json()["last_error"]
    assert error["source"] == "log" and "chroma index unavailable" in error["message"]


# -- guarding -----------------------------------------------------------------------------------

def test_the_viewer_cannot_write(config: settings.Config, store: tuple[sqlite3.Connection, dict[str, Any]], client: TestClient) -> None:
    with data.reader(config.db_path) as conn, pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("DELETE FROM observations")
    for method in ("POST", "PUT", "DELETE"):
        assert_error(client.request(method, "/api/feed"), 405, "not allowed")
    assert client.get("/api/health").json()["counts"]["observations"] == 7


def test_a_database_removed_under_the_viewer_is_a_clear_503(client: TestClient, config: settings.Config) -> None:
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(config.db_path + suffix):
            os.unlink(config.db_path + suffix)
    assert_error(client.get("/api/feed"), 503, "no database at")


def test_a_broken_database_is_a_json_500_and_a_log_line(config: settings.Config, store: Any) -> None:
    Path(config.db_path).write_bytes(b"this is not an SQLite database" * 200)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(config.db_path + suffix):
            os.unlink(config.db_path + suffix)
    with TestClient(create_app(config, use_index=False), base_url="http://127.0.0.1", raise_server_exceptions=False) as c:
        assert_error(c.get("/api/health", params={"token": "never-logged"}), 500, "DatabaseError")
    from claude_mem.logs import read_tail

    logged = read_tail(config.logs_dir)[-1]
    assert "viewer: error: /api/health failed: DatabaseError" in logged and "never-logged" not in logged


def test_stored_markup_comes_back_as_json_text(client: TestClient, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    conn, _ = store
    new = insert(conn, "sess-search-2", WEBSHOP, HOSTILE, narrative="</script><b>bold</b>")
    response = client.get(f"/api/observation/{new}")
    assert response.headers["content-type"] == "application/json" and response.headers["x-content-type-options"] == "nosniff"
    assert response.json()["observation"]["title"] == HOSTILE


@pytest.mark.parametrize("host", ["evil.example", "192.168.1.20", "127.0.0.1.nip.io"])
def test_a_loopback_viewer_refuses_other_host_names(config: settings.Config, store: Any, host: str) -> None:
    with client_for(config) as c:
        assert_error(c.get("/api/feed", headers={"host": f"{host}:37777"}), 421, "loopback host name")
        assert c.get("/api/feed", headers={"host": "localhost:37777"}).status_code == 200
        assert c.get("/api/feed", headers={"host": "[::1]:37777"}).status_code == 200


def test_token_is_required_on_every_request(config: settings.Config, store: Any) -> None:
    secret = "s3cret-token-value"
    with client_for(config, token=secret, loopback_only=False) as c:
        c.follow_redirects = False
        assert c.get("/api/feed", headers={"host": "viewer.lan:37777"}).status_code == 401  # no Host check off loopback
        for path in ("/api/feed", "/api/health", "/api/stream", "/api/search?q=x", "/static/app.js"):
            assert c.get(path).status_code == 401, path
            assert c.get(path, headers={"authorization": "Bearer wrong-token-value"}).status_code == 401, path
        assert_error(c.get("/api/feed"), 401, "missing or wrong token")
        page = c.get("/")
        assert page.status_code == 401 and "needs its token" in page.text and secret not in page.text
        assert c.get("/api/feed", headers={"authorization": f"Bearer {secret}"}).status_code == 200
        assert c.get("/api/feed", params={"token": secret}).status_code == 200

        opened = c.get("/", params={"token": secret})
        assert opened.status_code == 303 and opened.headers["location"] == "/"
        cookie = opened.headers["set-cookie"]
        assert cookie.startswith(f"{TOKEN_COOKIE}={secret}") and "HttpOnly" in cookie and "SameSite=strict" in cookie
        assert c.get("/").status_code == 200  # the client kept the cookie
        with c.stream("GET", "/api/stream") as response:
            assert response.status_code == 200


# -- the command --------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "code", "words"), [
    (["--host", "0.0.0.0"], 2, "refusing to listen on 0.0.0.0"),
    (["--host", "viewer.example"], 2, "--allow-remote"),
    (["--token", "short"], 2, "8 to 200 characters"),
    (["--token", "has space in it"], 2, "8 to 200 characters"),
    (["--port", "70000"], 2, "70000"),
])
def test_viewer_command_refusals(args: list[str], code: int, words: str) -> None:
    result = CliRunner().invoke(viewer_command, ["--no-open", *args])
    assert result.exit_code == code and words in result.output


def test_viewer_command_needs_a_database() -> None:
    result = CliRunner().invoke(viewer_command, ["--no-open", "--port", "0"])
    assert result.exit_code == 1 and "no database at" in result.output


def test_viewer_command_says_when_the_port_is_taken(store: Any) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        result = CliRunner().invoke(viewer_command, ["--no-open", "--port", str(taken.getsockname()[1])])
    assert result.exit_code == 1 and "pass --port with another number" in result.output


def test_remote_viewer_generates_a_token_and_stops_cleanly(store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INDEX", "0")  # the token and the stop, not search: no service to start
    proc, url = start_viewer("--host", "0.0.0.0", "--allow-remote")
    try:
        address = httpx.URL(url)
        token = address.params["token"]
        assert len(token) >= 24 and "required on every request" in proc.stdout.readline()  # type: ignore[union-attr]
        local = f"http://127.0.0.1:{address.port}"
        assert httpx.get(f"{local}/api/health").status_code == 401
        assert httpx.get(f"{local}/api/health", headers={"authorization": f"Bearer {token}"}).json()["counts"]["sessions"] == 3
        with httpx.stream("GET", f"{local}/api/stream", params={"token": token}) as stream:
            assert stream.status_code == 200
            assert next(stream.iter_lines()) == "retry: 2000"
            stderr = stop_viewer(proc)  # with a stream still open
    finally:
        if proc.poll() is None:
            proc.kill()
    assert WAITED_OUT not in stderr, stderr  # the open stream did not hold the shutdown up
    assert token not in stderr
