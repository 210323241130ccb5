"""`claude-mem search` and `claude-mem reindex` through click's CliRunner, on a real store and a
real embedded Chroma index."""

from __future__ import annotations

import json
import shutil
import socket
import time
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.index.semantic_index import Index
from claude_mem.store.db import connect
from tests.cli_helpers import invoke
from tests.search_helpers import warm_service
from tests.stores import NOW_MS, Stored, build, build_indexed


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    return build_indexed(tmp_path_factory.mktemp("recall-cli") / "data")


@pytest.fixture
def stored(indexed: Stored, monkeypatch: pytest.MonkeyPatch) -> Stored:
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", indexed.config.data_dir)
    return indexed


def hits(*args: str) -> list[tuple[str, int]]:
    out = json.loads(invoke("search", *args, "--json").stdout)
    return [(h["kind"], h["id"]) for h in out["hits"]]


def test_search_prints_an_aligned_table(stored: Stored) -> None:
    warm_service(stored.config)  # the table's footer says hybrid: not a race with the service's start-up
    result = invoke("search", "login crash", "--limit", "3")
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["REF", "DATE", "TYPE", "TITLE", "FROM", "FILES"]
    columns = {line.index(word) for line, word in zip(lines[:4], ["DATE"] + [line.split()[1] for line in lines[1:4]], strict=True)}
    assert len(columns) == 1, "dates line up under DATE"
    row = next(line for line in lines if line.startswith(f"obs:{stored.obs['login']} "))
    assert "bugfix" in row and "Fixed login crash" in row and "src/auth.py, src/session.py" in row
    assert lines[-1].startswith("3 result(s), hybrid") and "claude-mem show REF" in lines[-1]
    assert result.stderr == ""


def test_search_json_and_filters(stored: Stored) -> None:
    out = json.loads(invoke("search", "login crash", "--json").stdout)
    assert out["mode"] == "hybrid" and out["note"] is None and out["hits"][0]["title"]
    assert {"kind", "id", "session_id", "project", "type", "title", "snippet", "created_at_epoch", "files", "score"} <= set(out["hits"][0])
    assert hits("cores on the CI runner", "--project", "beta") == [("observation", stored.obs["ci"]), ("summary", stored.sums["ci"])]
    assert hits("login crash database", "--type", "decision") == [("observation", stored.obs["db"])]
    assert hits("login crash dark mode", "--file", "theme.css") == [("observation", stored.obs["dark"])]
    # The prompt of that turn stands for it: its observation is the hit.
    billing = {("observation", stored.obs["db"]), ("summary", stored.sums["db"])}
    assert set(hits("database billing", "--session", "sess-old")) == billing
    ten_days_ago = (NOW_MS - 10 * 86_400_000) // 1000
    since = __import__("datetime").datetime.fromtimestamp(ten_days_ago).strftime("%Y-%m-%d")
    recent = hits("PostgreSQL billing database login", "--since", since)
    assert recent and ("observation", stored.obs["db"]) not in recent
    assert ("observation", stored.obs["db"]) in hits("PostgreSQL billing database", "--until", since)
    # A bare day as --until means the end of that day: --since D --until D is the whole day D.
    today = __import__("datetime").datetime.fromtimestamp(NOW_MS // 1000).strftime("%Y-%m-%d")
    assert ("observation", stored.obs["login"]) in hits("login crash", "--since", today, "--until", today)
    assert len(hits("login", "--limit", "1")) == 1
    # Meaning alone finds what shares no word with the query.
    by_meaning = set(hits("relational store for invoices", "--mode", "semantic", "--limit", "2"))
    assert by_meaning and by_meaning <= billing
    fts = json.loads(invoke("search", "login", "--mode", "keyword", "--json").stdout)
    assert fts["mode"] == "keyword" and fts["note"] is None
    # The names before 0.2.0 still work, and the answer says the mode's one name.
    old = json.loads(invoke("search", "login", "--mode", "fts", "--json").stdout)
    assert old["mode"] == "keyword" and [h["id"] for h in old["hits"]] == [h["id"] for h in fts["hits"]]
    assert json.loads(invoke("search", "relational store for invoices", "--mode", "vector", "--json").stdout)["mode"] == "semantic"


def test_nothing_found_exits_1_on_one_line(stored: Stored) -> None:
    result = invoke("search", "zebra quantum", "--mode", "keyword", code=1)
    assert result.stdout == "" and result.stderr.strip().splitlines() == ["Error: nothing matches 'zebra quantum'"]
    result = invoke("search", "login", "--project", "nope", code=1)
    assert result.stderr.strip() == "Error: nothing matches 'login' with these filters"


@pytest.mark.parametrize("args", [
    ["search"], ["search", "x", "--limit", "0"], ["search", "x", "--type", "bogus"], ["search", "x", "--mode", "magic"],
    ["search", "x", "--since", "someday"], ["search", "   "], ["search", "x", "--since", "2026-05-02", "--until", "2026-05-01"],
    ["search", "x", "--nope"], ["reindex", "--bogus"],
])
def test_bad_input_exits_2_with_one_line(stored: Stored, args: list[str]) -> None:
    result = invoke(*args, code=2)
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: ")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_keyword_fallback_is_one_note(stored: Stored, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CHROMA_URL", f"http://127.0.0.1:{free_port()}")
    result = invoke("search", "login crash")
    [note] = result.stderr.strip().splitlines()
    assert note.startswith("note: semantic index at http://127.0.0.1:") and note.endswith("keyword results only")
    assert f"obs:{stored.obs['login']} " in result.stdout and "result(s), keyword" in result.stdout
    out = json.loads(invoke("search", "login crash", "--json").stdout)
    assert out["mode"] == "keyword" and "keyword results only" in out["note"]


