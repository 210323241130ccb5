"""What a person changes from the viewer: remember, edit and its undo, forget, marks;
and that every write route refuses a request forged by another site, on loopback too: another
Origin (403), no per-launch token or a wrong one (401), a form instead of JSON (415), each
changing nothing. Starlette's TestClient on a real SQLite store (tests/test_viewer_browser.py has
the page doing them in a real browser)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from claude_mem import settings
from claude_mem.store.db import connect
from claude_mem.viewer.app import create_app
from claude_mem.viewer.changes import TOKEN_HEADER
from tests.viewer_helpers import WEBSHOP, page_token, seed_store

HOST = "http://127.0.0.1:37777"


@pytest.fixture
def store(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[sqlite3.Connection, dict[str, Any]]]:
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INDEX", "0")
    config = settings.load()
    config.ensure_dirs()
    conn = connect(config.db_path)
    ids = seed_store(conn)
    yield conn, ids
    conn.close()


@pytest.fixture
def client(store: Any) -> Iterator[TestClient]:
    with TestClient(create_app(settings.load(), use_index=False, poll_s=0.02, project=WEBSHOP), base_url=HOST) as c:
        yield c


def send(client: TestClient, path: str, body: Any, token: str | None, **headers: str) -> Any:
    sent = {"content-type": "application/json", **({TOKEN_HEADER: token} if token is not None else {}), **headers}
    return client.post(path, content=json.dumps(body), headers=sent)


def snapshot(conn: sqlite3.Connection) -> list[Any]:
    return [[tuple(r) for r in conn.execute(f"SELECT * FROM {table} ORDER BY 1")]
            for table in ("observations", "marks", "observation_revisions", "sdk_sessions")]


def write_routes(ids: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    finding, fix = ids["checkout"]
    return [("/api/remember", {"text": "forged: ship on Fridays"}),
            (f"/api/observation/{fix}/edit", {"title": "forged title", "text": "forged text"}),
            (f"/api/observation/{fix}/edit", {"undo": True}),
            (f"/api/observation/{fix}/forget", {}),
            ("/api/marks", {"old": finding, "new": fix})]


def test_the_page_carries_a_token_of_its_launch(store: Any) -> None:
    config = settings.load()
    tokens = []
    for _ in range(2):
        with TestClient(create_app(config, use_index=False), base_url=HOST) as c:
            tokens.append(page_token(c))
    assert tokens[0] != tokens[1] and len(tokens[0]) >= 32


def test_every_write_route_refuses_a_forged_request_and_changes_nothing(client: TestClient,
                                                                         store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    conn, ids = store
    token = page_token(client)
    # The edit and the mark below would change something when sent right: an undo needs an edit first.
    assert send(client, f"/api/observation/{ids['checkout'][1]}/edit", {"text": "an honest edit"}, token).status_code == 200
    before = snapshot(conn)
    for path, body in write_routes(ids):
        refusals = {
            "another site's page, passing the token": send(client, path, body, token, origin="http://evil.example"),
            "another site's page, as a form": client.post(path, data={"text": "x"}, headers={"origin": "http://evil.example"}),
            "a null origin (a sandboxed frame)": send(client, path, body, token, origin="null"),
            "no token (a form to 127.0.0.1 needs no preflight)": client.post(path, data={"text": "x"}),
            "JSON without the token": send(client, path, body, None),
            "a wrong token": send(client, path, body, "x" * len(token)),
            "the token in the query string": send(client, f"{path}?token={token}", body, None),
            "the right token on a form": client.post(path, data={"text": "x"}, headers={TOKEN_HEADER: token}),
        }
        for why, response in refusals.items():
            assert response.status_code in (400, 401, 403, 415), (path, why, response.status_code, response.text)
            assert "error" in response.json(), (path, why)
        assert refusals["another site's page, passing the token"].status_code == 403
        assert refusals["JSON without the token"].status_code == 401
        assert client.get(path).status_code == 405
    assert snapshot(conn) == before


def test_remember_edit_undo_and_forget_from_the_page(client: TestClient, store: tuple[sqlite3.Connection, dict[str, Any]]) -> None:
    conn, ids = store
    token = page_token(client)
    done = send(client, "/api/remember", {"text": "Refunds over 500 EUR need a second approver <private>Ana's PIN 4411</private>",
                                          "type": "decision"}, token).json()
    assert (done["project"], done["created"]) == (WEBSHOP, True)
    new = done["id"]
    row = conn.execute("SELECT source, provenance, session_id, type, narrative FROM observations WHERE id = ?", (new,)).fetchone()
    assert tuple(row) == ("person", '["person"]', f"stated:{WEBSHOP}", "decision", "Refunds over 500 EUR need a second approver")
    in_other = send(client, "/api/remember", {"text": "Invoices are numbered per year", "project": "github.com/acme/billing-api"},
                    token).json()
    assert in_other["project"] == "github.com/acme/billing-api"
    bad = send(client, "/api/remember", {"text": "z" * 4001}, token)
    assert bad.status_code == 400 and "over the limit of 4,000" in bad.json()["error"]
    assert send(client, "/api/remember", {"text": "x", "supersedes": "obs:999999"}, token).status_code == 404

    fix = ids["checkout"][1]
    edited = send(client, f"/api/observation/{fix}/edit", {"title": "Idempotency keys stop double charges", "facts": ["kept 24 h"]},
                  token).json()
    assert edited == {"ref": f"obs:{fix}", "changed": ["title", "facts"], "undone": False}
    detail = client.get(f"/api/observation/{fix}").json()
    assert detail["observation"]["title"] == "Idempotency keys stop double charges"
    [kept] = detail["revisions"]
    assert (kept["author"], kept["changed"], kept["title"]) == ("person", ["title", "facts"],
                                                                 "Idempotency key on payment requests stops double charges")
    assert send(client, f"/api/observation/{fix}/edit", {"undo": True}, token).json()["undone"] is True
    assert client.get(f"/api/observation/{fix}").json()["revisions"] == []
    assert send(client, f"/api/observation/{fix}/edit", {"title": ""}, token).status_code == 400
    assert send(client, "/api/observation/999999/edit", {"title": "x"}, token).status_code == 404

    forgot = send(client, f"/api/observation/{new}/forget", {}, token).json()
    assert forgot["counts"]["observations"] == 1 and forgot["vacuumed"] is True
    assert conn.execute("SELECT COUNT(*) FROM observations WHERE id = ?", (new,)).fetchone()[0] == 0
    assert client.get(f"/api/observation/{new}").status_code == 404
    assert send(client, f"/api/observation/{new}/forget", {}, token).status_code == 404
