"""The Chroma index, embedded and against a real `chroma run` server."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_mem import settings
from claude_mem.identity import Installation
from claude_mem.index import chroma
from claude_mem.index.chroma import IndexUnavailable
from claude_mem.index.documents import FACT_PROBE, document_order, document_texts, fact_number, parse_doc_id, split_doc_id
from claude_mem.index.embedders import Embedder, embedder_named
from claude_mem.index.semantic_index import Index
from claude_mem.recall.search import search
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, Summary, insert_observation, upsert_summary
from claude_mem.store.records import record_prompt, record_reply
from tests.chroma_server import ChromaServer, free_port

ME = Installation("0123456789abcdef", "laptop-a")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChromaServer]:
    srv = ChromaServer(tmp_path_factory.mktemp("chroma-server")).start()
    yield srv
    srv.stop()


@pytest.fixture
def conn(two_projects: sqlite3.Connection) -> sqlite3.Connection:
    return two_projects


# The server side starts a `chroma run` process: left out of the inner loop (README, "Test it").
@pytest.fixture(params=["embedded", pytest.param("server", marks=pytest.mark.slow)])
def index(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Index]:
    # A fresh collection per test, also on the shared server.
    name = f"t-{uuid.uuid4().hex[:12]}"
    if request.param == "embedded":
        ix = Index(path=str(tmp_path / "chroma"), collection_name=name)
    else:
        ix = Index(url=request.getfixturevalue("server").url, collection_name=name, installation=ME)
    yield ix
    ix.close()


def add_rows(conn: sqlite3.Connection) -> dict[str, list[int]]:
    obs = [
        insert_observation(conn, "s1", "alpha", Observation(
            type="bugfix", title="Fixed login crash", subtitle="auth", narrative="The refresh token was null after logout",
            facts=["token refresh raced with logout", "a lock now guards the refresh"], files_read=["src/auth.py"],
            files_modified=["src/session.py"]), prompt_number=1),
        insert_observation(conn, "s1", "alpha", Observation(type="feature", title="Dark mode",
                                                            facts=["colours come from CSS variables"]), prompt_number=2),
        insert_observation(conn, "s2", "beta", Observation(type="discovery", title="The CI runner has 2 cores"), prompt_number=1),
    ]
    summaries = [upsert_summary(conn, "s1", "alpha", Summary(request="fix the login", learned="tokens expire", notes=""),
                                prompt_number=1)]
    prompts = [record_prompt(conn, "s1", "please make the app dark themed", None)]
    return {"observation": obs, "summary": summaries, "prompt": prompts}


def test_documents_ids_and_metadata(conn: sqlite3.Connection, index: Index) -> None:
    rows = add_rows(conn)
    assert index.index_missing(conn) == {"observation": 3, "summary": 1, "prompt": 1, "removed": 0, "vectors": 0}
    with index._use("inspect") as store:
        got = store.collection.get(include=["metadatas", "documents"])
    me = index.installation
    assert {split_doc_id(doc_id)[1] for doc_id in got["ids"]} == {me.id}
    assert {(m["installation"], m["origin"]) for m in got["metadatas"]} == {(me.id, me.name)}
    docs = dict(zip((split_doc_id(doc_id)[0] for doc_id in got["ids"]),
                    zip(got["documents"], got["metadatas"], strict=True), strict=True))
    first, summary, prompt = rows["observation"][0], rows["summary"][0], rows["prompt"][0]
    assert sorted(docs) == sorted([  # one document per observation, its facts in it (documents.LAYOUT 2)
        f"obs:{first}:main", f"obs:{rows['observation'][1]}:main", f"obs:{rows['observation'][2]}:main",
        f"sum:{summary}:request", f"sum:{summary}:learned", f"prompt:{prompt}",
    ])
    text, meta = docs[f"obs:{first}:main"]
    assert text == ("Fixed login crash\nauth\nThe refresh token was null after logout\n"
                    "token refresh raced with logout\na lock now guards the refresh")
    assert meta["part"] == "main" and meta["facts"] == 2
    created = conn.execute("SELECT created_at_epoch FROM observations WHERE id = ?", (first,)).fetchone()[0]
    assert meta["sqlite_id"] == first and meta["kind"] == "observation" and meta["project"] == "alpha"
    assert meta["session_id"] == "s1" and meta["type"] == "bugfix" and meta["prompt_number"] == 1
    assert meta["created_at"] == created // 1000 and meta["created_at_ms"] == created
    assert meta["files"] == "src/auth.py\nsrc/session.py" and meta["title"] == "Fixed login crash"
    assert docs[f"sum:{summary}:learned"][1]["title"] == "fix the login"
    assert docs[f"prompt:{prompt}"][1]["title"] == "please make the app dark themed"
    assert docs[f"sum:{summary}:learned"] == ("tokens expire", docs[f"sum:{summary}:learned"][1])
    assert docs[f"prompt:{prompt}"][1]["project"] == "alpha"  # from the session: user_prompts has no project


def test_a_prompt_is_indexed_again_with_its_reply(conn: sqlite3.Connection, tmp_path: Path) -> None:
    index = Index(path=str(tmp_path / "chroma"))
    with transaction(conn):
        record_prompt(conn, "s1", "why is the build red?", "p1")
    [row_id] = [r[0] for r in conn.execute("SELECT id FROM user_prompts")]

    def stored() -> dict[str, str]:
        with index._use("inspect") as store:
            got = store.collection.get(where={"kind": "prompt"}, include=["documents"])
        return {split_doc_id(doc_id)[0]: text for doc_id, text in zip(got["ids"], got["documents"], strict=True)}

    def expected() -> dict[str, str]:
        row = conn.execute("SELECT * FROM user_prompts WHERE id = ?", (row_id,)).fetchone()
        return {doc_id: text for doc_id, text, _ in document_texts("prompt", row)}

    index.index_rows(conn, "prompt", [row_id])
    assert stored() == expected() and len(expected()) == 1
    with transaction(conn):
        record_reply(conn, "s1", "The lockfile pinned an old parser release; updating it fixed CI.", "p1")
    index.index_rows(conn, "prompt", [row_id])
    assert stored() == expected() and len(expected()) == 2
    # Claude's words find the turn: a query close to the reply, far from the prompt.
    [best] = index.query_documents("outdated dependency version in the lockfile", 1)
    assert (best.kind, best.sqlite_id) == ("prompt", row_id) and "lockfile" in stored()[split_doc_id(best.doc_id)[0]]
    # A reply gone (its row rewritten) loses its document, deleted by id.
    with transaction(conn):
        conn.execute("UPDATE user_prompts SET reply_text = '' WHERE id = ?", (row_id,))
    index.index_rows(conn, "prompt", [row_id])
    assert stored() == expected() and len(expected()) == 1
    assert index.drift(conn)["in_sync"]
    index.close()


def test_query_delete_reindex_and_drift(conn: sqlite3.Connection, index: Index) -> None:
    rows = add_rows(conn)
    index.index_rows(conn, "observation", rows["observation"])
    index.index_rows(conn, "summary", rows["summary"])
    index.index_rows(conn, "prompt", rows["prompt"])
    dark, login = rows["observation"][1], rows["observation"][0]

    top = index.query("night theme for the user interface", 3, {"kind": "observation"})
    assert top[0][:2] == ("observation", dark)
    assert all(kind == "observation" for kind, _, _ in top)
    beta = index.query("authentication bug", 5, {"project": "beta"})
    assert [(kind, i) for kind, i, _ in beta] == [("observation", rows["observation"][2])]
    assert index.drift(conn)["in_sync"]

    index.delete("observation", [dark], conn)
    assert all(i != dark for _, i, _ in index.query("night theme", 10))
    drift = index.drift(conn)
    assert drift["observation"] == {"sqlite": 3, "indexed": 2, "missing": 1, "stale": 0, "unfilled": 0} and not drift["in_sync"]
    assert index.index_missing(conn)["observation"] == 1  # forgotten in index_state too, so picked up again
    assert index.drift(conn)["in_sync"]

    # A rewritten summary replaces its documents; a deleted row loses them.
    upsert_summary(conn, "s1", "alpha", Summary(request="fix the login", completed="login works again"), prompt_number=1)
    index.index_rows(conn, "summary", rows["summary"])
    conn.execute("DELETE FROM observations WHERE id = ?", (login,))
    drift = index.drift(conn)
    assert drift["observation"]["stale"] == 1 and drift["summary"] == {"sqlite": 1, "indexed": 1, "missing": 0, "stale": 0, "unfilled": 0}
    assert index.index_missing(conn)["removed"] == 1
    assert index.drift(conn)["in_sync"]
    with index._use("inspect") as store:
        assert sorted(split_doc_id(i)[0] for i in store.collection.get(where={"kind": "summary"})["ids"]) == [
            f"sum:{rows['summary'][0]}:completed", f"sum:{rows['summary'][0]}:request"]

    counts = index.reindex(conn)
    assert counts == {"observation": 2, "summary": 1, "prompt": 1, "removed": 0, "vectors": 0}
    assert index.drift(conn)["in_sync"]
    # Rows whose text is only whitespace have no documents and are not "missing".
    blank_prompt = record_prompt(conn, "s1", "\n\t \r\n", None)
    insert_observation(conn, "s1", "alpha", Observation(type="change", title="\t", narrative="\n", facts=["\n\t"]), prompt_number=7)
    assert index.index_missing(conn)["prompt"] == 1 and blank_prompt
    assert index.drift(conn)["in_sync"]
    assert index.query("night theme", 1, {"kind": "observation"})[0][:2] == ("observation", dark)


def test_queries_search_with_a_wider_beam_than_chromas_default(conn: sqlite3.Connection, index: Index) -> None:
    """EF_SEARCH: a collection is made with it, and one searched with a narrower beam (an index
    built before it, Chroma's default of 100) gets it when it is next opened."""
    rows = add_rows(conn)
    index.index_rows(conn, "observation", rows["observation"])
    with index._use("inspect") as store:
        assert store.collection.configuration["hnsw"]["ef_search"] == chroma.EF_SEARCH > 100
        store.collection.modify(configuration={"hnsw": {"ef_search": 100}})
    index.close()
    assert index.query("night theme for the user interface", 1)[0][:2] == ("observation", rows["observation"][1])
    with index._use("inspect") as store:
        assert store.collection.configuration["hnsw"]["ef_search"] == chroma.EF_SEARCH


class _BusyCollection:
    """A collection whose folder answers "database is locked" to the first `busy` changes, as an
    embedded Chroma sometimes does right as it is opened (the test above, on a loaded machine)."""

    def __init__(self, busy: int) -> None:
        self.configuration = {"hnsw": {"space": "cosine", "ef_search": 100}}
        self.busy = busy
        self.tries = 0

    def modify(self, configuration: dict[str, Any]) -> None:
        self.tries += 1
        if self.tries <= self.busy:
            raise RuntimeError("Database error: error returned from database: (code: 5) database is locked")
        self.configuration["hnsw"].update(configuration["hnsw"])


def test_a_beam_change_refused_while_the_folder_is_busy_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chroma, "WIDEN_PAUSE_S", 0.001)
    twice = _BusyCollection(busy=2)
    chroma.widen_search(twice)
    assert (twice.tries, twice.configuration["hnsw"]["ef_search"]) == (3, chroma.EF_SEARCH)
    always = _BusyCollection(busy=99)
    chroma.widen_search(always)  # never raises: the collection keeps its beam, the next open tries again
    assert (always.tries, always.configuration["hnsw"]["ef_search"]) == (chroma.WIDEN_TRIES, 100)


