"""Real Claude Code sessions replayed through the real hook commands, as subprocesses.

Two sources: our own small transcript in tests/fixtures/transcripts (always), and every real
transcript in ../shared/data/transcripts (skipped only when that folder is absent). The real
ones are replayed all at once, several processes in parallel, twice, with secrets and
<private> spans planted in every prompt, tool input, tool output and assistant message; the
tests then read what the hooks stored, and the raw database and log bytes.
"""

from __future__ import annotations

import collections
import json
import os
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from claude_mem.hooks import QUIET, matches_skip_list, store_in_process
from claude_mem.hosts.hook_table import COMMAND_FOR_EVENT, HOOK_EVENTS
from claude_mem.replay import (
    TOOL_EVENTS,
    HookEvent,
    HookResult,
    find_transcripts,
    play_subprocess,
    read_jsonl,
    steps,
    subagent_transcripts,
    transcript_events,
)
from claude_mem.settings import DEFAULT_SKIP_TOOLS
from tests.conftest import ROOT, TRANSCRIPTS, cli_json
from tests.planted import MARKER, leaks_in, plant, raw_leaks, stored_text

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "transcripts"
FIXTURE_SESSION = "7d3c1f0e-5b2a-4c8e-9a61-2f4e8b0c9d17"
FIXTURE = FIXTURES / f"{FIXTURE_SESSION}.jsonl"
SHARED = find_transcripts(TRANSCRIPTS) if TRANSCRIPTS.is_dir() else []
SHARED_IDS = [p.stem[:8] for p in SHARED]
# Claude Code >= 2.1 logs each hook it ran (hook_progress lines); subagent transcripts sit in a folder.
WITH_HOOK_LOG = [p.stem[:8] for p in SHARED if '"hook_progress"' in p.read_text(encoding="utf-8", errors="replace")]
WITH_SUBAGENTS = [p.stem[:8] for p in SHARED if subagent_transcripts(p)]

# The secrets written into tests/fixtures/transcripts by hand.
FIXTURE_SECRETS = [
    "sk-ant-api03-FIXTUREfakeKEY0000aaaa1111bbbb2222cccc3333dddd-EXAMPLE",
    "FIXTUREfakeOpenAIkey0123456789abcdefEXAMPLE",
    "AKIAFIXTURE0EXAMPLE1",
    "FIXTUREfakeGitHubToken0123456789abcd",
    "fixtureBearerToken",
    "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCFIXTUREFAKEKEYBODY0001",
    "FIXTUREsecondLINEofTHEkeyBODY0002",
    "fixture-Passw0rd-001",
    "pgFixturePass01",
    "12 Elm Street",  # <private> in the first prompt
    "4417-FIXTURE-ACCT",  # <private> in config.py as Read returned it
]


def hook_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update(CLAUDE_MEM_DATA_DIR=str(data_dir), CLAUDE_MEM_WORKER_AUTOSTART="0", CLAUDE_MEM_EMBEDDER="minilm")
    return env


# --- what the events say should be stored ------------------------------------------------------

@dataclass
class Expected:
    prompts: int = 0
    tools: dict[str, tuple[int, bool, str | None]] = field(default_factory=dict)  # id -> (prompt, failed, agent)
    stops: list[int] = field(default_factory=list)  # prompt number of each Stop


def expected(events: list[HookEvent]) -> Expected:
    out = Expected()
    for e in events:
        p = e.payload
        if e.event == "UserPromptSubmit":
            out.prompts += 1
        elif e.event in TOOL_EVENTS and not matches_skip_list(p["tool_name"], DEFAULT_SKIP_TOOLS):
            assert p["tool_use_id"] not in out.tools, f"transcript has tool_use_id {p['tool_use_id']} twice"
            out.tools[p["tool_use_id"]] = (out.prompts, e.event == "PostToolUseFailure", p.get("agent_id"))
        elif e.event == "Stop":
            out.stops.append(out.prompts)
    return out


