"""The four hook commands: happy paths, and the contract (exit 0, one line on stderr and in the
log, nothing lost that could be kept) under every kind of failure."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import resource
import shutil
import sqlite3
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_mem import hooks, settings
from claude_mem.replay import run_hook
from claude_mem.service import client as service_client
from claude_mem.store import memories, queue, records, spool
from claude_mem.store.db import connect, latest_version, transaction
from claude_mem.worker import spawn
from tests.waiting import wait_until

QUIET = {"continue": True, "suppressOutput": True}
SESSION = "5f2b6c1e-hooks-test"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "widget"
    path.mkdir()
    return path


def event(name: str, project: Path, session: str = SESSION, **fields: Any) -> dict[str, Any]:
    return {"session_id": session, "transcript_path": str(project / "t.jsonl"), "cwd": str(project),
            "hook_event_name": name, "permission_mode": "default", **fields}


def prompt(project: Path, text: str, session: str = SESSION, **fields: Any) -> dict[str, Any]:
    return event("UserPromptSubmit", project, session, prompt=text, **fields)


def tool(project: Path, tool_use_id: str | None, name: str = "Bash", session: str = SESSION, **fields: Any) -> dict[str, Any]:
    base = {"tool_name": name, "tool_input": {"command": "ls -la", "description": "list"},
            "tool_response": {"stdout": "a\nb\n", "stderr": "", "interrupted": False}, "tool_use_id": tool_use_id,
            "duration_ms": 12}
    return event("PostToolUse", project, session, **{**base, **fields})


def stop(project: Path, session: str = SESSION, active: bool = False) -> dict[str, Any]:
    return event("Stop", project, session, stop_hook_active=active, last_assistant_message="Done: tests pass.")


def db(data_dir: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(data_dir / "claude-mem.db")
    conn.row_factory = sqlite3.Row
    return conn


def queue_rows(data_dir: Path, session: str = SESSION) -> list[dict[str, Any]]:
    if not (data_dir / "claude-mem.db").exists():
        return []
    with contextlib.closing(db(data_dir)) as conn:
        return [dict(r) for r in conn.execute("SELECT * FROM observation_queue WHERE session_id = ? ORDER BY id", (session,))]


def prompts(data_dir: Path, session: str = SESSION) -> list[tuple[int, str]]:
    with contextlib.closing(db(data_dir)) as conn:
        return [(r[0], r[1]) for r in conn.execute(
            "SELECT prompt_number, prompt_text FROM user_prompts WHERE session_id = ? ORDER BY prompt_number", (session,))]


def log_lines(data_dir: Path) -> list[str]:
    path = data_dir / "logs" / "claude-mem.log"
    return path.read_text().splitlines() if path.exists() else []


def spooled(data_dir: Path) -> list[Path]:
    spool = data_dir / "spool"
    return sorted(p for p in spool.iterdir() if p.name.endswith(".json")) if spool.is_dir() else []


def call(command: str, data: dict | bytes, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run a hook in this process, as `claude-mem <command>` would."""
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    out = io.StringIO()
    code = hooks.main(command, stdin=io.BytesIO(raw), stdout=out)
    return code, out.getvalue(), capsys.readouterr().err


def assert_quiet(stdout: str) -> None:
    assert stdout.endswith("\n") and stdout.count("\n") == 1
    assert json.loads(stdout) == QUIET


def assert_one_error(command: str, stderr: str, data_dir: Path, *, logged: int = 1) -> None:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"claude-mem {command}: ")
    assert len(log_lines(data_dir)) == logged, log_lines(data_dir)
    assert f" {command}: " in log_lines(data_dir)[-1]


# --- happy paths --------------------------------------------------------------------------------

