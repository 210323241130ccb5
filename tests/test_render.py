"""Tool events as the observer model reads them (claude_mem/worker/render.py): each tool keeps the
fields that say what happened, responses are cut to their budget, boring events fold into a line."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pytest

from claude_mem import settings
from claude_mem.store import queue, queue_rows, records
from claude_mem.store.db import connect, transaction
from claude_mem.store.queue import QueueStatus
from claude_mem.store.rows import QueuedEvent
from claude_mem.worker.events import Event, files_touched
from claude_mem.worker.render import RESPONSE_BUDGET, fill, is_boring, render_batch, render_event

CWD = "/home/dev/calc"
EPOCH_MS = 1_700_000_000_000
STAMP = time.strftime("%H:%M:%S", time.localtime(EPOCH_MS / 1000))


def tool(name: str, tool_input: Any, response: Any = None, *, error: bool = False, kind: str = "tool") -> Event:
    return Event(id=1, kind=kind, tool_name=name, tool_input=tool_input, tool_response=response, is_error=error,
                 prompt_number=1, created_at_epoch=EPOCH_MS, cwd=CWD)


def test_a_queued_row_reads_back_as_a_typed_record_and_becomes_an_event(data_dir: Path) -> None:
    """store/queue_rows: a row comes back as a frozen QueuedEvent, its JSON decoded (text that is
    not JSON kept as it is), its flag a bool and its status a QueueStatus; the worker's Event is made of it."""
    config = settings.load()
    config.ensure_dirs()
    conn = connect(config.db_path)
    with transaction(conn):
        records.ensure_session(conn, "s1", project="p", cwd="/p", transcript_path=None)
        records.record_prompt(conn, "s1", "list it", None)
        tool_id = queue.enqueue_tool(conn, "s1", tool_name="Bash", tool_input='{"command": "ls"}', tool_response="not json",
                                     tool_use_id="t1", is_error=True, duration_ms=12, agent_id=None, cwd="/p")
        end_id = queue.enqueue_finalize(conn, "s1", last_assistant_message="listed", cwd="/p")
    tool_row, end_row = queue_rows.list_rows(conn, session_id="s1")
    assert isinstance(tool_row, QueuedEvent) and (tool_row.id, end_row.id) == (tool_id, end_id)
    assert (tool_row.tool_input, tool_row.tool_response, tool_row.is_error, tool_row.prompt_number) == \
        ({"command": "ls"}, "not json", True, 1)
    assert tool_row.status is QueueStatus.PENDING and (tool_row.attempts, tool_row.last_error, tool_row.duration_ms) == (0, None, 12)
    assert end_row.kind == "finalize" and end_row.tool_response == {"last_assistant_message": "listed"}
    assert queue_rows.list_rows(conn, status=QueueStatus.DONE) == [] and queue_rows.next_pending(conn, "s1") == [tool_row, end_row]
    with pytest.raises(dataclasses.FrozenInstanceError):
        tool_row.status = QueueStatus.DONE  # type: ignore[misc]
    conn.close()
    event = Event.from_row(tool_row)
    assert (event.id, event.kind, event.tool_input, event.is_error, event.prompt_number, event.cwd) == \
        (tool_id, "tool", {"command": "ls"}, True, 1, "/p")


def test_bash_shows_the_command_its_purpose_and_both_streams() -> None:
    text = render_event(tool("Bash", {"command": "make test", "description": "run the tests"},
                             {"stdout": "3 passed\n", "stderr": "warning: slow\n", "interrupted": True}))
    assert text.splitlines() == [f"[{STAMP}] Bash `make test`  # run the tests", "  => 3 passed", "     stderr: warning: slow",
                                 "     (interrupted)"]


def test_read_is_named_relative_to_the_project_with_its_offset_and_content() -> None:
    text = render_event(tool("Read", {"file_path": f"{CWD}/src/calc.py", "offset": 10},
                             {"type": "text", "file": {"content": "def add(a, b):\n    return a - b"}}))
    assert text.splitlines() == [f"[{STAMP}] Read src/calc.py (from line 10)", "  => def add(a, b):", "         return a - b"]
    elsewhere = render_event(tool("Read", {"file_path": "/etc/hosts"}, {"file": {"content": "x"}}))
    assert elsewhere.splitlines()[0] == f"[{STAMP}] Read /etc/hosts"