def rows(db: Path, sql: str, params: tuple = ()) -> list[dict[str, Any]]:
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in conn.execute(sql, params)]
    finally:
        conn.close()


def snapshot(db: Path) -> dict[str, list[dict[str, Any]]]:
    return {t: rows(db, f"SELECT * FROM {t} ORDER BY id") for t in ("sdk_sessions", "user_prompts", "observation_queue")}


def check_hook_results(results: list[HookResult]) -> None:
    for r in results:
        where = f"{r.command} for {r.event.source}"
        assert r.returncode == 0, where
        assert r.stderr == "", f"{where}: {r.stderr}"
        if r.command == "context":
            assert r.stdout == "" or "hookSpecificOutput" in json.loads(r.stdout), where
        else:
            assert r.stdout.strip() == QUIET, where


# --- the replay itself ---------------------------------------------------------------------------

@dataclass
class SharedReplay:
    data_dir: Path
    db: Path
    events: dict[str, list[HookEvent]]
    markers: dict[int, str]
    results: list[HookResult]
    first: dict[str, list[dict[str, Any]]]
    second: dict[str, list[dict[str, Any]]]
    raw_leaks: list[str]


def replay_all(named: dict[str, list[HookEvent]], env: dict[str, str]) -> list[HookResult]:
    # One thread per transcript keeps each session's order; inside a turn, the tool hooks go out
    # up to 4 at a time ("turn": more overlap than Claude Code's own parallel calls).
    def one(events: list[HookEvent]) -> list[HookResult]:
        return play_subprocess(events, env=env, concurrency="turn", max_workers=4)

    with ThreadPoolExecutor(max_workers=len(named)) as pool:
        return [r for results in pool.map(one, named.values()) for r in results]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> SharedReplay:
    if not SHARED:
        pytest.skip(f"no transcripts in {TRANSCRIPTS}")
    data_dir = tmp_path_factory.mktemp("replay") / "data"
    env = hook_env(data_dir)
    named: dict[str, list[HookEvent]] = {}
    markers: dict[int, str] = {}
    for i, path in enumerate(SHARED):
        planted = plant(transcript_events(path), start=i * 100_000)
        named[path.stem[:8]] = planted.events
        markers.update(planted.markers)
    results = replay_all(named, env)
    db = data_dir / "claude-mem.db"
    first = snapshot(db)
    results += replay_all(named, env)
    leaks = raw_leaks(data_dir)  # before this process opens the database again
    return SharedReplay(data_dir, db, named, markers, results, first, snapshot(db), leaks)


def _session_rows(replay: SharedReplay, name: str, table: str, which: str = "second") -> list[dict[str, Any]]:
    session_id = replay.events[name][0].payload["session_id"]
    key = "claude_session_id" if table == "sdk_sessions" else "session_id"
    return [r for r in getattr(replay, which)[table] if r[key] == session_id]


# --- replay: parsing, always run (our fixture) -----------------------------------------------------