def test_a_session_through_the_four_hooks(data_dir: Path, project: Path) -> None:
    ctx = run_hook("context", event("SessionStart", project, source="startup"))
    assert (ctx.returncode, ctx.stdout, ctx.stderr) == (0, "", "")
    assert not (data_dir / "claude-mem.db").exists()  # a read creates nothing

    for command, payload in [("new", prompt(project, "fix the parser")), ("save", tool(project, "toolu_1")),
                             ("save", tool(project, "toolu_1")),  # delivered twice: queued once
                             ("save", tool(project, "toolu_2", name="Read", tool_input={"file_path": "p.py"},
                                           tool_response={"type": "text", "file": {"content": "x = 1"}})),
                             ("summary", stop(project)), ("summary", stop(project)),  # one finalize per prompt
                             ("new", prompt(project, "now the docs")), ("save", tool(project, "toolu_3")),
                             ("summary", stop(project, active=True)),  # Claude continues: not the end of the turn
                             ("summary", stop(project))]:
        proc = run_hook(command, payload)
        assert proc.returncode == 0 and proc.stderr == "", (command, proc.stderr)
        assert_quiet(proc.stdout)

    assert prompts(data_dir) == [(1, "fix the parser"), (2, "now the docs")]
    with contextlib.closing(db(data_dir)) as conn:
        session = dict(conn.execute("SELECT * FROM sdk_sessions").fetchone())
        # Claude's final reply is kept with the prompt it answers.
        assert [r[0] for r in conn.execute("SELECT reply_text FROM user_prompts ORDER BY prompt_number")] == [
            "Done: tests pass.", "Done: tests pass."]
    assert session["claude_session_id"] == SESSION
    assert session["project"] == "widget"
    assert session["cwd"] == str(project)
    assert session["user_prompt"] == "fix the parser"
    assert session["prompt_counter"] == 2
    rows = queue_rows(data_dir)
    assert [(r["kind"], r["tool_use_id"], r["prompt_number"]) for r in rows] == [
        ("tool", "toolu_1", 1), ("tool", "toolu_2", 1), ("finalize", None, 1), ("tool", "toolu_3", 2), ("finalize", None, 2)]
    first = rows[0]
    assert first["tool_name"] == "Bash" and first["status"] == "pending" and first["is_error"] == 0
    assert json.loads(first["tool_input"]) == {"command": "ls -la", "description": "list"}
    assert json.loads(first["tool_response"])["stdout"] == "a\nb\n"
    assert first["duration_ms"] == 12 and first["attempts"] == 0
    assert json.loads(rows[2]["tool_response"]) == {"last_assistant_message": "Done: tests pass."}