def test_writes_and_edits_show_their_text_and_no_response() -> None:
    write = render_event(tool("Write", {"file_path": f"{CWD}/notes.md", "content": "hello"}, {"type": "create"}))
    assert write.splitlines() == [f"[{STAMP}] Write notes.md (5 chars)", "  content: hello"]
    edits = [{"old_string": f"old{n}", "new_string": f"new{n}"} for n in range(6)]
    multi = render_event(tool("MultiEdit", {"file_path": f"{CWD}/calc.py", "edits": edits}, {"structuredPatch": []}))
    lines = multi.splitlines()
    assert lines[0] == f"[{STAMP}] MultiEdit calc.py"
    assert lines[1:9] == [line for n in range(4) for line in (f"  - old{n}", f"  + new{n}")]
    assert lines[9:] == ["  (+2 more edits)"]


def test_a_failure_is_marked_and_its_error_shown_even_for_an_edit() -> None:
    text = render_event(tool("Edit", {"file_path": f"{CWD}/calc.py", "old_string": "a", "new_string": "b"},
                             {"error": "String to replace not found"}, error=True))
    assert text.splitlines()[0] == f"[{STAMP}] Edit calc.py FAILED"
    assert text.splitlines()[-1] == "  => String to replace not found"


def test_a_long_response_keeps_its_head_and_tail_within_the_budget() -> None:
    out = "HEAD " + "x" * 20_000 + " TAIL"
    text = render_event(tool("Bash", {"command": "pytest"}, {"stdout": out, "stderr": ""}))
    response = text.split("  => ", 1)[1]
    assert response.startswith("HEAD ") and response.endswith(" TAIL")
    assert "chars dropped" in response and len(response) < RESPONSE_BUDGET["Bash"] + 100


def test_other_response_shapes() -> None:
    mcp = render_event(tool("mcp__docs__search", {"q": "lxml"}, [{"type": "text", "text": "found it"}, {"type": "image"}]))
    assert mcp.splitlines() == [f'[{STAMP}] mcp__docs__search {{"q":"lxml"}}', "  => found it"]
    task = render_event(tool("Task", {"subagent_type": "explorer", "description": "map the code"}, {"result": "three modules"}))
    assert task.splitlines() == [f"[{STAMP}] Task (explorer): map the code", "  => three modules"]
    patch = render_event(tool("WebFetch", {"url": "https://example.org"}, {"code": 200, "originalFile": "big", "structuredPatch": [1]}))
    assert patch.splitlines() == [f"[{STAMP}] WebFetch https://example.org", '  => {"code":200}']


def test_empty_searches_and_listings_fold_into_one_closing_line() -> None:
    empty_glob = tool("Glob", {"pattern": "*.md", "path": f"{CWD}/docs"}, {"filenames": [], "numFiles": 0})
    listing = tool("LS", {"path": CWD}, "a.py\nb.py")
    found = tool("Grep", {"pattern": "def add"}, {"filenames": ["calc.py"], "numFiles": 1})
    failed = tool("Glob", {"pattern": "*.x"}, {"error": "bad pattern"}, error=True)
    assert [is_boring(e) for e in (empty_glob, listing, found, failed)] == [True, True, False, False]
    batch = render_batch([empty_glob, found, listing])
    parts = batch.split("\n\n")
    assert parts[0].splitlines() == [f"[{STAMP}] Grep 'def add'", "  => 1 files: calc.py"]
    assert parts[1] == f"(also, nothing found/notable: Glob '*.md' in docs; LS {{\"path\":\"{CWD}\"}})"