def test_fixture_events_are_what_claude_code_sends() -> None:
    events = transcript_events(FIXTURE)
    got = [(e.event, e.payload.get("tool_name")) for e in events]
    assert got == [
        ("SessionStart", None),
        # the /model command, its output and the isMeta caveat are not prompts
        ("UserPromptSubmit", None),
        ("PostToolUse", "Grep"), ("PostToolUse", "Glob"), ("PostToolUse", "Read"),  # parallel: results in completion order
        ("PostToolUse", "Grep"), ("PostToolUse", "Read"), ("SubagentStop", None),  # the subagent, inside the Task call
        ("PostToolUse", "Task"), ("PostToolUse", "TodoWrite"), ("PostToolUseFailure", "Bash"),
        ("PostToolUse", "Edit"), ("PostToolUse", "Bash"), ("Stop", None),
        ("UserPromptSubmit", None), ("PostToolUse", "Bash"), ("PostToolUse", "Read"), ("PostToolUse", "Write"), ("Stop", None),
        # interrupted: the rejected edit is a failure, and the turn has no Stop
        ("UserPromptSubmit", None), ("PostToolUseFailure", "Edit"),
    ]
    by_id = {e.payload.get("tool_use_id"): e.payload for e in events}
    for p in (e.payload for e in events):
        assert p["session_id"] == FIXTURE_SESSION and p["cwd"] == "/home/dev/projects/calc"
        assert p["transcript_path"] == str(FIXTURE.resolve())
    prompts = [e.payload for e in events if e.event == "UserPromptSubmit"]
    assert prompts[0]["prompt"].startswith("test_client fails since I rotated")
    assert prompts[1]["prompt"].startswith("Now write scripts/deploy.sh") and "system-reminder" not in prompts[1]["prompt"]
    assert prompts[2]["prompt"] == "also bump the version to 0.2.0"
    assert len({p["prompt_id"] for p in prompts}) == 3
    # toolUseResult is the response when present, else the tool_result content
    assert by_id["toolu_01FxReadConfig00000000001"]["tool_response"]["file"]["filePath"].endswith("calc/config.py")
    assert by_id["toolu_01FxSubRead0000000000006"]["tool_response"].startswith("    10\u2192def headers")
    failure = by_id["toolu_01FxBashPytestFail000008"]
    assert failure["error"].startswith("Exit code 1") and "tool_response" not in failure and failure["is_interrupt"] is False
    assert by_id["toolu_01FxEditVersion0000000014"]["is_interrupt"] is True
    sub = [e.payload for e in events if e.payload.get("agent_id")]
    assert [p["hook_event_name"] for p in sub] == ["PostToolUse", "PostToolUse", "SubagentStop"]
    assert all(p["agent_id"] == "f1a7c3e" and p["agent_type"] == "Explore" for p in sub)
    assert all(p["prompt_id"] == prompts[0]["prompt_id"] for p in sub)  # the prompt the Task ran under
    stops = [e.payload for e in events if e.event == "Stop"]
    assert stops[0]["last_assistant_message"].startswith("Fixed: config.py now reads CALC_SERVICE_KEY")
    assert stops[1]["last_assistant_message"].startswith("Wrote scripts/deploy.sh")
    assert all(s["stop_hook_active"] is False for s in stops)


def test_steps_group_parallel_tool_calls() -> None:
    events = [e for e in transcript_events(FIXTURE) if e.command() is not None]
    by_message = [[e.payload.get("tool_name") or e.event for e in step] for step in steps(events, "message")]
    assert ["Grep", "Glob", "Read"] in by_message  # one assistant message, three tool_use blocks
    assert ["Bash", "Read"] in by_message
    assert ["Grep", "Read"] in by_message  # the subagent's two calls share its message
    assert all(len(step) == 1 for step in steps(events, "none"))
    by_turn = steps(events, "turn")
    assert [len(s) for s in by_turn] == [1, 1, 10, 1, 1, 3, 1, 1, 1]
    for mode in ("none", "message", "turn"):
        assert [e for step in steps(events, mode) for e in step] == events  # nothing lost or reordered


def test_replay_skips_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    text = FIXTURE.read_text()
    path.write_text(text + '{"type": "user", "message": {"role": "user", "content": "never fin')
    assert [e.event for e in transcript_events(path, include_subagents=False)] == \
        [e.event for e in transcript_events(FIXTURE, include_subagents=False)]
    assert transcript_events(path, session_id="other")[0].payload["session_id"] == "other"


def test_hook_commands_match_the_plugin() -> None:
    for event, command in COMMAND_FOR_EVENT.items():
        assert event in HOOK_EVENTS[command]
    hooks_json = ROOT / "hooks" / "hooks.json"
    assert hooks_json.is_file(), "the plugin (.claude-plugin/) registers its hooks in hooks/hooks.json"
    registered = {
        event: entry["command"].split()[-1]
        for event, groups in json.loads(hooks_json.read_text())["hooks"].items()
        for group in groups for entry in group["hooks"] if not entry["command"].endswith(" plugin-check")
    }
    assert registered == COMMAND_FOR_EVENT