def test_a_replayed_prompt_counts_once(data_dir: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for text, prompt_id in [("one", "p1"), ("one", "p1"), ("two", "p2"), ("three", None)]:
        assert call("new", prompt(project, text, prompt_id=prompt_id), capsys)[0] == 0
    assert prompts(data_dir) == [(1, "one"), (2, "two"), (3, "three")]


def test_tool_failure_is_kept_as_an_error(data_dir: Path, project: Path) -> None:
    payload = event("PostToolUseFailure", project, tool_name="Bash", tool_input={"command": "pytest -x"},
                    tool_use_id="toolu_f", error="Exit code 1\nAssertionError: expected 3", is_interrupt=False)
    proc = run_hook("save", payload)
    assert proc.returncode == 0 and proc.stderr == ""
    assert_quiet(proc.stdout)
    [row] = queue_rows(data_dir)
    assert row["is_error"] == 1 and row["tool_use_id"] == "toolu_f"
    assert json.loads(row["tool_response"]) == {"error": "Exit code 1\nAssertionError: expected 3"}


def test_secrets_and_private_spans_never_reach_the_database(data_dir: Path, project: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    key = "sk-ant-api03-" + "Z" * 40
    call("new", prompt(project, f"deploy with <private>my home address</private> and key {key}"), capsys)
    call("save", tool(project, "t1", tool_input={"command": f"curl -H 'Authorization: Bearer {'Y' * 30}' x"},
                      tool_response={"stdout": "DB_PASSWORD=hunter2horse\n<private>diary</private>ok"}), capsys)
    call("summary", event("Stop", project, stop_hook_active=False, last_assistant_message=f"used {key}"), capsys)
    dump = "\n".join(sqlite3.connect(data_dir / "claude-mem.db").iterdump())
    for secret in (key, "Z" * 20, "Y" * 20, "hunter2horse", "home address", "diary"):
        assert secret not in dump
    assert "[REDACTED]" in dump


def test_the_reply_is_kept_with_its_turn_redacted_and_cut(data_dir: Path, project: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    key = "sk-ant-api03-" + "Q" * 40
    call("new", prompt(project, "why is the build red?", prompt_id="p1"), capsys)
    call("new", prompt(project, "and the docs?", prompt_id="p2"), capsys)
    # A late Stop names its prompt: the reply goes to turn 1, not to the session's current turn.
    long_tail = " filler" * 1000
    late = f"The lockfile pinned an old <private>my diary</private> parser; key {key} rotated.{long_tail}"
    call("summary", event("Stop", project, stop_hook_active=False, prompt_id="p1", last_assistant_message=late), capsys)
    call("summary", event("Stop", project, stop_hook_active=False, last_assistant_message="first answer"), capsys)
    call("summary", event("Stop", project, stop_hook_active=False, last_assistant_message="   "), capsys)
    with contextlib.closing(db(data_dir)) as conn:
        replies = [r[0] for r in conn.execute("SELECT reply_text FROM user_prompts ORDER BY prompt_number")]
        assert replies[1] == "first answer", "a blank reply leaves the stored one"
        assert replies[0].startswith("The lockfile pinned an old") and "chars dropped" in replies[0]
        assert len(replies[0]) <= hooks.REPLY_CHARS + 40  # head and tail, and the marker between them
        assert key not in replies[0] and "diary" not in replies[0] and "[REDACTED]" in replies[0]
        # The keyword index of prompts holds the reply: the turn is found by what Claude said.
        found = conn.execute("SELECT rowid FROM user_prompts_fts WHERE user_prompts_fts MATCH 'lockfile'").fetchall()
        assert [r[0] for r in found] == [conn.execute("SELECT id FROM user_prompts WHERE prompt_id = 'p1'").fetchone()[0]]


def test_skip_list_default(data_dir: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i, name in enumerate(["TodoWrite", "ListMcpResourcesTool", "mcp__claude-mem__search", "mcp__plugin_claude-mem_mem__x",
                              "Bash", "mcp__github__get_issue"]):
        code, out, err = call("save", tool(project, f"t{i}", name=name), capsys)
        assert (code, err) == (0, "")
        assert_quiet(out)
    assert [r["tool_name"] for r in queue_rows(data_dir)] == ["Bash", "mcp__github__get_issue"]


@pytest.mark.parametrize("where", ["env", "file"])
def test_skip_list_configured(where: str, data_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    if where == "env":
        monkeypatch.setenv("CLAUDE_MEM_SKIP_TOOLS", "Bash, mcp__github__*")
    else:
        data_dir.mkdir()
        (data_dir / "settings.json").write_text(json.dumps({"skip_tools": ["Bash", "mcp__github__*"]}))
    for i, name in enumerate(["Bash", "mcp__github__get_issue", "TodoWrite", "Read", "BashOutput"]):
        call("save", tool(project, f"t{i}", name=name), capsys)
    assert [r["tool_name"] for r in queue_rows(data_dir)] == ["TodoWrite", "Read", "BashOutput"]


def test_context_prints_nothing_then_the_digest(data_dir: Path, project: Path, tmp_path: Path) -> None:
    start = event("SessionStart", project, source="startup")
    assert run_hook("context", start).stdout == ""
    run_hook("new", prompt(project, "hello"))  # the database exists, but holds no memories yet
    proc = run_hook("context", start)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")

    conn = connect(str(data_dir / "claude-mem.db"))
    with transaction(conn):
        records.ensure_session(conn, "older", project="widget", cwd=str(project), transcript_path=None)
        memories.insert_observation(conn, "older", "widget", memories.Observation(
            type="bugfix", title="Parser no longer drops the last token", narrative="off by one"), prompt_number=1)
        records.ensure_session(conn, "elsewhere", project="gadget", cwd="/x/gadget", transcript_path=None)
        memories.insert_observation(conn, "elsewhere", "gadget", memories.Observation(
            type="feature", title="Gadget learned to fly"), prompt_number=1)
    conn.close()
    proc = run_hook("context", start)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.count("\n") == 1
    output = json.loads(proc.stdout)
    assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    context = output["hookSpecificOutput"]["additionalContext"]
    assert "Parser no longer drops the last token" in context
    assert "Gadget" not in context
    other = tmp_path / "gadget-less"
    other.mkdir()
    assert run_hook("context", event("SessionStart", other, source="startup")).stdout == ""


# --- the contract --------------------------------------------------------------------------------

BAD_INPUTS: dict[str, Any] = {
    "malformed-json": b'{"session_id": "s", "hook_event_name": ',
    "empty-stdin": b"",
    "json-array": b'[{"session_id": "s"}]',
    "missing-session-id": {"hook_event_name": None, "cwd": "/tmp", "prompt": "x", "tool_name": "Bash"},
    "unknown-event": {"session_id": "s", "hook_event_name": "Notification", "cwd": "/tmp", "prompt": "x", "tool_name": "Bash"},
}


@pytest.mark.parametrize("command", ["context", "new", "pre", "save", "summary"])
@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_exits_0_with_one_line(case: str, command: str, data_dir: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(command, BAD_INPUTS[case], capsys)
    assert code == 0
    if command == "context":
        assert out == ""
    else:
        assert_quiet(out)
    if command == "context" and case == "missing-session-id":
        assert err == ""  # context only reads, for the cwd: it needs no session
        return
    assert_one_error(command, err, data_dir)
    assert queue_rows(data_dir, "s") == []
    assert spooled(data_dir) == []


@pytest.mark.parametrize(("command", "payload", "missing"), [
    ("new", {"session_id": "s", "hook_event_name": "UserPromptSubmit"}, "prompt"),
    ("save", {"session_id": "s", "hook_event_name": "PostToolUse"}, "tool_name"),
])
def test_missing_event_fields(command: str, payload: dict, missing: str, data_dir: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = call(command, payload, capsys)
    assert code == 0
    assert_one_error(command, err, data_dir)
    assert missing in err


def test_bad_input_in_a_real_process(data_dir: Path) -> None:
    proc = run_hook("save", b"{not json at all")
    assert proc.returncode == 0
    assert_quiet(proc.stdout)
    assert_one_error("save", proc.stderr, data_dir)
    assert "not valid JSON" in proc.stderr


def test_non_utf8_bytes_are_kept(data_dir: Path, project: Path) -> None:
    payload = json.dumps(tool(project, "toolu_bytes", tool_response="RESPONSE")).encode()
    payload = payload.replace(b"RESPONSE", b"caf\xe9 \xff\xfe binary")
    proc = run_hook("save", payload)
    assert (proc.returncode, proc.stderr) == (0, "")
    [row] = queue_rows(data_dir)
    assert json.loads(row["tool_response"]) == "caf\ufffd \ufffd\ufffd binary"


def test_a_10_mb_tool_response(data_dir: Path, project: Path) -> None:
    secret = "sk-ant-api03-" + "K" * 40
    big = "".join(f"{i:08d} log line of a very chatty build\n" for i in range(250_000))
    response = {"stdout": big[:5_000_000] + secret + big[5_000_000:] + "FINAL " + secret, "stderr": "warning " * 1000}
    assert len(json.dumps(response)) > 10_000_000
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = run_hook("save", tool(project, "toolu_big", tool_response=response))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    # The hook's own CPU time, whatever the machine's load: redaction and the cap stay linear.
    assert (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime) < 10
    assert (proc.returncode, proc.stderr) == (0, "")
    [row] = queue_rows(data_dir)
    limit = settings.SETTINGS["max_field_chars"].default
    assert len(row["tool_response"]) < 2 * limit
    stored = json.loads(row["tool_response"])
    text = stored if isinstance(stored, str) else json.dumps(stored)
    assert "chars dropped" in text and "FINAL" in text
    assert "KKKKKKKK" not in row["tool_response"]


def test_stderr_and_log_say_one_line_for_bad_settings(data_dir: Path, project: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    data_dir.mkdir()
    (data_dir / "settings.json").write_text(json.dumps({"max_attempts": "lots"}))
    code, out, err = call("save", tool(project, "t1"), capsys)
    assert code == 0
    assert_one_error("save", err, data_dir)
    assert "warning" in err and "max_attempts" in err
    assert len(queue_rows(data_dir)) == 1  # a bad setting is not a reason to lose the event


# --- when the database cannot take the event: spool, then drain --------------------------------

def seed(data_dir: Path, project: Path) -> None:
    """A database with one prompt in it, all connections closed."""
    proc = run_hook("new", prompt(project, "first"))
    assert proc.returncode == 0 and proc.stderr == ""
    assert not Path(str(data_dir / "claude-mem.db") + "-wal").exists()


def assert_spooled_then_drained(data_dir: Path, project: Path, proc: subprocess.CompletedProcess[str], reason: str) -> None:
    assert proc.returncode == 0
    assert_quiet(proc.stdout)
    assert_one_error("save", proc.stderr, data_dir, logged=1)
    assert reason in proc.stderr.lower(), proc.stderr
    assert "kept in" in proc.stderr
    files = spooled(data_dir)
    assert len(files) == 1
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert "toolu_kept" in files[0].read_text()
    # the database takes writes again: the next prompt stores the spooled event first
    proc = run_hook("new", prompt(project, "second"))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert spooled(data_dir) == []
    rows = queue_rows(data_dir)
    assert [(r["tool_use_id"], r["prompt_number"]) for r in rows] == [("toolu_kept", 1)]
    assert prompts(data_dir) == [(1, "first"), (2, "second")]


def test_locked_database(data_dir: Path, project: Path) -> None:
    seed(data_dir, project)
    holder = sqlite3.connect(data_dir / "claude-mem.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        proc = run_hook("save", tool(project, "toolu_kept"), env={**os.environ, "CLAUDE_MEM_HOOK_BUSY_MS": "200"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert_spooled_then_drained(data_dir, project, proc, "locked")


def test_spooled_events_keep_their_order_and_prompt(data_dir: Path, project: Path) -> None:
    seed(data_dir, project)
    holder = sqlite3.connect(data_dir / "claude-mem.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    env = {**os.environ, "CLAUDE_MEM_HOOK_BUSY_MS": "100"}
    try:
        for command, payload in [("save", tool(project, "toolu_a")), ("summary", stop(project)),
                                 ("new", prompt(project, "second")), ("save", tool(project, "toolu_b"))]:
            proc = run_hook(command, payload, env=env)
            assert proc.returncode == 0 and len(proc.stderr.splitlines()) == 1
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert len(spooled(data_dir)) == 4
    assert run_hook("new", prompt(project, "third")).stderr == ""
    assert spooled(data_dir) == []
    assert prompts(data_dir) == [(1, "first"), (2, "second"), (3, "third")]
    assert [(r["kind"], r["tool_use_id"], r["prompt_number"]) for r in queue_rows(data_dir)] == [
        ("tool", "toolu_a", 1), ("finalize", None, 1), ("tool", "toolu_b", 2)]


def test_a_tool_call_after_a_spooled_prompt_stays_in_that_prompts_turn(data_dir: Path, project: Path) -> None:
    """The prompt found the database locked and was spooled; the tool call and the Stop that follow
    find it free. They store the spooled prompt first, so they count in its turn, not the one before
    (which had the summary of turn 1 say nothing of them and turn 2's request go missing)."""
    seed(data_dir, project)
    holder = sqlite3.connect(data_dir / "claude-mem.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        proc = run_hook("new", prompt(project, "second"), env={**os.environ, "CLAUDE_MEM_HOOK_BUSY_MS": "100"})
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 0 and "kept in" in proc.stderr
    assert len(spooled(data_dir)) == 1
    for command, payload in [("save", tool(project, "toolu_after")), ("summary", stop(project))]:
        proc = run_hook(command, payload)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert spooled(data_dir) == []
    assert prompts(data_dir) == [(1, "first"), (2, "second")]
    assert [(r["kind"], r["tool_use_id"], r["prompt_number"]) for r in queue_rows(data_dir)] == [
        ("tool", "toolu_after", 2), ("finalize", None, 2)]


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """Make a file or folder read-only even for root (the immutable attribute), or skip."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)], capture_output=True).returncode:
            pytest.skip("running as root and cannot set the immutable attribute here")
        undo = ["chattr", "-i", str(path)]
    else:
        mode = stat.S_IMODE(path.stat().st_mode)
        path.chmod(mode & ~0o222)
        undo = None
    try:
        probe = path / "probe" if path.is_dir() else path
        with pytest.raises(PermissionError), open(probe, "ab"):
            pass
        yield
    finally:
        if undo:
            subprocess.run(undo, check=True)
        else:
            path.chmod(mode)


@pytest.mark.parametrize("what", ["database-file", "data-dir"])
def test_read_only_database(what: str, data_dir: Path, project: Path) -> None:
    seed(data_dir, project)
    target = data_dir / "claude-mem.db" if what == "database-file" else data_dir
    with read_only(target):
        proc = run_hook("save", tool(project, "toolu_kept"))
    reason = "readonly database" if what == "database-file" else "unable to open database"
    assert_spooled_then_drained(data_dir, project, proc, reason)


def test_database_newer_than_the_code(data_dir: Path, project: Path) -> None:
    seed(data_dir, project)
    with contextlib.closing(sqlite3.connect(data_dir / "claude-mem.db")) as conn:
        conn.execute(f"PRAGMA user_version = {latest_version() + 1}")
    proc = run_hook("save", tool(project, "toolu_kept"))
    assert proc.returncode == 0
    assert_one_error("save", proc.stderr, data_dir)
    assert "newer than this claude-mem" in proc.stderr and "kept in" in proc.stderr
    assert len(spooled(data_dir)) == 1


@contextlib.contextmanager
def tiny_tmpfs(where: Path) -> Iterator[Path]:
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(where)], capture_output=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(directory: Path) -> Path:
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    return filler


@pytest.mark.slow
def test_a_hook_waits_hook_busy_ms_for_a_locked_database_and_no_longer(data_dir: Path, project: Path) -> None:
    """Timed against itself in the same run: the same hook with a longer hook_busy_ms, the lock
    held throughout, takes that much longer (process start-up and load cancel out)."""
    seed(data_dir, project)
    holder = sqlite3.connect(data_dir / "claude-mem.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    took = {}
    try:
        for n, busy_ms in enumerate((200, 4200)):
            started = time.monotonic()
            proc = run_hook("save", tool(project, f"toolu_{n}"), env={**os.environ, "CLAUDE_MEM_HOOK_BUSY_MS": str(busy_ms)})
            took[busy_ms] = time.monotonic() - started
            assert proc.returncode == 0 and "locked" in proc.stderr
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert took[4200] - took[200] > 2.0, took  # 4 s apart, less the noise of two process starts


@pytest.mark.parametrize("how", ["tmpfs", "rlimit"])
def test_full_disk(how: str, data_dir: Path, project: Path, tmp_path: Path) -> None:
    """tmpfs: the database lives (through a symlink) on a tiny filesystem that is then filled,
    so SQLite gets ENOSPC. rlimit: the hook runs with RLIMIT_FSIZE just under one WAL frame, so
    the database cannot grow (EFBIG) while the small spool and log files still can."""
    if how == "tmpfs":
        with tiny_tmpfs(tmp_path / "tiny") as tiny:
            data_dir.mkdir(mode=0o700)
            (data_dir / "claude-mem.db").symlink_to(tiny / "claude-mem.db")
            seed(data_dir, project)
            filler = fill(tiny)
            proc = run_hook("save", tool(project, "toolu_kept"))
            filler.unlink()
            assert_spooled_then_drained(data_dir, project, proc, "full")
        return
    seed(data_dir, project)
    limit = 4096  # a WAL frame is 24 + 4096 bytes

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    payload = json.dumps(tool(project, "toolu_kept")).encode()
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "save"], input=payload, capture_output=True, timeout=30,
                          preexec_fn=limited)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode())
    assert_spooled_then_drained(data_dir, project, done, "disk i/o error")


def test_a_bad_spool_file_is_set_aside(data_dir: Path, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seed(data_dir, project)
    config = settings.load(strict=False)
    good = hooks.sanitize_tool(config, tool(project, "toolu_good"))
    assert good is not None
    spool.spool_event(config, good)
    (data_dir / "spool" / "1-1.json").write_text("{truncated")
    spool.spool_event(config, {"type": "mystery", "session_id": SESSION})
    spool.spool_event(config, {"type": "prompt", "session_id": SESSION})  # no prompt text
    code, _, err = call("new", prompt(project, "second"), capsys)
    assert code == 0 and err == ""
    assert [r["tool_use_id"] for r in queue_rows(data_dir)] == ["toolu_good"]
    assert spooled(data_dir) == []
    assert len(list((data_dir / "spool" / "bad").iterdir())) == 3
    assert spool.spooled(config) == []  # what was set aside is not waiting: no drain on every prompt
    assert prompts(data_dir) == [(1, "first"), (2, "second")]


def test_concurrent_drains_store_each_event_once(data_dir: Path, project: Path) -> None:
    seed(data_dir, project)
    config = settings.load(strict=False)
    for i in range(12):
        spool.spool_event(config, hooks.sanitize_prompt(config, prompt(project, f"spooled {i}", session="spooled-session")))
    env = {**os.environ}
    procs = [subprocess.Popen([sys.executable, "-m", "claude_mem", "new"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env) for _ in range(3)]
    for i, proc in enumerate(procs):
        _, err = proc.communicate(json.dumps(prompt(project, f"live {i}", session=f"live-{i}")).encode(), timeout=60)
        assert proc.returncode == 0 and err == b"", err
    assert spooled(data_dir) == []
    assert prompts(data_dir, "spooled-session") == [(i + 1, f"spooled {i}") for i in range(12)]


# --- the worker spawn point ---------------------------------------------------------------------

def test_a_live_worker_is_not_started_twice(data_dir: Path, project: Path) -> None:
    workers = data_dir / "workers"
    workers.mkdir(parents=True)
    assert spawn.worker_alive(str(workers), SESSION) is False
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\nfcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('held', flush=True)\ntime.sleep(60)\n", spawn.lock_path(str(workers), SESSION)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        assert spawn.worker_alive(str(workers), SESSION) is True
        assert spawn.ensure_worker(str(data_dir), str(workers), str(data_dir / "logs"), SESSION) is None
        proc = run_hook("new", prompt(project, "go"), env={**os.environ, "CLAUDE_MEM_WORKER_AUTOSTART": "1"})
        assert proc.returncode == 0 and proc.stderr == ""
        assert not list((data_dir / "logs").glob("worker-*.log"))  # nothing was spawned
    finally:
        holder.kill()
        holder.wait()
    assert spawn.worker_alive(str(workers), SESSION) is False  # the kernel dropped the lock


def test_new_starts_a_worker(data_dir: Path, project: Path) -> None:
    # The worker, not the index: no memory service loading a model that teardown must then stop.
    env = {"CLAUDE_MEM_WORKER_AUTOSTART": "1", "CLAUDE_MEM_SYNTHESIZER": "heuristic", "CLAUDE_MEM_WORKER_IDLE_S": "0.5",
           "CLAUDE_MEM_SEMANTIC_INDEX": "0"}
    proc = run_hook("new", prompt(project, "go"), env={**os.environ, **env})
    assert proc.returncode == 0 and proc.stderr == ""
    workers = str(data_dir / "workers")
    deadline = time.monotonic() + 30
    log = data_dir / "logs" / f"worker-{spawn.session_key(SESSION)}.log"
    while time.monotonic() < deadline and not Path(spawn.lock_path(workers, SESSION)).exists():
        time.sleep(0.05)
    assert log.exists()
    assert Path(spawn.lock_path(workers, SESSION)).exists(), log.read_text()
    while time.monotonic() < deadline and spawn.worker_alive(workers, SESSION):
        time.sleep(0.1)
    assert not spawn.worker_alive(workers, SESSION), "the worker did not exit after its idle time"


# --- what the hook process loads, and the files it makes -----------------------------------------

HEAVY = ("chromadb", "claude_agent_sdk", "lxml", "mcp", "click", "psutil", "platformdirs")
# Standard-library modules the hook path avoids on purpose: ~12 ms of start-up between them
# (bench/hooks.py). Measured sys.modules of a bare `python -c` does not hold them either.
SLOW_STDLIB = ("typing", "dataclasses", "inspect", "hashlib", "subprocess")
# Our modules a hook may load: the hook path, the store, the injected-context room (push/), the
# ground it stands on (text/, the locks, detaching), worker start-up, the memory service's
# stdlib client (the prompt push asks it first), and the write guard (guard/: a past failure's
# line is screened before the command-failure push shows it).
HOOK_PATH = ("claude_mem", "claude_mem.entry", "claude_mem.hosts", "claude_mem.hosts.hook_table", "claude_mem.hosts.payloads",
             "claude_mem.jsonfile", "claude_mem.hooks", "claude_mem.project", "claude_mem.file_paths", "claude_mem.settings",
             "claude_mem.logs", "claude_mem.resources",
             "claude_mem.store", "claude_mem.push", "claude_mem.text", "claude_mem.worker", "claude_mem.worker.spawn",
             "claude_mem.worker.stranded", "claude_mem.service", "claude_mem.service.client", "claude_mem.service.protocol",
             "claude_mem.processes", "claude_mem.guard")


def on_hook_path(module: str) -> bool:
    return module in HOOK_PATH or module.startswith(("claude_mem.store.", "claude_mem.push.", "claude_mem.text.", "claude_mem.guard."))


@pytest.mark.parametrize("command", ["context", "context-service", "new", "pre", "pre-bash", "save", "summary"])
def test_hooks_import_only_the_standard_library(command: str, data_dir: Path, project: Path) -> None:
    # With memories of an earlier session present, so the digest and the pushes run too (the
    # prompt's from keywords: the memory service is a process of its own). "context-service":
    # SessionStart with the semantic index on, which starts the memory service (a spawn).
    conn = connect(str(data_dir.parent / "seed.db"))
    conn.close()
    data_dir.mkdir()
    shutil.move(str(data_dir.parent / "seed.db"), str(data_dir / "claude-mem.db"))
    conn = connect(str(data_dir / "claude-mem.db"))
    with transaction(conn):
        records.ensure_session(conn, "old", project="widget", cwd=str(project), transcript_path=None)
        memories.insert_observation(conn, "old", "widget", memories.Observation(
            type="change", title="Seeded widget parser", files_read=[str(project / "parser.py")]), prompt_number=1)
        queue.enqueue_tool(conn, "old", tool_name="Bash", tool_input=json.dumps({"command": "pytest tests/test_widget.py"}),
                           tool_response=json.dumps({"error": "Exit code 1\nE   Seeded widget failure"}), tool_use_id="b1",
                           is_error=True, duration_ms=5, agent_id=None, cwd=str(project), prompt_id=None)
    conn.close()
    payload = {"context": event("SessionStart", project, source="startup"), "new": prompt(project, "the seeded widget parser?"),
               "context-service": event("SessionStart", project, source="startup"),
               "pre": event("PreToolUse", project, tool_name="Read", tool_input={"file_path": str(project / "parser.py")}),
               "pre-bash": event("PreToolUse", project, tool_name="Bash", tool_input={"command": "pytest tests/test_widget.py"}),
               "save": tool(project, "t1"), "summary": stop(project)}[command]
    code = ("import sys\nsite = sorted(sys.modules)\nfrom claude_mem.entry import main\nrc = main([sys.argv[1]])\n"
            "sys.stderr.write('MODULES ' + ' '.join(sorted(sys.modules)) + '\\nSITE ' + ' '.join(site) + '\\n')\n"
            "sys.exit(rc)\n")
    semantic = "1" if command == "context-service" else "0"
    proc = subprocess.run([sys.executable, "-c", code, command.split("-")[0]], input=json.dumps(payload).encode(),
                          capture_output=True, timeout=60, env={**os.environ, "CLAUDE_MEM_SEMANTIC_INDEX": semantic})
    assert proc.returncode == 0
    err = proc.stderr.decode()
    [line, site_line] = err.splitlines()
    assert line.startswith("MODULES ") and site_line.startswith("SITE "), err
    loaded = set(line.split()[1:])
    assert "claude_mem.hooks" in loaded
    heavy = sorted(m for m in loaded if m.split(".")[0] in HEAVY)
    assert heavy == []
    # What the interpreter's start-up loaded before any of our code ran (a .pth hook of
    # setuptools) is not the hook's doing.
    ours = loaded - set(site_line.split()[1:])
    assert sorted({m.split(".")[0] for m in ours} - set(sys.stdlib_module_names) - {"claude_mem"}) == []
    assert sorted(m for m in loaded if m.startswith("claude_mem") and not on_hook_path(m)) == []
    assert sorted(m for m in loaded if m in SLOW_STDLIB) == []  # the service is started by os.posix_spawn
    if command == "context":  # the digest reads memory: the queue and the workers' modules are not its cost
        assert sorted(loaded & {"claude_mem.store.records", "claude_mem.store.queue", "claude_mem.worker.spawn",
                                "claude_mem.worker.stranded"}) == []
    if command == "context-service":
        assert wait_until(lambda: service_client.running(str(data_dir)), 30), "SessionStart started the memory service"
    if command != "save" and command != "summary":
        said = json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]
        assert ("Seeded widget failure" if command == "pre-bash" else "Seeded widget parser") in said


def test_files_a_hook_creates_are_private(data_dir: Path, project: Path) -> None:
    assert not data_dir.exists()
    payload = json.dumps(prompt(project, "hello")).encode()
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "new"], input=payload, capture_output=True, timeout=30, umask=0)
    assert proc.returncode == 0 and proc.stderr == b""
    for folder in (data_dir, data_dir / "logs", data_dir / "spool"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    assert stat.S_IMODE((data_dir / "claude-mem.db").stat().st_mode) == 0o600
    run_hook("save", b"broken")  # writes the log
    assert stat.S_IMODE((data_dir / "logs" / "claude-mem.log").stat().st_mode) == 0o600


def test_hooks_run_under_the_hidden_hook_group_and_by_the_names_older_installs_wrote(data_dir: Path, project: Path) -> None:
    cli = [sys.executable, "-m", "claude_mem"]
    listed = subprocess.run([*cli, "--help"], capture_output=True, text=True, check=True).stdout
    commands = re.findall(r"^  (\S+)", listed.split("Commands:", 1)[1], re.M)  # a wrapped description is indented deeper
    assert not {"hook", "context", "new", "pre", "save", "summary"} & set(commands), listed
    helped = subprocess.run([*cli, "hook", "save", "--help"], capture_output=True, text=True)
    assert helped.returncode == 0 and "PostToolUse" in helped.stdout and "--host" in helped.stdout
    for n, words in enumerate((["hook", "save"], ["save"], ["hook", "save", "--host", "codex"])):
        proc = subprocess.run([*cli, *words], input=json.dumps(tool(project, f"toolu_{n}")), capture_output=True, text=True)
        assert (proc.returncode, proc.stderr) == (0, ""), words
    assert [r["tool_use_id"] for r in queue_rows(data_dir)] == ["toolu_0", "toolu_1", "toolu_2"]
