"""Telling, correcting and forgetting memory, searched by meaning: the real
`claude-mem` console script on a fresh data folder, a real memory service indexing with MiniLM
into the embedded Chroma, and the agent's `remember` through `claude-mem mcp` and the official
MCP client. (tests/test_writes.py has the keyword side and the bad input; tests/test_team.py a
shared Chroma server.)"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from claude_mem import settings
from claude_mem.mcp import shim
from claude_mem.mcp.host import write_current_description
from claude_mem.service.control import stop_service
from claude_mem.service.search import search_memory
from claude_mem.store.db import connect
from tests.mcp_helpers import call, stdio_server
from tests.search_helpers import WARM_UP_S
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

CLAUDE_MEM = Path(sys.executable).with_name("claude-mem")
INDEXED_S = 60  # how long the service may take to index a row on a loaded machine (it takes well under a second)
DISTRACTORS = [
    "The CI runner has 4 cores and 16 GB of memory",
    "Error messages are localized through gettext catalogs",
    "The mobile app caches product images for a week",
    "Database migrations are numbered SQL files applied in order",
]


def cm(cwd: Path, *args: str, code: int = 0) -> str:
    proc = subprocess.run([str(CLAUDE_MEM), *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CLAUDE_MEM_SYNTHESIZER": "heuristic"})
    assert proc.returncode == code, (args, proc.returncode, proc.stdout, proc.stderr)
    return proc.stdout


def semantic_hits(cwd: Path, query: str) -> list[str]:
    """`search --mode semantic`'s refs, best first ([] while the service answers by keywords only)."""
    proc = subprocess.run([str(CLAUDE_MEM), "search", query, "--mode", "semantic", "--json"], cwd=cwd, capture_output=True,
                          text=True, timeout=120)
    found = json.loads(proc.stdout) if proc.stdout.strip() else {"mode": None, "hits": []}
    return [f"obs:{h['id']}" for h in found["hits"] if h["kind"] == "observation"] if found["mode"] == "semantic" else []


def stale(row_id: int) -> bool:
    conn = connect(settings.load().db_path)
    try:
        row = conn.execute("SELECT collection_id FROM index_state WHERE kind = 'observation' AND row_id = ?", (row_id,)).fetchone()
    finally:
        conn.close()
    return row is None or row[0] == ""


@pytest.fixture
def project(tmp_path: Path, data_dir: Path) -> Path:
    folder = tmp_path / "kiln"
    folder.mkdir()
    return folder


def test_remembered_edited_and_forgotten_memory_is_found_by_meaning_at_once(project: Path, data_dir: Path) -> None:
    assert not data_dir.exists()  # a fresh data folder
    for text in DISTRACTORS:
        cm(project, "remember", text)
    # The first `remember` started the memory service; a search that may wait is answered by
    # meaning once its first catch-up has built the index, not by keywords because it is not there yet.
    conn = connect(settings.load().db_path)
    try:
        first = search_memory(settings.load(), conn, "how many processors does the build machine have", timeout_s=WARM_UP_S,
                              mode="semantic")
    finally:
        conn.close()
    assert first.mode == "semantic" and first.note is None, (first.mode, first.note)
    assert wait_until(lambda: semantic_hits(project, "how many processors does the build machine have")[:1] == ["obs:1"], INDEXED_S)

    said = cm(project, "remember", "We ship to production with `just release`, every Thursday afternoon")
    ref = said.split()[2]
    assert said.startswith(f"remembered as {ref} in kiln") and ref.startswith("obs:")
    returned = time.monotonic()
    assert wait_until(lambda: semantic_hits(project, "how and when do we deploy to prod?")[:1] == [ref], INDEXED_S)
    print(f"\nremember -> first hit by meaning: {time.monotonic() - returned:.2f} s")

    cm(project, "edit", ref, "--title", "Invoices go out as PDF", "--text", "Customer invoices are emailed as PDF files on the"
       " first day of each month")
    edited = time.monotonic()
    assert wait_until(lambda: not stale(int(ref[4:])) and semantic_hits(project, "when are bills sent to clients?")[:1] == [ref],
                      INDEXED_S)
    print(f"edit -> first hit by meaning: {time.monotonic() - edited:.2f} s")
    assert json.loads(cm(project, "show", ref, "--json"))["title"] == "Invoices go out as PDF"

    cm(project, "edit", ref, "--undo")
    assert wait_until(lambda: semantic_hits(project, "how and when do we deploy to prod?")[:1] == [ref], INDEXED_S)

    cm(project, "forget", ref, "--yes")
    assert semantic_hits(project, "how and when do we deploy to prod?") == []
    assert semantic_hits(project, "how many CPU cores does the CI machine have?")[:1] == ["obs:1"]  # the others are still found
    stop_service(str(data_dir))