@pytest.mark.slow
def test_without_a_built_index_search_says_so_and_reindex_builds_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stored = build(tmp_path / "fresh")
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", stored.config.data_dir)
    result = invoke("search", "login crash")
    assert f"obs:{stored.obs['login']} " in result.stdout, "the first search answers without an index"
    # ... and the memory service it started builds one from SQLite.
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (tmp_path / "fresh" / "chroma").exists():
        time.sleep(0.2)
    assert (tmp_path / "fresh" / "chroma").exists()

    out = json.loads(invoke("reindex", "--json").stdout)
    assert {k: out[k] for k in ("observation", "summary", "prompt")} == {"observation": 5, "summary": 4, "prompt": 3}
    assert out["location"] == str(tmp_path / "fresh" / "chroma") and out["seconds"] >= 0
    conn = connect(stored.config.db_path)
    try:
        assert Index(settings.load()).drift(conn)["in_sync"]
    finally:
        conn.close()
    assert json.loads(invoke("search", "login crash", "--json").stdout)["note"] is None
    line = invoke("reindex").stdout.strip()
    assert line.startswith("reindexed 5 observations, 4 summaries and 3 prompts into ") and line.endswith(" s")

    shutil.rmtree(tmp_path / "fresh" / "chroma")  # even a deleted index is rebuilt from SQLite
    assert json.loads(invoke("reindex", "--json").stdout)["observation"] == 5


def test_reindex_errors(stored: Stored, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CLAUDE_MEM_CHROMA_URL", f"http://127.0.0.1:{free_port()}")
    result = invoke("reindex", code=1)
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: semantic index at http://127.0.0.1:")
    monkeypatch.delenv("CLAUDE_MEM_CHROMA_URL")
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INDEX", "0")
    assert "semantic index is off" in invoke("reindex", code=1).stderr
    assert "semantic index is off" in invoke("search", "login").stderr
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(tmp_path / "nothing"))
    assert invoke("search", "login", code=1).stderr.startswith("Error: no database at ")
