"""The MCP server through the official `mcp` client: in process for the contract and the edge
cases, over stdio (`claude-mem mcp` as Claude Code starts it) on real stored data."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import socket
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from claude_mem.mcp.server import MAX_RECORDS_CHARS, MAX_SEARCH_CHARS, MAX_TIMELINE_CHARS, build_server
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, insert_observation
from claude_mem.store.records import ensure_session
from tests.mcp_helpers import call, stdio_server
from tests.search_helpers import warm_service
from tests.stores import NOW_MS, Stored, build_indexed, config_for

TOOLS = {
    "search": ({"query"}, {"query", "project", "type", "session_id", "since", "until", "file", "limit"}),
    "timeline": (set(), {"anchor", "query", "before", "after", "project"}),
    "get_observations": ({"ids"}, {"ids"}),
    "recent_sessions": (set(), {"project", "limit"}),
    "ask": ({"question"}, {"question", "project"}),
    "remember": ({"text"}, {"text", "type", "files", "supersedes"}),
}
READ_ONLY = {"search", "timeline", "get_observations", "recent_sessions", "ask"}


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Stored:
    return build_indexed(tmp_path_factory.mktemp("mcp") / "data")


@pytest.fixture(scope="module")
def alpha_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # Outside git, a folder's name is its project.
    path = tmp_path_factory.mktemp("cwd") / "alpha"
    path.mkdir()
    return path


def run(fn: Callable[[Client], Awaitable[Any]], server: Any) -> Any:
    async def main() -> Any:
        async with Client(server) as client:
            return await fn(client)

    return asyncio.run(main())


def test_tool_contract(stored: Stored, alpha_dir: Path) -> None:
    tools = run(lambda c: c.list_tools(), build_server(stored.config, cwd=str(alpha_dir))).tools
    assert {t.name: (set(t.input_schema.get("required", [])), set(t.input_schema["properties"])) for t in tools} == TOOLS
    by_name = {t.name: t for t in tools}
    props = {name: t.input_schema["properties"] for name, t in by_name.items()}
    assert props["search"]["limit"] == {"default": 10, "description": "Most rows to return.", "maximum": 50, "minimum": 1,
                                        "title": "Limit", "type": "integer"}
    types = next(option for option in props["search"]["type"]["anyOf"] if "enum" in option)
    assert types["enum"] == ["decision", "bugfix", "feature", "refactor", "discovery", "change"]
    assert props["search"]["query"]["maxLength"] == 500
    assert "format" in json.dumps(props["search"]["since"])  # date / date-time
    # A teammate's ref (obs:12@laptop-b, see test_team.py) is accepted too, to say what can be done with it.
    assert props["timeline"]["anchor"]["anyOf"][0]["pattern"] == "^(obs|sum|prompt):[1-9][0-9]*(@[A-Za-z0-9._-]{1,64})?$"
    assert props["timeline"]["before"]["maximum"] == 25
    ids = props["get_observations"]["ids"]
    assert ids["maxItems"] == 20 and [option["type"] for option in ids["items"]["anyOf"]] == ["integer", "string"]
    assert ids["items"]["anyOf"][0]["minimum"] == 1 and "@" in ids["items"]["anyOf"][1]["pattern"]
    assert props["recent_sessions"]["limit"]["maximum"] == 20
    assert props["remember"]["files"]["anyOf"][0]["maxItems"] == 20 and "supersedes" not in by_name["remember"].input_schema["required"]
    for tool in tools:
        assert tool.annotations is not None and tool.annotations.read_only_hint is (tool.name in READ_ONLY)
        assert tool.annotations.destructive_hint is False
        # Every description teaches the same three steps; remember's says when to write.
        assert "search -> timeline -> get_observations" in " ".join((tool.description or "").split()) \
            or tool.name in ("recent_sessions", "remember")
        assert tool.output_schema is None
    assert "user asks you to remember" in " ".join((by_name["remember"].description or "").split())


@pytest.mark.slow
def test_workflow_over_stdio(stored: Stored, alpha_dir: Path) -> None:
    async def scenario(client: Client) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, (name, arguments) in {
            "search": ("search", {"query": "why did the app crash at login"}),
            "timeline": ("timeline", {"anchor": f"obs:{stored.obs['login']}", "before": 1, "after": 2}),
            "timeline_query": ("timeline", {"query": "PostgreSQL billing"}),
            "get": ("get_observations", {"ids": [stored.obs["login"], f"obs:{stored.obs['dark']}", 99999]}),
            "recent": ("recent_sessions", {}),
            "all": ("search", {"query": "how many cores does the CI runner have", "project": "*", "limit": 3}),
            "ask": ("ask", {"question": "why did the app crash at login"}),
        }.items():
            is_error, text = await call(client, name, **arguments)
            assert not is_error, text
            out[key] = text
        return out

    # ask's extractive answer (no model is asked with the heuristic synthesizer): tests/test_ask.py has the model's.
    out = run(scenario, stdio_server(stored.config.data_dir, alpha_dir, CLAUDE_MEM_SYNTHESIZER="heuristic"))
    rows = out["search"].splitlines()
    assert rows[0].endswith("in project alpha, best first:") and rows[1] == "ref | date | type (made from) | title | files | ~tokens"
    login = next(r for r in rows if r.startswith(f"obs:{stored.obs['login']} |"))
    assert " | bugfix | Fixed login crash | src/auth.py, src/session.py | " in login and int(login.rsplit("| ", 1)[1]) > 10
    assert "beta" not in out["search"] and "CI runner" not in out["search"]  # the current project only
    assert out["search"].splitlines()[-1].startswith("Next: timeline(")

    timeline = out["timeline"].splitlines()
    assert timeline[0].startswith("Session sess-alpha (project alpha): items 1-4 of 7")
    order = [m[1] for m in (re.search(r"^[ >] \d\d:\d\d turn \d+ (\S+)", line) for line in timeline) if m]
    assert order == [f"prompt:{stored.prompts['login']}", f"obs:{stored.obs['login']}", f"obs:{stored.obs['tests']}",
                     f"sum:{stored.sums['login']}"]
    assert next(line for line in timeline if line.startswith(">")).endswith("~" + login.rsplit("| ", 1)[1] + "t")
    assert "(0 earlier and 3 later items not shown" in out["timeline"]
    assert "> " in out["timeline_query"] and f"obs:{stored.obs['db']} decision: Chose PostgreSQL" in out["timeline_query"]
    assert "Session sess-old" in out["timeline_query"]

    records = out["get"].split("\n\n")
    assert records[0].startswith(f"## obs:{stored.obs['login']} · bugfix · ") and "- token refresh raced with logout" in records[0]
    assert "Files modified: src/session.py" in records[0] and "Concepts: race condition" in records[0]
    assert records[1].startswith(f"## obs:{stored.obs['dark']} · feature") and records[2] == "Not found: obs:99999."

    assert out["recent"].splitlines()[0] == "Latest 2 session(s) in project alpha, newest first:"
    assert out["recent"].index("session sess-alpha") < out["recent"].index("session sess-old")
    assert "next steps: none" in out["recent"] and "completed: chose PostgreSQL" in out["recent"]
    assert out["all"].splitlines()[2].startswith(f"obs:{stored.obs['ci']} | ")  # found by meaning and words
    assert out["ask"].startswith("- Fixed login crash") and f"[obs:{stored.obs['login']}, " in out["ask"]
    assert "(extractive answer from project alpha;" in out["ask"] and "CI runner" not in out["ask"]


@pytest.mark.slow
def test_the_prompt_being_answered_is_not_recalled_to_its_own_session(stored: Stored, alpha_dir: Path) -> None:
    """Claude Code starts the server with CLAUDE_CODE_SESSION_ID: that session's newest prompt is
    the question the agent is answering, already in its context, and would be its own best match."""
    live, earlier = f"prompt:{stored.prompts['dark']}", f"prompt:{stored.prompts['login']}"  # both in sess-alpha

    async def scenario(client: Client) -> dict[str, str]:
        out = {}
        for key, (name, arguments) in {"search": ("search", {"query": "add a dark mode", "limit": 10}),
                                       "anchor": ("timeline", {"query": "add a dark mode", "before": 0, "after": 0}),
                                       "earlier": ("search", {"query": "the app crashes at login"})}.items():
            is_error, out[key] = await call(client, name, **arguments)
            assert not is_error, out[key]
        return out

    def refs(text: str) -> list[str]:
        return [line.split(" | ")[0] for line in text.splitlines()[2:] if " | " in line]

    dark, login = f"obs:{stored.obs['dark']}", f"obs:{stored.obs['login']}"
    plain = run(scenario, stdio_server(stored.config.data_dir, alpha_dir))
    # A prompt stands for its turn: the turn's observation comes in its place.
    assert dark in refs(plain["search"]) and live not in refs(plain["search"]) and "> " in plain["anchor"]
    inside = run(scenario, stdio_server(stored.config.data_dir, alpha_dir, CLAUDE_CODE_SESSION_ID="sess-alpha"))
    assert live not in refs(inside["search"]) and dark in refs(inside["search"])  # found by its own words
    assert "> " in inside["anchor"] and f" {live} " not in next(line for line in inside["anchor"].splitlines() if line.startswith(">"))
    assert login in refs(inside["earlier"]) and earlier not in refs(inside["earlier"])  # earlier turns are still memories
    other = run(scenario, stdio_server(stored.config.data_dir, alpha_dir, CLAUDE_CODE_SESSION_ID="sess-old"))
    assert dark in refs(other["search"]) and live not in refs(other["search"])


@pytest.mark.slow
def test_bad_arguments_are_tool_errors_over_stdio(stored: Stored, alpha_dir: Path) -> None:
    bad = [
        ("search", {}, "query: Field required"),
        ("search", {"query": "x", "limit": 500}, "limit: Input should be less than or equal to 50 (got 500)"),
        ("search", {"query": "x", "type": "bogus"}, "type: Input should be 'decision'"),
        ("search", {"query": "x", "since": "last week"}, "since: Input should be a valid datetime or date"),
        ("search", {"query": "x", "since": "2026-05-02", "until": "2026-05-01"}, "since must be before until"),
        ("search", {"query": "   "}, "query is empty"),
        ("search", {"query": "x" * 501}, "query: String should have at most 500 characters"),
        ("timeline", {}, "give either anchor"),
        ("timeline", {"anchor": "obs:1", "query": "x"}, "give either anchor"),
        ("timeline", {"anchor": "12"}, "anchor: String should match pattern"),
        ("timeline", {"anchor": "sum:99999"}, "there is no sum:99999"),
        ("timeline", {"anchor": "obs:1", "before": -1}, "before: Input should be greater than or equal to 0"),
        ("get_observations", {"ids": []}, "ids: List should have at least 1 item"),
        ("get_observations", {"ids": list(range(1, 22))}, "ids: List should have at most 20 items"),
        ("get_observations", {"ids": ["sum:1"]}, "ids: Input should be a valid integer"),
        ("get_observations", {"ids": [99999]}, "no such observation: obs:99999"),
        ("recent_sessions", {"limit": 0}, "limit: Input should be greater than or equal to 1"),
        ("nosuch", {}, "Unknown tool: nosuch"),
    ]

    async def scenario(client: Client) -> list[tuple[bool, str]]:
        return [await call(client, name, **arguments) for name, arguments, _ in bad]

    results = run(scenario, stdio_server(stored.config.data_dir, alpha_dir))
    for (name, arguments, expected), (is_error, text) in zip(bad, results, strict=True):
        assert is_error, (name, arguments, text)
        assert expected in text, (name, arguments, text)
        assert "Traceback" not in text and "errors.pydantic.dev" not in text and len(text.splitlines()) == 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_without_chroma_search_answers_from_keywords_and_says_so(stored: Stored, alpha_dir: Path) -> None:
    async def scenario(client: Client) -> list[tuple[bool, str]]:
        return [await call(client, "search", query="login crash", limit=3),
                await call(client, "timeline", query="dark mode")]

    params = stdio_server(stored.config.data_dir, alpha_dir, CLAUDE_MEM_CHROMA_URL=f"http://127.0.0.1:{free_port()}")
    (s_err, search_text), (t_err, timeline_text) = run(scenario, params)
    assert not s_err and not t_err
    assert f"obs:{stored.obs['login']} | " in search_text
    assert "Note: semantic index at http://127.0.0.1:" in search_text and "keyword results only" in search_text
    assert "> " in timeline_text and "keyword results only" in timeline_text


@pytest.mark.slow
def test_first_search_needs_no_service_and_the_service_builds_the_index(tmp_path: Path, alpha_dir: Path) -> None:
    from claude_mem.service import client as service_client
    from tests.stores import build

    stored = build(tmp_path / "data")  # never indexed, no service running
    server = build_server(stored.config, cwd=str(alpha_dir))
    is_error, text = run(lambda c: call(c, "search", query="login"), server)
    assert not is_error and f"obs:{stored.obs['login']} | " in text
    # That search started the memory service, which builds the index from SQLite (this process never opens Chroma).
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with contextlib.suppress(service_client.ServiceUnavailable, service_client.ServiceError):
            if service_client.call(stored.config.data_dir, "status", timeout_s=5, start=False)["index_lag"] == 0:
                break
        time.sleep(0.2)
    is_error, text = run(lambda c: call(c, "search", query="authentication failure after signing out"), server)
    assert not is_error and "keyword results only" not in text and text.splitlines()[2].startswith(f"obs:{stored.obs['login']} | ")
    stored.config.values["semantic_index"] = False
    is_error, text = run(lambda c: call(c, "search", query="login"), build_server(stored.config, cwd=str(alpha_dir)))
    assert not is_error and "semantic index is off" in text


def test_nothing_captured_yet(tmp_path: Path, alpha_dir: Path) -> None:
    config = config_for(tmp_path / "empty")
    server = build_server(config, cwd=str(alpha_dir))

    async def scenario(client: Client) -> list[tuple[bool, str]]:
        return [await call(client, "search", query="anything"), await call(client, "recent_sessions"),
                await call(client, "timeline", anchor="obs:1"), await call(client, "get_observations", ids=[1])]

    for is_error, text in run(scenario, server):
        assert not is_error and text == "No memories yet: nothing has been captured on this machine."
    assert not Path(config.db_path).exists(), "a read does not create the database"


def test_filters_and_projects(stored: Stored, alpha_dir: Path) -> None:
    warm_service(stored.config)  # each filter's answer is the hybrid one, not a keyword fallback while the service starts
    server = build_server(stored.config, cwd=str(alpha_dir))

    async def scenario(client: Client) -> dict[str, str]:
        today = __import__("datetime").date.fromtimestamp(NOW_MS / 1000).isoformat()
        queries = {
            "type": {"query": "login crash database", "type": "decision"},
            "file": {"query": "login crash dark mode", "file": "theme.css"},
            "since": {"query": "database billing PostgreSQL login", "since": today},
            "until": {"query": "database billing PostgreSQL dark mode", "until": today, "limit": 50},
            "session": {"query": "login database dark", "session_id": "sess-old"},
            "beta": {"query": "CI cores", "project": "beta"},
            "unknown": {"query": "login", "project": "gamma"},
        }
        out = {}
        for key, arguments in queries.items():
            is_error, out[key] = await call(client, "search", **arguments)
            assert not is_error, out[key]
        _, out["recent_all"] = await call(client, "recent_sessions", project="*", limit=1)
        return out

    out = run(scenario, server)

    def refs(text: str) -> set[str]:
        return {line.split(" | ")[0] for line in text.splitlines()[2:] if " | " in line}

    assert refs(out["type"]) == {f"obs:{stored.obs['db']}"}
    assert refs(out["file"]) == {f"obs:{stored.obs['dark']}"}
    assert f"obs:{stored.obs['db']}" not in refs(out["since"]) and refs(out["since"])
    assert f"obs:{stored.obs['db']}" in refs(out["until"]) and f"obs:{stored.obs['dark']}" in refs(out["until"])
    old_session = {f"obs:{stored.obs['db']}", f"sum:{stored.sums['db']}", f"prompt:{stored.prompts['db']}"}
    assert refs(out["session"]) and refs(out["session"]) <= old_session
    assert refs(out["beta"]) == {f"obs:{stored.obs['ci']}", f"sum:{stored.sums['ci']}"}
    assert out["unknown"] == "No memories match in project gamma. Projects with memories: alpha, beta (or project='*')."
    assert out["recent_all"].splitlines()[1].startswith("## ") and " · project " in out["recent_all"]


def test_results_stay_bounded_with_huge_memories(tmp_path: Path, alpha_dir: Path) -> None:
    config = config_for(tmp_path / "data")
    config.ensure_dirs()
    config.values["semantic_index"] = False  # bounds are about text, not ranking
    conn = connect(config.db_path)
    ids = []
    with transaction(conn):
        ensure_session(conn, "sess-big", project="alpha", cwd=None, transcript_path=None)
        for n in range(80):
            ids.append(insert_observation(conn, "sess-big", "alpha", Observation(
                type="discovery", title=f"huge finding {n} " + "word " * 200, narrative="lorem ipsum " * 5000,
                facts=[f"fact {k} " + "x" * 1000 for k in range(100)], files_read=[f"src/dir{n}/file{k}.py" for k in range(50)]),
                prompt_number=n // 10))
    conn.close()
    server = build_server(config, cwd=str(alpha_dir))

    async def scenario(client: Client) -> list[tuple[bool, str]]:
        return [await call(client, "search", query="huge finding", limit=50),
                await call(client, "get_observations", ids=ids[:20]),
                await call(client, "timeline", anchor=f"obs:{ids[40]}", before=25, after=25)]

    (_, search_text), (_, records), (_, timeline) = run(scenario, server)
    assert len(search_text) <= MAX_SEARCH_CHARS and search_text.count("\nobs:") == 50
    assert len(records) <= MAX_RECORDS_CHARS and records.startswith(f"## obs:{ids[0]} ")
    assert "Left out to stay under 30000 characters: ids" in records and "- … 80 more facts" in records
    # The window narrows around the anchor instead of losing its end.
    assert len(timeline) <= MAX_TIMELINE_CHARS and re.search(rf"^> .* obs:{ids[40]} ", timeline, re.M)
    assert "later items not shown" in timeline.splitlines()[-1]
    shown = re.findall(r"turn \d+ obs:(\d+)", timeline)
    assert str(ids[40]) in shown and 10 < len(shown) < 51 and "cut to keep" not in timeline
    print(f"sizes: search {len(search_text)}, get_observations {len(records)}, timeline {len(timeline)} chars")
