"""Bad input, generated: thousands of hook payloads, model replies, MCP tool arguments and CLI
command lines. Nothing may crash, hang past a second, or let a traceback reach Claude Code."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from claude_mem import hooks
from claude_mem.cli.app import cli
from claude_mem.mcp.server import build_server
from claude_mem.worker.parse import parse_reply
from tests.hardening.support import record
from tests.stores import build_indexed
from tests.waiting import wait_until

pytestmark = pytest.mark.slow

# A hang or a blow-up, not speed (bench/ measures that): a call takes ~0.1-0.6 s, a loaded CI
# machine made some take over 1 s.
SLOW_S = 5.0
QUIET = json.loads(hooks.QUIET)
EVENTS = ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "PostToolUseFailure", "Stop", "SubagentStop",
          "SessionEnd", "Nope", ""]
COMMAND_FOR = {"SessionStart": "context", "UserPromptSubmit": "new", "PreToolUse": "pre", "PostToolUse": "save",
               "PostToolUseFailure": "save", "Stop": "summary", "SubagentStop": "summary", "SessionEnd": "summary"}


def cases(long_run: bool, short: int, long: int) -> int:
    return long if long_run else short


def fuzz_settings(n: int):  # noqa: ANN201
    return settings(max_examples=n, deadline=None, database=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=200),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=20), inner, max_size=5),
    max_leaves=25,
)
field_values = st.one_of(st.text(max_size=300), st.integers(), st.none(), st.booleans(), json_values,
                         st.sampled_from(["", " ", "\x00", "../../etc/passwd", "'; DROP TABLE observations; --", "<private>x",
                                          "a" * 5000, "\u202e", "🙂" * 50]))
payloads = st.fixed_dictionaries(
    {"hook_event_name": st.sampled_from(EVENTS)},
    optional={"session_id": field_values, "cwd": field_values, "transcript_path": field_values, "prompt": field_values,
              "tool_name": field_values, "tool_input": json_values, "tool_response": json_values, "tool_use_id": field_values,
              "error": field_values, "stop_hook_active": field_values, "last_assistant_message": field_values,
              "prompt_id": field_values, "source": field_values, "duration_ms": field_values, "agent_id": field_values},
)
stdin_bytes = st.one_of(
    st.binary(max_size=2000),
    payloads.map(lambda p: json.dumps(p).encode()),
    payloads.map(lambda p: json.dumps(p).encode()[: max(1, len(json.dumps(p)) // 2)]),  # cut mid-JSON
    json_values.map(lambda v: json.dumps(v).encode()),
)


def test_fuzzed_hook_stdin(data_dir: Path, long_run: bool) -> None:
    seen = {"n": 0, "max_s": 0.0}

    @fuzz_settings(cases(long_run, 1500, 10000))
    @given(raw=stdin_bytes, command=st.sampled_from(["context", "new", "pre", "save", "summary"]))
    def one(raw: bytes, command: str) -> None:
        out = io.StringIO()
        started = time.perf_counter()
        code = hooks.main(command, io.BytesIO(raw), out)
        took = time.perf_counter() - started
        seen["n"] += 1
        seen["max_s"] = max(seen["max_s"], took)
        assert code == 0
        assert took < SLOW_S, f"{command} took {took:.2f}s"
        text = out.getvalue().strip()
        if command == "context":
            assert text == "" or "hookSpecificOutput" in json.loads(text)
        else:
            assert json.loads(text) == QUIET

    one()
    # And some through real processes: what Claude Code sees on stderr is one line, never a traceback.
    samples = [b"", b"{", b"\xff\xfe", b"[]", b'{"hook_event_name": "PostToolUse"}', json.dumps({"session_id": 5}).encode(),
               json.dumps({"session_id": "s", "hook_event_name": "Stop", "stop_hook_active": "yes"}).encode()]
    for raw in samples:
        for command in ("context", "new", "pre", "save", "summary"):
            proc = subprocess.run([sys.executable, "-m", "claude_mem", command], input=raw, capture_output=True, timeout=30)
            assert proc.returncode == 0
            assert b"Traceback" not in proc.stderr and proc.stderr.count(b"\n") <= 1
            seen["n"] += 1
    record("fuzz: hook stdin", fuzz_cases=seen["n"], max_hook_ms=seen["max_s"] * 1000, note="in-process + real processes")


xml_pieces = st.sampled_from(["<observation>", "</observation>", "<summary>", "</summary>", "<type>", "</type>", "bugfix",
                              "<title>", "</title>", "<facts>", "<fact>", "</fact>", "</facts>", "<![CDATA[", "]]>", "&amp;",
                              "&", "<", ">", "&#0;", "&#x110000;", "<!DOCTYPE x [<!ENTITY a 'b'>]>", "&a;", "```xml", "```",
                              "<narrative>", "</narrative>", "<request>", "</request>", "\x00", "\n", " ", "text", "é", "<nothing/>"])
replies = st.one_of(st.text(max_size=3000), st.lists(xml_pieces | st.text(max_size=30), max_size=80).map("".join))


def test_fuzzed_model_replies(long_run: bool) -> None:
    seen = {"n": 0, "max_s": 0.0}

    @fuzz_settings(cases(long_run, 2000, 10000))
    @given(reply=replies)
    def one(reply: str) -> None:
        started = time.perf_counter()
        result = parse_reply(reply)
        took = time.perf_counter() - started
        seen["n"] += 1
        seen["max_s"] = max(seen["max_s"], took)
        assert took < SLOW_S
        for obs in result.observations:
            assert obs.title.strip() and obs.type in ("decision", "bugfix", "feature", "refactor", "discovery", "change")

    one()
    record("fuzz: model replies (XML parser)", fuzz_cases=seen["n"])


TOOL_ARGS = {
    "search": ["query", "project", "type", "session_id", "since", "until", "file", "limit"],
    "timeline": ["anchor", "query", "before", "after", "project"],
    "get_observations": ["ids"],
    "recent_sessions": ["project", "limit"],
}
arg_values = st.one_of(json_values, st.sampled_from(["obs:1", "obs:0", "sum:99999999999999999999", "2026-13-45", "2026-11-22",
                                                     "' OR 1=1 --", '"unbalanced', "NEAR(", "a* AND -b:c", "😀", "東京", -1, 0, 10**12]))


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return build_indexed(tmp_path_factory.mktemp("fuzz-mcp") / "data")


def test_fuzzed_mcp_tool_arguments(memory: Any, long_run: bool) -> None:
    server = build_server(memory.config, cwd="/src/alpha")
    calls: list[tuple[str, dict[str, Any]]] = []

    @fuzz_settings(cases(long_run, 400, 3000))
    @given(tool=st.sampled_from(sorted(TOOL_ARGS)), data=st.data())
    def collect(tool: str, data: st.DataObject) -> None:
        names = data.draw(st.lists(st.sampled_from(TOOL_ARGS[tool]) | st.text(max_size=8), max_size=6, unique=True))
        calls.append((tool, {name: data.draw(arg_values) for name in names}))

    collect()
    # Searches go to the memory service: started and caught up first, its start is not a tool call's cost.
    from claude_mem.service import client as service_client

    data_dir = memory.config.data_dir
    service_client.call(data_dir, "ping", timeout_s=120, wait=True)
    assert wait_until(lambda: service_client.call(data_dir, "status", timeout_s=30, start=False)["index_lag"] == 0, 120)

    async def run_all() -> float:
        slowest = 0.0
        async with Client(server) as client:
            for tool, args in calls:
                started = time.perf_counter()
                result = await client.call_tool(tool, args)
                slowest = max(slowest, time.perf_counter() - started)
                assert result.content and "Traceback" not in result.content[0].text
                assert len(result.content[0].text) <= 20_000, "results are bounded"
        return slowest

    slowest = asyncio.run(run_all())
    assert slowest < SLOW_S
    record("fuzz: MCP tool arguments", fuzz_cases=len(calls), note=f"slowest call {slowest * 1000:.0f} ms")


CLI_WORDS = ["status", "sessions", "show", "observations", "summaries", "search", "queue", "retry", "workers", "forget", "prune",
             "export", "import", "settings", "get", "set", "list", "doctor", "reindex", "logs", "--json", "--limit", "0", "-1", "x",
             "--since", "2026-99-01", "--until", "yesterday", "--project", "--session", "--type", "bogus", "obs:1", "obs:x",
             "sum:2", "--file", "'; DROP TABLE x;--", "--yes", "--before", "--mode", "semantic", "-n", "🙂", "retention_days"]


def test_fuzzed_cli_command_lines(memory: Any, long_run: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", memory.config.data_dir)
    runner = CliRunner()
    seen = {"n": 0}

    @fuzz_settings(cases(long_run, 300, 2000))
    @given(words=st.lists(st.sampled_from(CLI_WORDS), min_size=1, max_size=5))
    def one(words: list[str]) -> None:
        if {"--yes", "set"} & set(words) or words[0] == "logs" and "-f" in words:
            return  # no destructive or endless runs against the shared store
        result = runner.invoke(cli, words, catch_exceptions=True)
        seen["n"] += 1
        assert result.exit_code in (0, 1, 2), (words, result.output)
        crash = result.exception if not isinstance(result.exception, SystemExit) else None
        assert crash is None, (words, repr(crash))
        assert "Traceback" not in result.output

    one()
    record("fuzz: CLI command lines", fuzz_cases=seen["n"])