def test_rows_indexed_in_the_older_layout_are_laid_out_anew(conn: sqlite3.Connection, index: Index) -> None:
    """A store indexed when each fact was a document of its own (layout 1) is indexed again by
    the next catch-up, in place: one document per observation, its old fact documents gone."""
    login = add_rows(conn)["observation"][0]
    assert index.index_missing(conn)["observation"] == 3

    def ids() -> list[str]:
        with index._use("inspect") as store:
            got = store.collection.get(where={"$and": [{"sqlite_id": login}, {"kind": "observation"}]})
            return sorted(split_doc_id(i)[0] for i in got["ids"])

    many = FACT_PROBE * 2 + 3  # stale facts are found by id, a window at a time: more than one window
    with index._use("plant", write=True) as store:
        me, cid = index.installation.id, str(store.collection.id)
        keys = [f"obs:{login}:fact:{n}" for n in range(many)]
        store.collection.upsert(ids=[f"{k}@{me}" for k in keys], embeddings=index._embed(keys).tolist(), documents=keys,
                                metadatas=[{"sqlite_id": login, "kind": "observation", "part": "fact"}] * many)
    with conn:
        conn.execute("UPDATE index_state SET collection_id = ?", (f"{cid}@{me}",))  # layout 1's key
    assert len(ids()) == many + 1
    assert index.drift(conn)["in_sync"]  # the rows have documents: nothing is missing, only laid out the old way
    # Only the observations with facts are embedded again: the other rows' documents are alike in both layouts.
    assert index.index_missing(conn) == {"observation": 2, "summary": 0, "prompt": 0, "removed": 0, "vectors": 0}
    assert ids() == [f"obs:{login}:main"]
    assert index.index_missing(conn) == {"observation": 0, "summary": 0, "prompt": 0, "removed": 0, "vectors": 0}


