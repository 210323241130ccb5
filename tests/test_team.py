"""A team sharing one Chroma server: two data folders, as on two laptops, recording
the same repository into one real `chroma run` on 127.0.0.1. Nothing of one is overwritten or
deleted by the other, each finds the other's memories, and the embedded index of one machine
moves to installation ids without embedding anything again."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import chromadb
import pytest
from chromadb.config import Settings
from mcp import Client
from starlette.testclient import TestClient

from claude_mem.index.documents import split_doc_id
from claude_mem.index.semantic_index import Index
from claude_mem.mcp.server import build_server
from claude_mem.project import project_for
from claude_mem.recall.search import search
from claude_mem.settings import Config
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, Summary, insert_observation, upsert_summary
from claude_mem.store.records import ensure_session, record_prompt
from claude_mem.viewer.app import create_app
from tests.chroma_server import ChromaServer
from tests.cli_helpers import invoke, invoke_json
from tests.git_layout import git_checkout, git_worktree
from tests.search_helpers import warm_service
from tests.stores import OLD_MS, age_session, config_for

REMOTE = "git@github.com:Acme/Shop.git"
PROJECT = "github.com/acme/shop"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    srv = ChromaServer(tmp_path_factory.mktemp("team-chroma")).start()
    yield srv
    srv.stop()


_CLIENTS: dict[int, Any] = {}


def server_collection(server: ChromaServer) -> Any:
    """The shared collection as an outsider sees it (one client per server: each costs ~0.3 s)."""
    if server.port not in _CLIENTS:
        _CLIENTS[server.port] = chromadb.HttpClient(host="127.0.0.1", port=server.port,
                                                    settings=Settings(anonymized_telemetry=False))
    return _CLIENTS[server.port].get_collection("claude_mem")


def owned(server: ChromaServer, installation_id: str) -> list[str]:
    return sorted(server_collection(server).get(where={"installation": installation_id}, include=[])["ids"])


@dataclass
class Laptop:
    name: str
    config: Config
    conn: sqlite3.Connection
    obs: dict[str, int]

    @property
    def env(self) -> dict[str, str]:
        return {"CLAUDE_MEM_DATA_DIR": self.config.data_dir}

    def index(self) -> Index:
        return Index(self.config)


def laptop(root: Path, name: str, server: ChromaServer, cwd: Path, memories: list[tuple[str, Observation]],
           **settings: Any) -> Laptop:
    data = root / name
    data.mkdir(parents=True)
    (data / "settings.json").write_text(json.dumps({"chroma_url": server.url, "installation_name": name, **settings}))
    config = config_for(data)
    conn = connect(config.db_path)
    project = project_for(str(cwd))
    obs: dict[str, int] = {}
    with transaction(conn):
        ensure_session(conn, f"sess-{name}", project=project, cwd=str(cwd), transcript_path=None)
        record_prompt(conn, f"sess-{name}", f"work on the shop from {name}", None)
        for key, observation in memories:
            obs[key] = insert_observation(conn, f"sess-{name}", project, observation, prompt_number=1)
        upsert_summary(conn, f"sess-{name}", project, Summary(request=f"shop work on {name}", completed="done"), prompt_number=1)
    return Laptop(name, config, conn, obs)


A_MEMORIES = [
    ("login", Observation(type="bugfix", title="Fixed the login crash", narrative="The refresh token was null after logout.",
                          facts=["a lock now guards the token refresh"], files_modified=["src/auth/session.py"])),
    ("theme", Observation(type="feature", title="Dark mode theme", narrative="Colours come from CSS variables.")),
]
B_MEMORIES = [
    ("webhook", Observation(type="bugfix", title="Payment webhooks are idempotent now",
                            narrative="Stripe retried webhooks and customers were charged twice; each event id is stored"
                                      " and a repeated one is ignored.",
                            facts=["duplicate charges came from webhook retries"], files_modified=["src/payments/webhook.py"])),
    ("cache", Observation(type="decision", title="Product pages cached for five minutes",
                          narrative="The catalogue query was the slowest page load.")),
]


@pytest.fixture
def team(tmp_path: Path, server: ChromaServer) -> Iterator[tuple[Laptop, Laptop]]:
    """Laptop A works in a clone, laptop B in a worktree of another clone (ssh and https remotes)."""
    # Each test starts from an empty collection (emptied, not dropped: this process keeps it open).
    with contextlib.suppress(chromadb.errors.NotFoundError):
        collection = server_collection(server)
        ids = collection.get(include=[])["ids"]
        if ids:
            collection.delete(ids=ids)
    clone_a = git_checkout(tmp_path / "a" / "shop", REMOTE)
    main_b = git_checkout(tmp_path / "b" / "code" / "shop-main", "https://github.com/acme/shop")
    worktree_b = git_worktree(main_b, tmp_path / "b" / "trees" / "feature-x")
    a = laptop(tmp_path / "data", "laptop-a", server, clone_a, A_MEMORIES)
    b = laptop(tmp_path / "data", "laptop-b", server, worktree_b, B_MEMORIES)
    yield a, b
    a.conn.close()
    b.conn.close()


def test_the_same_repository_on_two_machines_is_one_project(tmp_path: Path) -> None:
    clone = git_checkout(tmp_path / "x" / "shop", REMOTE)
    other = git_checkout(tmp_path / "y" / "elsewhere" / "shop-copy", "https://user:token@github.com/acme/shop.git")
    tree = git_worktree(other, tmp_path / "z" / "wt")
    assert {project_for(str(clone)), project_for(str(clone / "src")), project_for(str(other)), project_for(str(tree))} == {PROJECT}


@pytest.mark.slow
def test_two_laptops_share_a_server_and_lose_nothing(team: tuple[Laptop, Laptop], server: ChromaServer) -> None:
    a, b = team
    assert a.obs["login"] == b.obs["webhook"]  # the same row ids on both machines: what used to collide
    a.index().index_missing(a.conn)
    b.index().index_missing(b.conn)
    a_id, b_id = a.index().installation.id, b.index().installation.id
    assert a_id != b_id and os.stat(Path(a.config.data_dir) / "installation-id").st_mode & 0o777 == 0o600
    a_docs, b_docs = owned(server, a_id), owned(server, b_id)
    assert len(a_docs) == 5 and len(b_docs) == 5 and server_collection(server).count() == 10  # nothing overwritten
    texts = dict(zip(*(server_collection(server).get(ids=[f"obs:1:main@{a_id}", f"obs:1:main@{b_id}"],
                                                     include=["documents"])[k] for k in ("ids", "documents")), strict=True))
    assert texts[f"obs:1:main@{a_id}"].startswith("Fixed the login crash")
    assert texts[f"obs:1:main@{b_id}"].startswith("Payment webhooks are idempotent now")

    # B rebuilds its index in a process of its own: A's documents stay, every one.
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "reindex", "--json"], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **b.env})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["observation"] == 2
    assert owned(server, a_id) == a_docs and owned(server, b_id) == b_docs

    # A finds what only B recorded, named as B's, in the project they share (through its service,
    # warmed first: only the service reads the server, and a loaded machine's start-up outlasts 10 s).
    warm_service(a.config)
    found = invoke_json("search", "customers charged twice by retried webhooks", "--project", PROJECT, env=a.env)
    hit = found["hits"][0]
    assert (hit["origin"], hit["kind"], hit["id"], hit["project"]) == ("laptop-b", "observation", b.obs["webhook"], PROJECT)
    assert "laptop-b" in found["note"] and "meaning only" in found["note"]
    table = invoke("search", "customers charged twice by retried webhooks", env=a.env).output
    assert f"obs:{b.obs['webhook']}@laptop-b" in table
    shown = invoke_json("show", f"obs:{b.obs['webhook']}@laptop-b", env=a.env)
    assert shown["origin"] == "laptop-b" and "each event id is stored" in shown["text"]
    assert shown["facts"] == ["duplicate charges came from webhook retries"] and shown["files"] == ["src/payments/webhook.py"]
    assert "a lock now guards" not in json.dumps(shown)
    invoke("show", f"obs:{b.obs['webhook']}@laptop-c", code=1, env=a.env)
    invoke("forget", f"obs:{b.obs['webhook']}@laptop-b", code=2, env=a.env)

    # A prunes its old memories, then forgets everything: B's documents stay, and B finds its own.
    with transaction(a.conn):
        age_session(a.conn, "sess-laptop-a", OLD_MS)
    pruned = invoke_json("prune", "--days", "30", "--yes", env=a.env)
    assert pruned["counts"]["observations"] == 2 and owned(server, a_id) == [] and owned(server, b_id) == b_docs
    with transaction(a.conn):
        ensure_session(a.conn, "sess-a2", project=PROJECT, cwd=None, transcript_path=None)
        insert_observation(a.conn, "sess-a2", PROJECT, A_MEMORIES[1][1], prompt_number=1)
    a.index().index_missing(a.conn)
    assert len(owned(server, a_id)) == 1
    forgot = invoke("forget", "--project", PROJECT, "--yes", env=a.env)
    # Seen once under load with A's last document kept: the output says whether the index answered.
    assert owned(server, a_id) == [] and owned(server, b_id) == b_docs, forgot.output
    mine = search(b.conn, "charged twice by webhook retries", index=b.index(), mode="semantic", limit=3).hits
    assert (mine[0].origin, mine[0].id) == (None, b.obs["webhook"])


@pytest.mark.slow
def test_filters_apply_to_teammates_memories(team: tuple[Laptop, Laptop]) -> None:
    a, b = team
    a.index().index_missing(a.conn)
    b.index().index_missing(b.conn)
    index = a.index()

    def theirs(**filters: Any) -> list[tuple[str, int]]:
        hits = search(a.conn, "double charges from payment webhook retries", index=index, limit=10, **filters).hits
        return [(h.kind, h.id) for h in hits if h.origin == "laptop-b"]

    webhook = ("observation", b.obs["webhook"])
    assert webhook in theirs() and webhook in theirs(project=PROJECT) and webhook in theirs(type_="bugfix")
    assert theirs(project="github.com/acme/other") == [] and webhook not in theirs(type_="decision")
    assert webhook in theirs(session_id="sess-laptop-b") and theirs(session_id="sess-laptop-a") == []
    assert webhook in theirs(file="payments/WEBHOOK") and theirs(file="src/auth") == []
    assert theirs(since_ms=2**41) == [] and webhook in theirs(until_ms=2**41)
    assert webhook not in theirs(kinds=("summary", "prompt"))
    # Keyword search runs on this machine only.
    assert search(a.conn, "webhook", index=index, mode="keyword").hits == []


@pytest.mark.slow
def test_mcp_tools_and_the_viewer_name_and_read_a_teammates_memory(team: tuple[Laptop, Laptop], tmp_path: Path) -> None:
    a, b = team
    a.index().index_missing(a.conn)
    b.index().index_missing(b.conn)
    ref = f"obs:{b.obs['webhook']}@laptop-b"
    server = build_server(a.config, cwd=str(tmp_path / "a" / "shop"))

    async def main() -> list[tuple[bool, str]]:
        async with Client(server) as client:
            out = []
            for name, args in (("search", {"query": "customers charged twice by webhook retries"}),
                               ("get_observations", {"ids": [ref, a.obs["login"]]}),
                               ("get_observations", {"ids": [f"obs:{b.obs['webhook']}@laptop-z"]}),
                               ("timeline", {"anchor": ref})):
                result = await client.call_tool(name, args)
                out.append((bool(result.is_error), result.content[0].text))
            return out

    try:
        (err1, rows), (err2, records), (err3, missing), (err4, timeline) = asyncio.run(main())
    finally:
        server.memory.close()  # type: ignore[attr-defined]
    assert not err1 and f"\n{ref} | " in rows and "meaning only" in rows
    assert not err2 and "each event id is stored" in records and "from laptop-b" in records
    assert f"## obs:{a.obs['login']} " in records  # a local record beside it, in full
    assert err3 and "no such observation: obs:" in missing
    assert err4 and "stays on their machine" in timeline and "get_observations" in timeline

    with TestClient(create_app(a.config, poll_s=0.02), base_url="http://127.0.0.1:37777") as viewer:
        found = viewer.get("/api/search", params={"q": "customers charged twice by webhook retries"}).json()
        shown = viewer.get(f"/api/remote/{ref}")
        bad = viewer.get("/api/remote/obs:1")
        unknown = viewer.get(f"/api/remote/obs:{b.obs['webhook']}@laptop-z")
    assert (found["hits"][0]["origin"], found["hits"][0]["id"]) == ("laptop-b", b.obs["webhook"]) and "laptop-b" in found["note"]
    assert shown.status_code == 200 and shown.json()["facts"] == ["duplicate charges came from webhook retries"]
    assert bad.status_code == 400 and unknown.status_code == 404


@pytest.mark.slow
def test_local_projects_are_never_sent(team: tuple[Laptop, Laptop], server: ChromaServer, tmp_path: Path) -> None:
    a, _ = team
    secret = git_checkout(tmp_path / "a" / "secret", "git@github.com:acme/secret.git")
    private = project_for(str(secret))
    with transaction(a.conn):
        ensure_session(a.conn, "sess-secret", project=private, cwd=str(secret), transcript_path=None)
        record_prompt(a.conn, "sess-secret", "rotate the vault master key", None)
        insert_observation(a.conn, "sess-secret", private, Observation(type="change", title="Vault master key rotated"),
                           prompt_number=1)
    settings_path = Path(a.config.data_dir) / "settings.json"
    settings_path.write_text(json.dumps({**json.loads(settings_path.read_text()), "local_projects": [private]}))
    config = config_for(Path(a.config.data_dir))
    index = Index(config)
    index.index_missing(a.conn)
    sent = server_collection(server).get(where={"installation": index.installation.id}, include=["metadatas", "documents"])
    assert sent["ids"] and {m["project"] for m in sent["metadatas"]} == {PROJECT}
    assert not any("vault" in d.lower() for d in sent["documents"])
    assert index.drift(a.conn)["in_sync"]  # kept local is not "missing"
    # Found by keyword only: first within its project, and among the hits of every project.
    assert search(a.conn, "vault master key", index=index, project=private).hits[0].title == "Vault master key rotated"
    assert "Vault master key rotated" in [h.title for h in search(a.conn, "vault master key", index=index).hits]
    status = invoke_json("status", env=a.env)
    share = status["sharing"]
    assert share["server"] == server.url and share["name"] == "laptop-a" and share["local_projects"] == [private]
    assert share["rows_sent"] == {"observation": 2, "summary": 1, "prompt": 1} and share["documents_sent"] == len(sent["ids"])
    assert "laptop-a" in invoke("status", env=a.env).output and f"never sent: {private}" in invoke("status", env=a.env).output


def _legacy(index: Index, conn: sqlite3.Connection) -> list[str]:
    """Turn this installation's documents into what claude-mem wrote before installation ids:
    bare ids, no owner in the metadata, index_state on the bare collection id. Returns the ids."""
    with index._use("legacy", write=True) as store:
        got = store.collection.get(include=["embeddings", "metadatas", "documents"])
        bare = [split_doc_id(doc_id)[0] for doc_id in got["ids"]]
        metadatas = [{k: v for k, v in m.items() if k not in ("installation", "origin")} for m in got["metadatas"]]
        store.collection.delete(ids=got["ids"])
        store.collection.upsert(ids=bare, embeddings=got["embeddings"], metadatas=metadatas, documents=got["documents"])
        cid = str(store.collection.id)
    with transaction(conn):
        conn.execute("UPDATE index_state SET collection_id = ?", (cid,))
    return sorted(bare)


def test_an_embedded_index_moves_to_installation_ids_without_embedding_again(tmp_path: Path) -> None:
    config = config_for(tmp_path / "solo")
    config.ensure_dirs()
    conn = connect(config.db_path)
    laptop_rows = {}
    with transaction(conn):
        ensure_session(conn, "s", project=PROJECT, cwd=None, transcript_path=None)
        for key, observation in A_MEMORIES + B_MEMORIES:
            laptop_rows[key] = insert_observation(conn, "s", PROJECT, observation, prompt_number=1)
    index = Index(config)
    index.index_missing(conn)
    bare = _legacy(index, conn)
    gone = laptop_rows["cache"]
    with transaction(conn):
        conn.execute("DELETE FROM observations WHERE id = ?", (gone,))  # forgotten by an old version, Chroma away

    # Before the move, search still reads the old documents as this machine's.
    before = search(conn, "customers charged twice", index=Index(config), project=PROJECT, limit=1).hits
    assert (before[0].id, before[0].origin) == (laptop_rows["webhook"], None)

    counts = Index(config).index_missing(conn)
    # Nothing embedded again but the two observations with facts (a document of their own each, in
    # the layout of those days: documents.LAYOUT); the gone row dropped.
    assert counts == {"observation": 2, "summary": 0, "prompt": 0, "removed": 1, "vectors": 0}
    with index._use("inspect") as store:
        ids = store.collection.get(include=[])["ids"]
    me = index.installation.id
    assert sorted(ids) == sorted(f"{key}@{me}" for key in bare if not key.startswith(f"obs:{gone}:"))
    assert index.drift(conn)["in_sync"]
    after = search(conn, "customers charged twice", index=Index(config), project=PROJECT, limit=1).hits
    assert (after[0].id, after[0].origin) == (laptop_rows["webhook"], None)
    conn.close()


@pytest.mark.slow
def test_server_documents_from_before_installation_ids_are_replaced(team: tuple[Laptop, Laptop], server: ChromaServer) -> None:
    a, b = team
    index = a.index()
    index.index_missing(a.conn)
    bare = _legacy(index, a.conn)
    b.index().index_missing(b.conn)
    # An old document of a row A never sent: whose a bare id is cannot be known, so it is left alone.
    with index._use("legacy", write=True) as store:
        store.collection.upsert(ids=["obs:99:main"], embeddings=[index.embed_query("customers charged twice").tolist()],
                                metadatas=[{"kind": "observation", "sqlite_id": 99}], documents=["customers charged twice"])
    counts = index.index_missing(a.conn)
    assert counts["observation"] == 2  # sent again, under A's ids
    me = index.installation.id
    assert owned(server, me) == sorted(f"{key}@{me}" for key in bare)
    assert server_collection(server).get(ids=bare)["ids"] == []  # the old documents of A's rows are gone
    assert len(owned(server, b.index().installation.id)) == 5
    assert server_collection(server).get(ids=["obs:99:main"])["ids"] == ["obs:99:main"]
    assert index.drift(a.conn)["in_sync"]
    hits = search(a.conn, "customers charged twice", index=index, mode="semantic").hits
    assert hits and all(h.origin == "laptop-b" or h.id in a.obs.values() for h in hits if h.kind == "observation")
    assert 99 not in [h.id for h in hits]


@pytest.mark.slow
def test_a_remembered_memory_edited_or_forgotten_changes_what_a_teammate_finds(team: tuple[Laptop, Laptop],
                                                                                server: ChromaServer) -> None:
    """A's memory service writes what A remembers to the shared server, replaces it
    there when A edits it, and A's forget removes it: B's search never finds the old text again."""
    from claude_mem.service.control import stop_service
    from claude_mem.viewer.changes import TOKEN_HEADER
    from tests.viewer_helpers import page_token
    from tests.waiting import wait_until

    a, b = team
    a.index().index_missing(a.conn)
    b.index().index_missing(b.conn)
    a_id = a.index().installation.id

    def on_server(row: int) -> list[str]:
        got = server_collection(server).get(where={"$and": [{"installation": a_id}, {"kind": "observation"}, {"sqlite_id": row}]},
                                            include=["documents"])
        return list(got["documents"])

    def b_finds(query: str) -> list[str]:
        hits = search(b.conn, query, index=b.index(), mode="semantic", limit=5).hits
        return [f"{h.kind}:{h.id}" for h in hits if h.origin == "laptop-a"]

    try:
        ref = invoke_json("remember", "The payment sandbox key rotates every Friday at noon", "--project", PROJECT, env=a.env)["ref"]
        row = int(ref[4:])
        assert wait_until(lambda: any("every Friday" in d for d in on_server(row)), 120)
        assert f"observation:{row}" in b_finds("when does the payment sandbox key rotate?")

        invoke("edit", ref, "--title", "Sandbox key rotation", "--text", "The payment sandbox key rotates on the first Monday of"
               " each month", env=a.env)
        assert wait_until(lambda: any("first Monday" in d for d in on_server(row)), 120)
        [document] = on_server(row)
        assert "Friday" not in document and document.startswith("Sandbox key rotation")
        assert f"observation:{row}" in b_finds("sandbox key rotation on the first Monday of the month")
        assert len(owned(server, a_id)) == 6  # A's five documents and this one: replaced, not added

        invoke("forget", ref, "--yes", env=a.env)
        assert on_server(row) == [] and f"observation:{row}" not in b_finds("when does the payment sandbox key rotate?")
        assert len(owned(server, a_id)) == 5

        # The viewer's forget: the row goes at once, its document through A's memory service.
        other = invoke_json("remember", "Refunds over 500 EUR need a second approver", "--project", PROJECT, env=a.env)["id"]
        assert wait_until(lambda: on_server(other) != [], 120)
        with TestClient(create_app(a.config, poll_s=0.02), base_url="http://127.0.0.1:37777") as viewer:
            token = page_token(viewer)
            forgot = viewer.post(f"/api/observation/{other}/forget", content="{}",
                                 headers={"content-type": "application/json", TOKEN_HEADER: token})
        assert forgot.status_code == 200, forgot.text
        assert wait_until(lambda: on_server(other) == [], 120) and len(owned(server, a_id)) == 5
    finally:
        stop_service(a.config.data_dir)
