"""The npm claude-mem's database where ours belongs (both read CLAUDE_MEM_DATA_DIR): every hook
and command says what it is and the fix in one line, and nothing in it changes."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from claude_mem.cli.app import cli
from claude_mem.replay import run_hook
from claude_mem.store.db import NpmDatabaseError, connect, is_npm_database, npm_database_at
from tests.peer_db import file_digests, make_peer_db

FIX = "set CLAUDE_MEM_DATA_DIR to another folder"


@pytest.fixture
def peer_in_data_dir(data_dir: Path) -> Path:
    return make_peer_db(data_dir / "claude-mem.db")


def _tables(path: Path) -> set[str]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        conn.close()


def test_connect_refuses_the_peer_database_before_writing_anything(peer_in_data_dir: Path) -> None:
    before, tables = file_digests(peer_in_data_dir), _tables(peer_in_data_dir)
    with pytest.raises(NpmDatabaseError) as caught:
        connect(str(peer_in_data_dir))
    message = str(caught.value)
    assert "\n" not in message and "npm claude-mem" in message and FIX in message
    assert f"claude-mem import {peer_in_data_dir}" in message
    assert file_digests(peer_in_data_dir) == before and _tables(peer_in_data_dir) == tables
    assert "schema_migrations" not in tables


def test_recognised_by_its_tables_not_its_name(tmp_path: Path, data_dir: Path) -> None:
    peer = make_peer_db(tmp_path / "anything.sqlite")
    assert npm_database_at(str(peer))
    ours = connect(str(tmp_path / "claude-mem.db"))
    assert not is_npm_database(ours)
    ours.close()
    assert not npm_database_at(str(tmp_path / "claude-mem.db"))
    (tmp_path / "notes.txt").write_text("not a database")
    assert not npm_database_at(str(tmp_path / "notes.txt")) and not npm_database_at(str(tmp_path / "missing.db"))


def test_every_hook_exits_0_with_one_line_naming_it_and_keeps_the_events(peer_in_data_dir: Path, data_dir: Path) -> None:
    before = file_digests(peer_in_data_dir)
    payloads = {
        "context": {"session_id": "s1", "cwd": str(data_dir), "hook_event_name": "SessionStart", "source": "startup"},
        "new": {"session_id": "s1", "cwd": str(data_dir), "hook_event_name": "UserPromptSubmit", "prompt": "hello"},
        "save": {"session_id": "s1", "cwd": str(data_dir), "hook_event_name": "PostToolUse", "tool_name": "Bash",
                 "tool_input": {"command": "ls"}, "tool_response": {"stdout": "a"}, "tool_use_id": "t1"},
        "summary": {"session_id": "s1", "cwd": str(data_dir), "hook_event_name": "Stop"},
    }
    for command, payload in payloads.items():
        proc = run_hook(command, payload)
        assert proc.returncode == 0, command
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "npm claude-mem" in lines[0] and FIX in lines[0], (command, proc.stderr)
        if command != "context":
            assert "event kept in" in lines[0]
    # Nothing lost: the three events wait in the spool for a database of ours.
    assert len([n for n in os.listdir(data_dir / "spool") if n.endswith(".json")]) == 3
    assert file_digests(peer_in_data_dir) == before


@pytest.mark.parametrize("args, exit_code", [(["status"], 1), (["search", "login"], 1), (["settings", "list"], 0)])
def test_commands_say_so_once(peer_in_data_dir: Path, args: list[str], exit_code: int) -> None:
    before = file_digests(peer_in_data_dir)
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == exit_code, result.output
    said = [line for line in result.stderr.splitlines() if "npm claude-mem" in line]
    assert len(said) == 1 and FIX in said[0], result.stderr
    assert said[0].startswith("Error: " if exit_code else "warning: ")
    assert file_digests(peer_in_data_dir) == before


def test_our_own_database_gets_no_such_line(data_dir: Path) -> None:
    result = CliRunner().invoke(cli, ["settings", "list"])
    assert result.exit_code == 0 and "npm claude-mem" not in result.stderr
