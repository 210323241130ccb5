"""Asking memory a question: `claude-mem ask`, the MCP tool `ask`, and their core.

Real SQLite stores (tests/stores.py), the keyword search (semantic index off: these tests are not
about search by meaning), the real claude-agent-sdk driving the fake Claude CLI
(tests/fakes/fake_claude.py) for the model's side, and the official MCP client. The slow test at
the end runs the real Claude Code CLI against the fake Messages API on 127.0.0.1."""

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
from claude_mem.ask.answer import DONT_KNOW, ask
from claude_mem.ask.model import NO_MODEL_FILE, answer_with_model, request_text
from claude_mem.mcp.server import build_server
from claude_mem.processes.census import observer_dir
from claude_mem.store import budget, marks
from claude_mem.store.db import transaction
from claude_mem.store.memories import Observation, insert_observation
from tests.cli_helpers import invoke, one_error_line
from tests.fakes.fake_claude import write_wrapper
from tests.stores import Stored, populate


@pytest.fixture
def keywords(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INDEX", "0")


@pytest.fixture
def store(keywords: None, data_dir: Path) -> Stored:
    return populate()


def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steps: list[dict[str, Any]]) -> Path:
    """The fake Claude CLI as the observer's, answering `steps`; returns its log (JSON lines)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": steps}))
    log = tmp_path / "fake-claude.jsonl"
    monkeypatch.setenv("FAKE_CLAUDE_SCRIPT", str(script))
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(log))
    monkeypatch.setenv("CLAUDE_MEM_CLI_PATH", write_wrapper(tmp_path / "bin"))
    monkeypatch.setenv("CLAUDE_MEM_SYNTHESIZER", "model")
    return log


def logged(log: Path, event: str) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [e for e in map(json.loads, log.read_text().splitlines()) if e["event"] == event]


# --- the extractive answer -------------------------------------------------------------------------

def test_the_extractive_answer_gives_the_best_sentences_with_their_refs(store: Stored) -> None:
    config = settings.load()
    answer = ask(config, store.conn, "why did the login crash", project="alpha")
    assert answer.source == "extractive" and answer.tokens == 0
    lines = answer.answer.splitlines()
    # The best memory first: its title, then the fact that shares most words with the question.
    assert lines[0].startswith("- Fixed login crash — auth; token refresh raced with logout.")
    assert lines[0].endswith(f"[obs:{store.obs['login']}, " + lines[0].rsplit(", ", 1)[1])
    assert answer.refs[0] == f"obs:{store.obs['login']}" and all(f"[{r}, " in answer.answer for r in answer.refs)
    assert len(answer.answer) <= config.ask_chars
    assert "CI runner" not in answer.answer  # another project's memory


def test_the_answer_stays_within_ask_chars(store: Stored, monkeypatch: pytest.MonkeyPatch) -> None:
    with transaction(store.conn):
        for n in range(30):
            insert_observation(store.conn, "sess-alpha", "alpha", Observation(
                type="discovery", title=f"Login crash clue number {n} about the session token refresh",
                facts=[f"the login crash happened again on host {n}"]), prompt_number=1)
    monkeypatch.setenv("CLAUDE_MEM_ASK_CHARS", "300")
    answer = ask(settings.load(), store.conn, "login crash token", project="alpha")
    assert 200 < len(answer.answer) <= 300 and len(answer.refs) == len(answer.answer.splitlines()) >= 2


def test_a_question_nothing_bears_on_is_answered_i_dont_know_without_a_model_call(
        store: Stored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = fake_model(tmp_path, monkeypatch, [{"reply": "should never be asked"}])
    answer = ask(settings.load(), store.conn, "how long should bread dough rise", project="alpha", model=answer_with_model)
    assert (answer.answer, answer.refs, answer.source, answer.tokens) == (DONT_KNOW, [], "extractive", 0)
    assert logged(log, "start") == []


def test_what_something_newer_replaced_is_left_out(store: Stored) -> None:
    with transaction(store.conn):
        new = insert_observation(store.conn, "sess-alpha", "alpha", Observation(
            type="bugfix", title="Login crash fixed for good", facts=["the login crash came from a stale session cookie"]),
            prompt_number=2)
        marks.add(store.conn, store.obs["login"], new, "supersedes", "person", reason="the real cause")
    answer = ask(settings.load(), store.conn, "why did the login crash", project="alpha")
    assert f"obs:{new}" in answer.refs and f"obs:{store.obs['login']}" not in answer.refs
    assert "token refresh raced" not in answer.answer


# --- the model's answer (the real SDK, the fake CLI) ---------------------------------------------

def test_the_model_answers_with_the_evidence_in_its_request_and_its_tokens_counted(
        store: Stored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    login = f"obs:{store.obs['login']}"
    log = fake_model(tmp_path, monkeypatch, [{"reply": f"A token refresh raced with logout; a lock fixed it [{login}]."}])
    question = "why did the login crash <private>hunter2</private> with password=sup3rs3cretvalue"
    answer = ask(settings.load(), store.conn, question, project="alpha", model=answer_with_model)
    assert answer.source == "model" and answer.refs == [login] and answer.tokens > 0
    assert answer.answer == f"A token refresh raced with logout; a lock fixed it [{login}]."
    sent = " ".join(e["message"]["message"]["content"] if isinstance(e["message"]["message"]["content"], str)
                    else json.dumps(e["message"]["message"]["content"]) for e in logged(log, "recv") if e["message"].get("type") == "user")
    assert "token refresh raced with logout" in sent and f"[{login}]" in sent  # the evidence, with its ref
    assert "hunter2" not in sent and "sup3rs3cretvalue" not in sent  # redacted before it is sent
    start = logged(log, "start")[0]
    assert start["cwd"] == observer_dir(str(settings.load().data_dir))
    # Counted in the day's spend, which `stats` shows and observer_daily_tokens caps.
    assert budget.spent(store.conn)["total"] == answer.tokens
    stats = json.loads(subprocess.run([sys.executable, "-m", "claude_mem", "stats", "--json"], capture_output=True, text=True,
                                      check=True, env=os.environ.copy()).stdout)
    assert stats["observer_today"]["tokens"] == answer.tokens and stats["observer_today"]["replies"] == 1


def test_without_a_login_the_answer_is_extractive_and_the_model_is_not_tried_again(
        store: Stored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = fake_model(tmp_path, monkeypatch, [{"error": "auth"}, {"reply": "never sent"}])
    config = settings.load()
    first = ask(config, store.conn, "why did the login crash", project="alpha", model=answer_with_model)
    assert first.source == "extractive" and "did not answer (auth)" in (first.note or "")
    assert first.refs[0] == f"obs:{store.obs['login']}"
    assert os.path.exists(os.path.join(observer_dir(config.data_dir), NO_MODEL_FILE))
    second = ask(config, store.conn, "why did the login crash", project="alpha", model=answer_with_model)
    assert second.answer == first.answer and len(logged(log, "start")) == 1  # no second CLI start


@pytest.fixture
def logged_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No login variable and an empty Claude config folder; returns where its credentials go."""
    from claude_mem import login

    for name in (*login.CREDENTIAL_ENV, *login.ENDPOINT_ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude-config"))
    (tmp_path / "claude-config").mkdir()
    return tmp_path / "claude-config" / ".credentials.json"


@pytest.mark.parametrize("login", ["api key", "credentials file", "base url"])
def test_a_login_that_appears_ends_the_no_model_hold_at_once(
        store: Stored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, logged_out: Path, login: str) -> None:
    """The hold spares a CLI start while nothing changed; a user who then logs in (a key in the
    environment, Claude Code's credentials file written, another endpoint) gets the model's answer
    at the next ask, not an hour later."""
    ref = f"obs:{store.obs['login']}"
    log = fake_model(tmp_path, monkeypatch, [{"error": "auth"}, {"reply": f"A token refresh raced with logout [{ref}]."}])
    config = settings.load()
    first = ask(config, store.conn, "why did the login crash", project="alpha", model=answer_with_model)
    held = ask(config, store.conn, "why did the login crash", project="alpha", model=answer_with_model)
    assert first.source == held.source == "extractive" and len(logged(log, "start")) == 1
    if login == "api key":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-new")
    elif login == "credentials file":
        logged_out.write_text("{}")
    else:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    answer = ask(config, store.conn, "why did the login crash", project="alpha", model=answer_with_model)
    assert answer.source == "model" and answer.refs == [ref], answer.note
    assert len(logged(log, "start")) == 2


def test_a_workers_no_login_outage_holds_ask_until_a_login_appears(
        store: Stored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, logged_out: Path) -> None:
    from claude_mem.store import outages

    ref = f"obs:{store.obs['login']}"
    log = fake_model(tmp_path, monkeypatch, [{"reply": f"A token refresh raced with logout [{ref}]."}])
    session = store.conn.execute("SELECT claude_session_id FROM sdk_sessions LIMIT 1").fetchone()[0]
    with transaction(store.conn):
        outages.record_failure(store.conn, session, "auth: Not logged in")
    config = settings.load()
    assert ask(config, store.conn, "why did the login crash", project="alpha", model=answer_with_model).source == "extractive"
    assert logged(log, "start") == []
    logged_out.write_text("{}")
    os.utime(logged_out, (time.time() + 5, time.time() + 5))  # written after the outage, whatever the clock's grain
    assert ask(config, store.conn, "why did the login crash", project="alpha", model=answer_with_model).source == "model"


def test_spent_budget_or_heuristic_synthesizer_means_no_model_call(
        store: Stored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = fake_model(tmp_path, monkeypatch, [{"reply": "never sent"}])
    monkeypatch.setenv("CLAUDE_MEM_OBSERVER_DAILY_TOKENS", "100")
    with transaction(store.conn):
        budget.add(store.conn, {"input_tokens": 150})
    assert ask(settings.load(), store.conn, "why did the login crash", project="alpha", model=answer_with_model).source == "extractive"
    monkeypatch.setenv("CLAUDE_MEM_OBSERVER_DAILY_TOKENS", "0")
    monkeypatch.setenv("CLAUDE_MEM_SYNTHESIZER", "heuristic")
    assert ask(settings.load(), store.conn, "why did the login crash", project="alpha", model=answer_with_model).source == "extractive"
    assert logged(log, "start") == []


def test_the_request_is_bounded_and_names_each_record_by_ref(store: Stored) -> None:
    from claude_mem.ask.extract import Evidence

    items = [Evidence(f"obs:{n}", "observation", "2026-11-27", ["s"], n, ["word " * 400]) for n in range(1, 40)]
    text = request_text("a question", items)
    assert text.startswith("Question: a question") and "[obs:1] 2026-11-27 observation: word" in text
    assert len(text) <= 9000 and "[obs:39]" not in text


# --- the front doors ------------------------------------------------------------------------------

def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "claude_mem", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "CLAUDE_MEM_SYNTHESIZER": "heuristic", **(env or {})})