def test_a_multilingual_index_finds_a_fact_by_its_own_vector(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """multilingual-e5 lays its rows out as MiniLM does (one document per observation):
    its pushes need each fact's own vector, which SQLite keeps (index/vectors.py)."""
    minilm = embedder_named("minilm")
    index = Index(path=str(tmp_path / "chroma"), embedder=Embedder("multilingual", "claude_mem_e5", minilm.passages))
    login = add_rows(conn)["observation"][0]
    assert index.index_missing(conn) == {"observation": 3, "summary": 1, "prompt": 1, "removed": 0, "vectors": 0}
    with index._use("inspect") as store:
        got = store.collection.get(where={"$and": [{"sqlite_id": login}, {"kind": "observation"}]}, include=["documents"])
    docs = dict(zip((split_doc_id(i)[0] for i in got["ids"]), got["documents"], strict=True))
    assert docs == {f"obs:{login}:main": "Fixed login crash\nauth\nThe refresh token was null after logout\n"
                                         "token refresh raced with logout\na lock now guards the refresh"}
    assert index.index_missing(conn) == {"observation": 0, "summary": 0, "prompt": 0, "removed": 0, "vectors": 0}
    hits = search(conn, "a lock guards the refresh", index=index, mode="semantic").hits
    assert hits[0].id == login and hits[0].snippet == "a lock now guards the refresh"  # the fact that matched


def test_reindexed_rows_lose_the_documents_they_no_longer_have(conn: sqlite3.Connection, index: Index) -> None:
    rows = add_rows(conn)
    summary = rows["summary"][0]

    def ids() -> list[str]:
        with index._use("inspect") as store:
            return sorted(split_doc_id(i)[0] for i in store.collection.get(where={"kind": "summary"})["ids"])

    index.index_rows(conn, "summary", [summary])
    assert ids() == [f"sum:{summary}:learned", f"sum:{summary}:request"]
    with conn:
        conn.execute("UPDATE session_summaries SET learned = '' WHERE id = ?", (summary,))
    index.index_rows(conn, "summary", [summary])
    assert ids() == [f"sum:{summary}:request"]
    # store/forget.py leaves an empty collection id when Chroma was away; should SQLite hand the
    # id to a new row, indexing it must still clear what the old row left.
    with conn:
        conn.execute("UPDATE index_state SET collection_id = '' WHERE kind = 'summary' AND row_id = ?", (summary,))
        conn.execute("UPDATE session_summaries SET learned = 'x', request = '' WHERE id = ?", (summary,))
    index.index_rows(conn, "summary", [summary])
    assert ids() == [f"sum:{summary}:learned"]


@pytest.mark.slow
def test_index_from_config_uses_the_server_url(conn: sqlite3.Connection, server: ChromaServer,
                                               monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CHROMA_URL", server.url)
    ix = Index(settings.load())
    assert ix.location == server.url
    add_rows(conn)
    ix.reindex(conn)
    assert not (data_dir / "chroma").exists()
    assert ix.query("dark theme", 1)[0][0] in ("observation", "prompt")
    monkeypatch.delenv("CLAUDE_MEM_CHROMA_URL")
    assert Index(settings.load()).location == str(data_dir / "chroma")


@pytest.mark.slow
def test_server_down_raises_index_unavailable_and_missing_rows_come_later(conn: sqlite3.Connection, tmp_path: Path) -> None:
    srv = ChromaServer(tmp_path / "srv").start()
    try:
        ix = Index(url=srv.url, installation=ME)
        rows = add_rows(conn)
        ix.index_rows(conn, "observation", rows["observation"][:1])
        srv.stop()
        with pytest.raises(IndexUnavailable, match="unavailable"):
            ix.query("login", 3)
        # Capture goes on: a new row is stored, its indexing fails, nothing is marked indexed.
        new = insert_observation(conn, "s1", "alpha", Observation(type="change", title="Renamed the config loader"),
                                 prompt_number=3)
        with pytest.raises(IndexUnavailable):
            ix.index_rows(conn, "observation", [new])
        assert conn.execute("SELECT count(*) FROM index_state").fetchone()[0] == 1
        srv.start()  # same folder, same port: the same Index reconnects by itself
        assert ix.index_missing(conn) == {"observation": 3, "summary": 1, "prompt": 1, "removed": 0, "vectors": 0}
        assert ix.drift(conn)["in_sync"]
        assert ("observation", new) in [(k, i) for k, i, _ in ix.query("config loader renamed", 3)]
    finally:
        srv.stop()


def test_unreachable_url_raises_index_unavailable() -> None:
    with pytest.raises(IndexUnavailable, match="127.0.0.1"):
        Index(url=f"http://127.0.0.1:{free_port()}", installation=ME).query("anything", 1)


@pytest.mark.slow  # a worker, a service or a Chroma server for seconds
def test_a_stopped_server_times_out_instead_of_hanging_search(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # chromadb 1.5.9 makes its HTTP session without a timeout; chroma.bound_http_timeout sets one
    # through private attributes. When a chromadb upgrade moves them, this query hangs: the test fails.
    monkeypatch.setattr(chroma, "HTTP_TIMEOUT_S", 1.0)
    srv = ChromaServer(tmp_path / "srv").start()
    assert srv.proc is not None
    try:
        ix = Index(url=srv.url, installation=ME)
        assert ix.query("login", 1) == []  # connected while the server answers
        errors: list[str] = []

        def ask() -> None:
            try:
                ix.query("login", 1)
            except IndexUnavailable as exc:
                errors.append(str(exc))

        os.kill(srv.proc.pid, signal.SIGSTOP)  # accepts connections, answers nothing
        try:
            asking = threading.Thread(target=ask, daemon=True)
            started = time.monotonic()
            asking.start()
            asking.join(20)
            assert not asking.is_alive(), "a silent Chroma server hung the query"
            assert time.monotonic() - started < 15 and len(errors) == 1 and "unavailable" in errors[0], errors
        finally:
            os.kill(srv.proc.pid, signal.SIGCONT)
    finally:
        srv.stop()


def test_deleted_folder_raises_then_is_rebuilt(conn: sqlite3.Connection, tmp_path: Path) -> None:
    ix = Index(path=str(tmp_path / "chroma"))
    add_rows(conn)
    ix.index_missing(conn)
    shutil.rmtree(tmp_path / "chroma")
    with pytest.raises(IndexUnavailable, match="removed"):
        ix.query("login", 3)
    counts = ix.index_missing(conn)  # a new, empty collection: every row is missing again
    assert counts == {"observation": 3, "summary": 1, "prompt": 1, "removed": 0, "vectors": 0}
    assert ix.drift(conn)["in_sync"]


def test_corrupt_folder_raises_index_unavailable(conn: sqlite3.Connection, tmp_path: Path) -> None:
    path = tmp_path / "chroma"
    ix = Index(path=str(path))
    add_rows(conn)
    ix.index_missing(conn)
    ix.close()
    (path / "chroma.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(IndexUnavailable, match="unavailable"):
        Index(path=str(path)).query("login", 3)
    # reindex cannot repair a file it cannot open; deleting the folder can (see above).


WRITER = textwrap.dedent("""
    import sys
    from claude_mem.store.db import connect
    from claude_mem.store.memories import Observation, insert_observation
    from claude_mem.index.semantic_index import Index
    conn = connect(sys.argv[1])
    new = insert_observation(conn, "s2", "beta", Observation(type="decision", title="Chose PostgreSQL for the billing service"),
                             prompt_number=9)
    Index(path=sys.argv[2]).index_rows(conn, "observation", [new])
    print(new)
""")


@pytest.mark.slow
def test_a_long_lived_reader_sees_another_process_writes(conn: sqlite3.Connection, tmp_path: Path) -> None:
    # The MCP server keeps its Index open while a worker process writes to the same folder.
    path = str(tmp_path / "chroma")
    reader = Index(path=path)
    add_rows(conn)
    reader.index_missing(conn)
    before = reader.query("database for billing", 10)  # the client is open and warm
    proc = subprocess.run([sys.executable, "-c", WRITER, str(tmp_path / "claude-mem.db"), path],
                          capture_output=True, text=True, timeout=120, env={**os.environ})
    assert proc.returncode == 0, proc.stderr[-2000:]
    new = int(proc.stdout.strip())
    assert ("observation", new) not in [(k, i) for k, i, _ in before]
    assert reader.query("database for billing", 1)[0][:2] == ("observation", new)
    assert reader.drift(conn)["in_sync"]


CATCH_UP = textwrap.dedent("""
    import json, sys
    from claude_mem.store.db import connect
    from claude_mem.index.semantic_index import Index
    print(json.dumps(Index(path=sys.argv[2]).index_missing(connect(sys.argv[1]))))
""")


@pytest.mark.slow
def test_workers_catching_up_together_embed_each_row_once(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """Every worker starts with a catch-up; sessions starting together after Chroma was away
    must not each embed the same missing rows."""
    for n in range(150):
        insert_observation(conn, "s1", "alpha", Observation(type="change", title=f"Step {n} of the migration",
                                                            facts=[f"table {n} was copied"]), prompt_number=n)
    path = str(tmp_path / "chroma")
    Index(path=path).index_missing(conn)  # built, in step
    conn.execute("DELETE FROM index_state")  # as if every row had been stored while Chroma was down
    procs = [subprocess.Popen([sys.executable, "-c", CATCH_UP, str(tmp_path / "claude-mem.db"), path],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ})
             for _ in range(2)]
    counts = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-2000:]
        counts.append(json.loads(out))
    assert sorted(c["observation"] for c in counts) == [0, 150], counts  # one did the work, the other found none left
    assert Index(path=path).drift(conn)["in_sync"]


def test_a_row_forgotten_while_it_is_embedded_keeps_no_documents(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """The memory service embeds rows it read a moment ago while `forget` removes them: the
    documents it then writes must not outlive the rows (seen with a teammate's shared server)."""
    from claude_mem.index.embed import embed_texts
    from claude_mem.store.forget import forget, plan

    rows = add_rows(conn)
    doomed = rows["observation"][1]
    other = connect(str(tmp_path / "claude-mem.db"))  # forget runs in a process of its own
    forgetting: list[int] = []

    def embed_while_forgetting(texts: list[str]):
        if not forgetting:  # the first chunk's rows are read; forget them before they are written
            forgetting.append(doomed)
            forget(other, plan(other, refs=[("observation", doomed)]), index)
        return embed_texts(texts)

    index = Index(path=str(tmp_path / "chroma"), embedder=embed_while_forgetting)
    try:
        index.index_rows(conn, "observation", rows["observation"])
        with index._use("inspect") as store:
            left = [split_doc_id(i)[0] for i in store.collection.get()["ids"]]
        assert forgetting and left and not [d for d in left if d.startswith(f"obs:{doomed}:")], left
        assert conn.execute("SELECT COUNT(*) FROM index_state WHERE kind = 'observation' AND row_id = ?", (doomed,)).fetchone()[0] == 0
        assert index.drift(conn)["observation"]["stale"] == 0
    finally:
        index.close()
        other.close()


def test_document_ids_are_read_by_one_parser() -> None:
    """Every reader of a document id goes through index/documents.py (one parsed by hand once
    crashed the service's catch-up on a prompt's id, which has no ':' after its row id)."""
    assert [fact_number(i) for i in ("obs:12:fact:3", "obs:12:fact:3@inst", "obs:12:main@inst", "prompt:7@inst",
                                     "obs:12:fact:x", "obs:12:fact:٣")] == [3, 3, None, None, None, None]
    assert parse_doc_id("prompt:7@inst") == ("prompt", 7) and parse_doc_id("zzz:7") is None
    ids = ["obs:1:fact:10@i", "obs:1:main@i", "obs:1:fact:2@i"]
    assert sorted(ids, key=document_order) == ["obs:1:main@i", "obs:1:fact:2@i", "obs:1:fact:10@i"]