def test_the_agent_remembers_through_claude_mem_mcp(tmp_path: Path, data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The real MCP client over stdio, as Claude Code starts `claude-mem mcp`, on a fresh data
    folder: `remember` is listed beside the read-only tools, not read-only itself, and what it
    stores is the agent's, found by the search tool."""
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INDEX", "0")
    cwd = tmp_path / "kiln"
    cwd.mkdir()

    async def scenario() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(stdio_server(data_dir, cwd, CLAUDE_MEM_SEMANTIC_INDEX="0")) as client:
            out["tools"] = {t.name: t.annotations for t in (await client.list_tools()).tools}
            out["first"] = await call(client, "remember", text="The release branch is cut every other Monday (wombat-3307)")
            out["again"] = await call(client, "remember", text="The release branch is cut every other Monday (wombat-3307)")
            ref = out["first"][1].split()[2]
            out["replaced"] = await call(client, "remember", text="The release branch is cut every Monday now", type="decision",
                                         files=["docs/release.md"], supersedes=ref)
            out["empty"] = await call(client, "remember", text="<private>only this</private>")
            out["long"] = await call(client, "remember", text="w" * 100_000)
            out["unknown"] = await call(client, "remember", text="x", supersedes="obs:999999")
            out["search"] = await call(client, "search", query="wombat release branch")
        return out

    out = asyncio.run(scenario())
    tools = out["tools"]
    assert tools["remember"].read_only_hint is False and tools["remember"].destructive_hint is False
    assert all(tools[name].read_only_hint is True for name in ("search", "timeline", "get_observations", "recent_sessions", "ask"))
    error, said = out["first"]
    ref = said.split()[2]
    assert not error and said == f"Remembered as {ref} in project kiln."
    assert out["again"] == (False, f"Already remembered as {ref} in project kiln.")
    error, said = out["replaced"]
    assert not error and f"It replaces {ref}, which is no longer pushed." in said
    assert out["empty"][0] and "empty once its <private> spans are removed" in out["empty"][1]
    assert out["long"][0] and "over the limit of 4,000" in out["long"][1]
    assert out["unknown"][0] and "no observation obs:999999" in out["unknown"][1]
    assert not out["search"][0] and f"{ref} | " in out["search"][1]

    conn = connect(settings.load().db_path)
    try:
        rows = [tuple(r) for r in conn.execute("SELECT source, provenance, session_id, files_read FROM observations ORDER BY id")]
        marks = [tuple(r) for r in conn.execute("SELECT old_id, relation, author FROM marks")]
    finally:
        conn.close()
    assert rows == [("agent", '["agent"]', "stated:kiln", "[]"),
                    ("agent", '["agent"]', "stated:kiln", json.dumps([str(cwd / "docs" / "release.md")]))]
    assert marks == [(int(ref[4:]), "supersedes", "agent")]


def test_the_shims_description_lists_remember_as_the_one_write(data_dir: Path) -> None:
    """What `claude-mem mcp` answers Claude Code's first tools/list from (written by install,
    doctor --fix and the service, keyed to the code: mcp/args.py is part of the key)."""
    config = settings.load()
    write_current_description(config)
    answers = shim.read_description(config.data_dir)
    assert os.path.join("claude_mem", "mcp", "args.py") in shim.fingerprint()
    listed = [a for key, a in answers.items() if key.startswith("tools/list ")]
    assert listed
    for answer in listed:
        hints = {t["name"]: t.get("annotations", {}).get("readOnlyHint") for t in answer["tools"]}
        assert hints == {"search": True, "timeline": True, "get_observations": True, "recent_sessions": True, "ask": True,
                         "remember": False}