def test_cli_ask_json_and_errors(store: Stored, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SYNTHESIZER", "heuristic")
    out = json.loads(invoke("ask", "why did the login crash", "--project", "alpha", "--json").output)
    assert set(out) >= {"answer", "refs", "source", "tokens"} and out["source"] == "extractive" and out["tokens"] == 0
    assert out["refs"][0] == f"obs:{store.obs['login']}" and "token refresh raced with logout" in out["answer"]
    plain = invoke("ask", "why did the login crash", "--project", "alpha").output
    assert "\n- Fixed login crash" in plain and "extractive answer from 2 memories" in plain  # (the note goes to stderr)
    assert json.loads(invoke("ask", "how long should bread dough rise", "--json").output)["answer"] == DONT_KNOW
    assert "QUESTION is empty" in one_error_line(invoke("ask", "  ", code=2).output)


def test_cli_ask_before_anything_is_captured(keywords: None, data_dir: Path) -> None:
    assert "no database" in one_error_line(invoke("ask", "anything at all", code=1).output)


def test_the_mcp_tool_answers_through_the_mcp_client(store: Stored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SYNTHESIZER", "heuristic")
    cwd = tmp_path / "alpha"  # outside git, a folder's name is its project
    cwd.mkdir()

    async def scenario() -> tuple[Any, Any, Any, Any]:
        async with Client(build_server(settings.load(), cwd=str(cwd))) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return (tools["ask"], await client.call_tool("ask", {"question": "why did the login crash"}),
                    await client.call_tool("ask", {"question": "how many cores does the CI runner have", "project": "*"}),
                    await client.call_tool("ask", {"question": ""}))

    tool, answer, other, bad = asyncio.run(scenario())
    assert tool.annotations.read_only_hint is True and "prefer it to search" in " ".join(tool.description.lower().split())
    assert not answer.is_error and answer.structured_content is None
    text = answer.content[0].text
    assert text.startswith("- Fixed login crash") and f"[obs:{store.obs['login']}, " in text
    assert "(extractive answer from project alpha; get_observations" in text
    assert not other.is_error and f"obs:{store.obs['ci']}" in other.content[0].text
    assert bad.is_error and "question" in bad.content[0].text


def test_the_mcp_tool_gives_the_models_answer(store: Stored, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    login = f"obs:{store.obs['login']}"
    log = fake_model(tmp_path, monkeypatch, [{"reply": f"A lock now guards the token refresh [{login}]."}])
    cwd = tmp_path / "alpha"
    cwd.mkdir()

    async def scenario() -> Any:
        async with Client(build_server(settings.load(), cwd=str(cwd))) as client:
            return await client.call_tool("ask", {"question": "why did the login crash"})

    result = asyncio.run(scenario())
    assert not result.is_error, result.content
    first, tail = result.content[0].text.splitlines()[:2]
    assert first == f"A lock now guards the token refresh [{login}]." and tail.startswith("(model answer from project alpha, ")
    assert len(logged(log, "start")) == 1


# --- the real Claude Code CLI against the fake Messages API ---------------------------------------

@pytest.mark.slow
def test_real_cli_answers_from_the_evidence_and_stats_counts_its_tokens(store: Stored, tmp_path: Path) -> None:
    from tests.fakes.messages_api import ApiRequest, FakeMessagesAPI

    login = f"obs:{store.obs['login']}"

    def model(request: ApiRequest) -> str:
        return f"The token refresh raced with logout; a lock now guards it [{login}]."

    home = tmp_path / "h"
    for d in ("home", "config", "tmp"):
        (home / d).mkdir(parents=True)
    with FakeMessagesAPI(model) as api:
        env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-test-not-a-real-key",
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "HOME": str(home / "home"),
               "CLAUDE_CONFIG_DIR": str(home / "config"), "TMPDIR": str(home / "tmp"), "CLAUDE_MEM_SYNTHESIZER": "auto"}
        proc = run_cli("ask", "why did the login crash", "--project", "alpha", "--json", env=env)
        requests = api.messages_requests()
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert out["source"] == "model" and out["refs"] == [login] and out["tokens"] > 0
    asked = [r for r in requests if "Memory records" in json.dumps(r.body.get("messages"))]
    assert len(asked) == 1 and not asked[0].body.get("tools")
    body = json.dumps(asked[0].body["messages"])
    assert "token refresh raced with logout" in body and "a lock now guards the refresh" in body  # the evidence facts
    stats = json.loads(run_cli("stats", "--json").stdout)
    assert stats["observer_today"]["tokens"] == out["tokens"]