# --- the fixture through the hooks, always run ---------------------------------------------------------

def test_fixture_through_the_hooks(data_dir: Path) -> None:
    events = transcript_events(FIXTURE)
    results = play_subprocess(events, env=hook_env(data_dir), concurrency="message", max_workers=4)
    assert len(results) == len(events) - 1  # all but SubagentStop, which the plugin does not register
    check_hook_results(results)

    queue = cli_json("queue")
    assert isinstance(queue, list)
    tools = {r["tool_use_id"]: r for r in queue if r["kind"] == "tool"}
    want = expected(events)
    assert "toolu_01FxTodoWrite00000000007" not in tools  # on the skip list
    assert sorted(tools) == sorted(want.tools)
    assert len(tools) == 13 and len([r for r in queue if r["kind"] == "tool"]) == 13
    for tool_use_id, (prompt, failed, agent) in want.tools.items():
        row = tools[tool_use_id]
        assert (row["prompt_number"], row["is_error"], row["agent_id"]) == (prompt, failed, agent), tool_use_id
    assert [tools[i]["agent_id"] for i in ("toolu_01FxSubGrep0000000000005", "toolu_01FxSubRead0000000000006")] == ["f1a7c3e"] * 2
    failure = tools["toolu_01FxBashPytestFail000008"]["tool_response"]
    assert failure["error"].startswith("Exit code 1") and "1 failed" in failure["error"]
    assert tools["toolu_01FxEditVersion0000000014"]["tool_response"].get("is_interrupt") is True

    finals = [r for r in queue if r["kind"] == "finalize"]
    assert [f["prompt_number"] for f in finals] == [1, 2]  # prompt 3 was interrupted: no Stop
    assert finals[0]["tool_response"]["last_assistant_message"].startswith("Fixed: config.py now reads CALC_SERVICE_KEY")

    sessions = cli_json("sessions")
    assert isinstance(sessions, list) and len(sessions) == 1
    assert (sessions[0]["claude_session_id"], sessions[0]["prompt_counter"], sessions[0]["project"]) == (FIXTURE_SESSION, 3, "calc")
    prompts = rows(data_dir / "claude-mem.db", "SELECT * FROM user_prompts ORDER BY prompt_number")
    assert [p["prompt_number"] for p in prompts] == [1, 2, 3]
    assert "[REDACTED]" in prompts[0]["prompt_text"] and "Please check config.py and fix the client." in prompts[0]["prompt_text"]
    assert "system-reminder" not in prompts[1]["prompt_text"]
    assert prompts[2]["prompt_text"] == "also bump the version to 0.2.0"

    # Privacy: what the fixture itself carries, in the database, its WAL and the logs.
    text = stored_text(data_dir / "claude-mem.db")
    assert [s for s in FIXTURE_SECRETS if s in text] == []
    assert raw_leaks(data_dir, FIXTURE_SECRETS) == []
    assert "DATABASE_URL" in text and "TIMEOUT_S = 30" in text  # redaction took the secrets, not the file
    assert "<private>" not in text.lower()


def test_fixture_with_planted_secrets(data_dir: Path) -> None:
    planted = plant(transcript_events(FIXTURE), start=900_000)
    check_hook_results(play_subprocess(planted.events, env=hook_env(data_dir), concurrency="turn", max_workers=4))
    db = data_dir / "claude-mem.db"
    text = stored_text(db)
    assert leaks_in(text) == []
    assert raw_leaks(data_dir) == []
    survived = {int(m) for m in MARKER.findall(text)}
    assert {k for k, kind in planted.markers.items() if kind in ("prompt", "stop", "tool")} <= survived
    assert not {k for k, kind in planted.markers.items() if kind in ("skipped tool", "subagent")} & survived