def test_commands_that_say_nothing_fold_into_the_line_and_so_do_reads_of_a_file_as_it_was() -> None:
    def bash(command: str, stdout: str = "", error: bool = False) -> Event:
        return tool("Bash", {"command": command}, {"stdout": stdout, "stderr": ""}, error=error)

    quiet = [bash("ls -la"), bash("cd src && pwd"), bash("pwd; ls docs"), bash("git status", "On branch main\nnothing to commit,"
             " working tree clean"), bash("git -C /repo diff --stat"), bash("which python3", "/usr/bin/python3")]
    telling = [bash("git status", "Changes not staged for commit:\n\tmodified:   calc.py"), bash("git diff", "-a\n+b"),
               bash("ls missing", error=True), bash("echo hi | python x.py", "ok"), bash("cat calc.py", "def add"),
               bash("cd src"), bash("git log -3", "abc fix")]
    assert [is_boring(e) for e in quiet] == [True] * len(quiet)
    assert [is_boring(e) for e in telling] == [False] * len(telling)
    read = tool("Read", {"file_path": f"{CWD}/calc.py"}, {"file": {"content": "def add(a, b):"}})
    again = tool("Read", {"file_path": f"{CWD}/calc.py"}, {"file": {"content": "def add(a, b):"}})
    again.id = 2
    text = render_batch([read, quiet[0], again], repeated={2})
    assert text.count(f"[{STAMP}]") == 1 and text.endswith("(also, nothing found/notable: Bash `ls -la`; Read calc.py (again,"
                                                             " unchanged))")


def test_a_file_read_again_as_it_was_is_a_repeat_until_it_changes(data_dir: Path) -> None:
    """store/queue.repeated_reads: the result the session's last read of the same file gave, read by
    the main thread (or by a subagent when those are not folded); a file changed back is news."""
    config = settings.load()
    config.ensure_dirs()
    conn = connect(config.db_path)
    read = json.dumps({"file_path": "/p/calc.py"})

    def queued(response: str, agent: str | None = None, session: str = "s1", name: str = "Read") -> int:
        with transaction(conn):
            records.ensure_session(conn, session, project="p", cwd="/p", transcript_path=None)
            row = queue.enqueue_tool(conn, session, tool_name=name, tool_input=read, tool_response=response,
                                     tool_use_id=f"t{time.monotonic_ns()}", is_error=False, duration_ms=None, agent_id=agent, cwd="/p")
        assert row is not None
        return row

    old, new = json.dumps({"file": {"content": "a - b"}}), json.dumps({"file": {"content": "a + b"}})
    by_agent = queued(old, agent="explorer")
    first = queued(old)
    ids = [first, queued(old), queued(new), queued(old), queued(old), queued(old, session="s2"), queued(old, name="Write")]
    assert queue.repeated_reads(conn, "s1", ids, subagents_seen=False) == {ids[1], ids[4]}, "as the last read left it"
    assert queue.repeated_reads(conn, "s1", [first], subagents_seen=True) == {first}, "its subagent read it first"
    assert queue.repeated_reads(conn, "s1", [], subagents_seen=True) == set() and by_agent
    conn.close()


def test_files_touched_come_from_the_events_in_order_once_each() -> None:
    events = [tool("Read", {"file_path": "a.py"}), tool("Edit", {"file_path": "a.py"}), tool("Read", {"file_path": "a.py"}),
              tool("NotebookEdit", {"notebook_path": "n.ipynb"}), tool("Write", {"file_path": "b.py"}, error=True),
              tool("Read", {"file_path": "c.py"}, kind="finalize"), tool("Bash", {"command": "cat d.py"}), tool("Read", "not a dict")]
    assert files_touched(events) == (["a.py"], ["a.py", "n.ipynb"])


def test_templates_fill_what_they_are_given_and_keep_the_rest() -> None:
    assert fill("observation", memory="", events="EVENTS") == "EVENTS\n"
    assert fill("observation", memory="Memory already holds:\nobs:3 2026-01-02 x\n\n", events="EVENTS") == (
        "Memory already holds:\nobs:3 2026-01-02 x\n\nEVENTS\n")
    assert fill("observation", events="EVENTS", unused=1) == "$memoryEVENTS\n"
