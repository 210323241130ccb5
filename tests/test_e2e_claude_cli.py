"""End to end with the real Claude Code CLI (bundled with claude-agent-sdk) against the fake
Messages API: `claude-mem install` (or the plugin folder) wires the hooks, `claude -p` runs a
scripted agent that writes, reads, edits and runs commands, and the capture path must have
recorded every step exactly once. No network beyond 127.0.0.1; HOME, CLAUDE_CONFIG_DIR, TMPDIR
and the data dir are temp folders."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, insert_observation
from tests.claude_cli import CLAUDE, CLAUDE_MEM, PROJECT, TIMEOUT, allow_tools, mem, run_claude, system_messages
from tests.fakes.messages_api import ApiError, FakeMessagesAPI, bash, edit, read, write
from tests.plugin_helpers import ROOT, adopt_environment

pytestmark = pytest.mark.slow


if not CLAUDE.exists():  # pragma: no cover - the wheel always bundles it
    pytest.skip(f"no bundled Claude Code CLI at {CLAUDE}", allow_module_level=True)


def test_installed_hooks_capture_a_real_claude_session(sandbox):
    proc = subprocess.run([str(CLAUDE_MEM), "install"], env=sandbox["env"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    allow_tools(sandbox["settings"])
    sandbox["env"]["CLAUDE_MEM_SEMANTIC_INDEX"] = "0"  # capture, not search: no memory service to load a model

    notes = sandbox["project"] / "notes.txt"
    steps = [
        write(str(notes), "first line\n"),
        read(str(notes)),
        edit(str(notes), "first", "edited"),
        bash("echo captured-by-claude-mem", "Print a marker"),
        bash("exit 3", "Fail on purpose"),  # a failing tool call arrives as PostToolUseFailure
    ]
    prompt = "Please write, read, edit notes.txt and run two commands"
    with FakeMessagesAPI(steps, final_text="Finished the scripted work.") as api:
        result = run_claude(sandbox, api, prompt)
        issued = api.issued_tool_use_ids
        last = api.agent_requests()[-1]
        first_run_system = system_messages(api)

    # The tools really ran inside the CLI (so the hooks saw real events).
    assert notes.read_text() == "edited line\n"
    results = {block["tool_use_id"]: block for block in last.tool_results()}
    assert list(results) == issued and len(issued) == 5
    assert results[issued[4]].get("is_error") is True and "captured-by-claude-mem" in json.dumps(results[issued[3]])
    session_id = result["session_id"]
    assert result["result"] == "Finished the scripted work."

    sessions = mem(sandbox, "sessions")
    assert [(s["claude_session_id"], s["project"], s["cwd"], s["prompt_counter"], s["user_prompt"]) for s in sessions] == [
        (session_id, PROJECT, str(sandbox["project"]), 1, prompt)]

    rows = mem(sandbox, "queue")
    assert all(r["session_id"] == session_id and r["prompt_number"] == 1 for r in rows)
    tools = [r for r in rows if r["kind"] == "tool"]
    # Every tool call the fake issued is queued exactly once, under its own id.
    assert sorted(r["tool_use_id"] for r in tools) == sorted(issued)
    by_id = {r["tool_use_id"]: r for r in tools}
    assert [by_id[i]["tool_name"] for i in issued] == ["Write", "Read", "Edit", "Bash", "Bash"]
    assert [by_id[i]["is_error"] for i in issued] == [False, False, False, False, True]
    assert by_id[issued[0]]["tool_input"]["content"] == "first line\n"
    assert "captured-by-claude-mem" in by_id[issued[3]]["tool_response"]["stdout"]
    finals = [r for r in rows if r["kind"] == "finalize"]
    assert len(finals) == 1 and finals[0]["tool_response"]["last_assistant_message"] == "Finished the scripted work."
    assert len(rows) == 6

    # SessionStart: nothing remembered yet, so the first session got no digest ...
    assert not any("claude-mem: what happened recently" in text for text in first_run_system)
    # ... once an observation exists, the next session's request carries it in a system message.
    conn = connect(os.path.join(sandbox["data"], "claude-mem.db"))
    try:
        with transaction(conn):
            insert_observation(conn, session_id, PROJECT, Observation(type="discovery", title="notes.txt marker zq-4711 found"),
                               prompt_number=1)
    finally:
        conn.close()
    with FakeMessagesAPI([], final_text="Nothing to do.") as api:
        second = run_claude(sandbox, api, "What did we do last time?")
        digests = [text for text in system_messages(api) if "notes.txt marker zq-4711 found" in text]
    assert digests and f"# claude-mem: what happened recently in {PROJECT}" in digests[0]

    sessions = mem(sandbox, "sessions")
    assert {s["claude_session_id"]: s["prompt_counter"] for s in sessions} == {session_id: 1, second["session_id"]: 1}
    finals = [r for r in mem(sandbox, "queue", "--session", second["session_id"]) if r["kind"] == "finalize"]
    assert len(finals) == 1


def test_installed_pushes_reach_the_model_in_the_next_session(sandbox):
    """Issue 13 under the real CLI: a first session edits notes.txt and runs a check that fails;
    the worker distils it (heuristics: no model here); in a second session the prompt about the
    file, the Read of it and the same check each reach the model with a first-session memory."""
    proc = subprocess.run([str(CLAUDE_MEM), "install"], env=sandbox["env"], capture_output=True, text=True, timeout=TIMEOUT)
    assert proc.returncode == 0, proc.stderr
    allow_tools(sandbox["settings"])
    # Keywords only (no memory service process in this test), and a digest too small to list the
    # observations: a push never repeats what the digest gave, and this memory is only three deep.
    sandbox["env"].update(CLAUDE_MEM_SEMANTIC_INDEX="0", CLAUDE_MEM_CONTEXT_CHARS="200")
    notes = sandbox["project"] / "notes.txt"
    check = "python3 check_notes.py --strict"  # check_notes.py does not exist: it fails
    first_steps = [write(str(notes), "alpha\n"), edit(str(notes), "alpha", "beta"), bash(check, "Check the notes")]
    with FakeMessagesAPI(first_steps, final_text="Notes written; the check failed.") as api:
        first = run_claude(sandbox, api, "Write notes.txt, change alpha to beta, then run the notes check")
    worker = subprocess.run([str(CLAUDE_MEM), "worker", "--session", first["session_id"], "--drain"], capture_output=True,
                            text=True, timeout=TIMEOUT, env={**sandbox["env"], "CLAUDE_MEM_SYNTHESIZER": "heuristic"})
    assert worker.returncode == 0, worker.stderr
    first_obs = {o["id"]: o for o in mem(sandbox, "observations", "--session", first["session_id"])}
    [changed] = [i for i, o in first_obs.items() if str(notes) in o["files_modified"]]

    second_steps = [read(str(notes)), bash(check, "Check the notes again")]
    with FakeMessagesAPI(second_steps, final_text="Read it.") as api:
        second = run_claude(sandbox, api, "What happened to notes.txt last time?")
        system = system_messages(api)
    prompt_push = [t for t in system if "claude-mem: memories from earlier sessions" in t]
    file_push = [t for t in system if "PreToolUse:Read hook additional context" in t and "did with notes.txt" in t]
    command_push = [t for t in system if "PreToolUse:Bash hook additional context" in t]
    if not (prompt_push and f"obs:{changed} " in prompt_push[0]):  # seen twice in CI at load, never alone: say why
        logs = "".join(p.read_text(errors="replace")[-3000:] for p in sorted((sandbox["data"] / "logs").glob("*.log")))
        pytest.fail(f"no prompt push of obs:{changed}; observations {first_obs}; injections "
                    f"{mem(sandbox, 'show', second['session_id'])['injections']}; system {system}; logs {logs}")
    assert file_push and f"obs:{changed} " in file_push[0], system
    assert command_push and "`python3 check_notes.py` failed in an earlier session" in command_push[0], system
    given = mem(sandbox, "show", second["session_id"])["injections"]
    assert [i["kind"] for i in given] == ["digest", "prompt", "file", "command"]


def test_plugin_folder_captures_a_real_claude_session(sandbox):
    """The same capture through the plugin (`claude --plugin-dir` of this checkout), no hooks in
    settings.json and no claude-mem on PATH: its hooks run the environment in the plugin's data
    folder, here one adopted from the test venv (tests/test_e2e_plugin.py builds a real one)."""
    allow_tools(sandbox["settings"])
    assert "hooks" not in json.loads(sandbox["settings"].read_text())
    adopt_environment(Path(sandbox["env"]["CLAUDE_CONFIG_DIR"]) / "plugins" / "data" / "memory-inline")
    with FakeMessagesAPI([bash("echo via-plugin")], final_text="Plugin run done.") as api:
        result = run_claude(sandbox, api, "run one command", "--plugin-dir", str(ROOT))
        issued = api.issued_tool_use_ids
    rows = mem(sandbox, "queue")
    assert [(r["kind"], r["tool_use_id"], r["session_id"]) for r in rows] == [
        ("tool", issued[0], result["session_id"]), ("finalize", None, result["session_id"])]
    [session] = mem(sandbox, "sessions")
    assert session["prompt_counter"] == 1 and session["user_prompt"] == "run one command"


# --- the fake's own contract (other tests build on it) ----------------------------------------------

def _post(url: str, body: dict, path: str = "/v1/messages?beta=true") -> tuple[int, dict[str, str], bytes]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def test_fake_api_answers_by_conversation_position_in_json_and_sse():
    tool = {"name": "Bash", "input_schema": {"type": "object"}}
    with FakeMessagesAPI([bash("ls")], text="side answer", final_text="the end") as api:
        status, _, raw = _post(api.url, {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [tool]})
        first = json.loads(raw)
        assert status == 200 and first["stop_reason"] == "tool_use" and first["content"][0]["name"] == "Bash"
        # The same position asked again (a retry) gets the same step, the same id.
        again = json.loads(_post(api.url, {"messages": [{"role": "user", "content": "hi"}], "tools": [tool]})[2])
        assert again["content"] == first["content"]
        later = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": first["content"]},
                              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": first["content"][0]["id"]}]}],
                 "tools": [tool], "stream": True}
        status, headers, raw = _post(api.url, later, path="/v1/messages")
        events = [line.split(": ", 1)[1] for line in raw.decode().splitlines() if line.startswith("event: ")]
        assert headers["content-type"].startswith("text/event-stream")
        assert events == ["message_start", "content_block_start", "content_block_delta", "content_block_stop",
                          "message_delta", "message_stop"]
        assert '"text": "the end"' in raw.decode()
        assert json.loads(_post(api.url, {"messages": [{"role": "user", "content": "title?"}], "tools": []})[2])["content"] == [
            {"type": "text", "text": "side answer"}]
        assert _post(api.url, {"messages": []}, path="/v1/messages/count_tokens?beta=true")[0] == 200
        assert _post(api.url, {}, path="/api/anything")[0] == 200
        assert api.issued_tool_use_ids == [first["content"][0]["id"]]
        assert [len(r.tools) for r in api.messages_requests()] == [1, 1, 1, 0] and len(api.requests) == 6


def test_fake_api_errors_say_do_not_retry():
    def script(request):
        if "boom" in request.all_text():
            raise RuntimeError("script bug")
        return ApiError(529, "overloaded_error", "busy")

    with FakeMessagesAPI(script) as api:
        status, headers, raw = _post(api.url, {"messages": [{"role": "user", "content": "x"}]})
        assert status == 529 and headers["x-should-retry"] == "false" and json.loads(raw)["error"]["type"] == "overloaded_error"
        status, headers, _ = _post(api.url, {"messages": [{"role": "user", "content": "boom"}]})
        assert status == 500 and headers["x-should-retry"] == "false"
        assert [str(e) for e in api.script_errors] == ["script bug"]