def test_fixture_second_replay_adds_nothing(data_dir: Path) -> None:
    events = transcript_events(FIXTURE)
    env = hook_env(data_dir)
    check_hook_results(play_subprocess(events, env=env))
    before = snapshot(data_dir / "claude-mem.db")
    check_hook_results(play_subprocess(events, env=env))
    after = snapshot(data_dir / "claude-mem.db")
    assert [r["prompt_number"] for r in after["observation_queue"] if r["kind"] == "finalize"] == [1, 2]
    assert after == before


def test_in_process_store_routes_events_as_the_hooks_do(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The benchmarks' shortcut (store_in_process) stores what the hook commands store, SessionEnd
    included, and nothing for events no hook is registered for (SubagentStop)."""
    from claude_mem import settings
    from claude_mem.store.db import connect

    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(data_dir))
    config = settings.load(strict=True)
    config.ensure_dirs()
    payloads = [e.payload for e in transcript_events(FIXTURE)]
    end = {**payloads[-1], "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}
    conn = connect(config.db_path)
    try:
        stored = store_in_process(config, conn, [*payloads, end])
    finally:
        conn.close()
    queue = cli_json("queue")
    assert len([r for r in queue if r["kind"] == "tool"]) == 13
    assert [r["prompt_number"] for r in queue if r["kind"] == "finalize"] == [1, 2]
    assert cli_json("sessions")[0]["status"] == "ended"
    assert stored == 3 + 13 + 2 + 1  # prompts, tools (TodoWrite is skipped), Stops, SessionEnd


def test_subagent_stop_does_not_close_the_turn(data_dir: Path) -> None:
    events = transcript_events(FIXTURE)
    check_hook_results(play_subprocess(events, env=hook_env(data_dir), commands={**COMMAND_FOR_EVENT, "SubagentStop": "summary"}))
    finals = rows(data_dir / "claude-mem.db", "SELECT * FROM observation_queue WHERE kind = 'finalize' ORDER BY id")
    assert [f["prompt_number"] for f in finals] == [1, 2]
    assert "Fixed: config.py" in finals[0]["tool_response"]


def test_secret_in_a_json_key_is_redacted(data_dir: Path) -> None:
    # MCP tools return arbitrary JSON: a secret can be a key, not only a value.
    event = transcript_events(FIXTURE)[2]
    payload = {**event.payload, "tool_input": {"headers": {f"Bearer pl{1:06d}.bearerTokenValue.Zz9": True}},
               "tool_response": {"<private>private-note-000002</private>": 1, "sk-ant-api03-Pl000003antedAnthropicKey0123456789": 2}}
    check_hook_results(play_subprocess([HookEvent(payload)], env=hook_env(data_dir)))
    assert leaks_in(stored_text(data_dir / "claude-mem.db")) == []


# --- the real transcripts (../shared) ----------------------------------------------------------------

@pytest.mark.parametrize("name", WITH_HOOK_LOG)
def test_real_transcript_matches_claude_codes_own_hook_log(name: str) -> None:
    """Claude Code >= 2.1 logs each hook it ran as a hook_progress line: where a transcript has
    them, our replay must have sent PostToolUse for exactly the same tool calls, and as many
    Stops and SessionStarts (startup, and one per compaction)."""
    path = SHARED[SHARED_IDS.index(name)]
    ran: dict[str, set[str]] = collections.defaultdict(set)
    for file in [path, *subagent_transcripts(path)]:
        for line in read_jsonl(file):
            data = line.get("data")
            if line.get("type") == "progress" and isinstance(data, dict) and data.get("type") == "hook_progress":
                ran[data["hookEvent"]].add(line.get("toolUseID"))
    events = transcript_events(path)
    sent: dict[str, set[str]] = collections.defaultdict(set)
    for e in events:
        sent[e.event].add(e.payload.get("tool_use_id") or e.source)
    assert sent["PostToolUse"] == ran["PostToolUse"]
    # Claude Code ran failure hooks only for tools that ran; we also report calls a PreToolUse
    # hook or a sibling's failure stopped (is_error results too).
    assert ran["PostToolUseFailure"] <= sent["PostToolUseFailure"]
    assert len(sent["Stop"]) == len(ran["Stop"])
    assert len(sent["SessionStart"]) == len(ran["SessionStart"])


def test_real_hooks_all_exit_clean(shared: SharedReplay) -> None:
    assert len(shared.results) == 2 * sum(1 for es in shared.events.values() for e in es if e.command() is not None)
    check_hook_results(shared.results)


@pytest.mark.parametrize("name", SHARED_IDS)
def test_real_tool_calls_queued_once_under_their_prompt(shared: SharedReplay, name: str) -> None:
    want = expected(shared.events[name])
    queued = [r for r in _session_rows(shared, name, "observation_queue") if r["kind"] == "tool"]
    counts = collections.Counter(r["tool_use_id"] for r in queued)
    assert [i for i, n in counts.items() if n != 1] == []
    assert set(counts) == set(want.tools)
    for r in queued:
        prompt, failed, agent = want.tools[r["tool_use_id"]]
        assert (r["prompt_number"], bool(r["is_error"]), r["agent_id"]) == (prompt, failed, agent), r["tool_use_id"]


@pytest.mark.parametrize("name", SHARED_IDS)
def test_real_prompts_numbered_and_one_finalize_per_stop(shared: SharedReplay, name: str) -> None:
    want = expected(shared.events[name])
    prompts = _session_rows(shared, name, "user_prompts")
    assert sorted(p["prompt_number"] for p in prompts) == list(range(1, want.prompts + 1))
    [session] = _session_rows(shared, name, "sdk_sessions")
    assert session["prompt_counter"] == want.prompts
    finals = [r for r in _session_rows(shared, name, "observation_queue") if r["kind"] == "finalize"]
    assert sorted(r["prompt_number"] for r in finals) == want.stops
    assert all(json.loads(r["tool_response"])["last_assistant_message"] for r in finals)


@pytest.mark.parametrize("name", WITH_SUBAGENTS)
def test_real_subagent_calls_carry_agent_id(shared: SharedReplay, name: str) -> None:
    path = SHARED[SHARED_IDS.index(name)]
    agents = {line["agentId"] for sub in subagent_transcripts(path) for line in read_jsonl(sub) if line.get("agentId")}
    assert agents
    queued = collections.Counter(r["agent_id"] for r in _session_rows(shared, name, "observation_queue") if r["kind"] == "tool")
    for agent in agents:
        calls = sum(1 for e in shared.events[name] if e.event in TOOL_EVENTS and e.payload.get("agent_id") == agent)
        assert queued[agent] == calls > 0


def test_real_second_replay_adds_nothing(shared: SharedReplay) -> None:
    assert shared.first == shared.second
    assert sum(len(v) for v in shared.first.values()) > 0


def test_real_planted_secrets_never_stored(shared: SharedReplay) -> None:
    assert shared.raw_leaks == []
    text = stored_text(shared.db)
    assert leaks_in(text) == []
    # The planting reached the hooks: the plain line beside each prompt's and Stop's secrets was
    # stored; for tool events most were (a JSON value past 1.25x the cap is cut as a whole).
    survived = {int(m) for m in MARKER.findall(text)}
    for kind in ("prompt", "stop"):
        planted = {k for k, v in shared.markers.items() if v == kind}
        assert planted and planted <= survived, kind
    tools = {k for k, v in shared.markers.items() if v == "tool"}
    assert len(tools & survived) > 0.8 * len(tools)
    assert not {k for k, v in shared.markers.items() if v in ("skipped tool", "subagent")} & survived
