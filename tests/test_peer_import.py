"""`claude-mem import` of the npm claude-mem's database: a database its 13.25.3 wrote itself
(tests/fixtures/peer), real SQLite, the real CLI, real Chroma."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.replay import run_hook
from claude_mem.store import npm_import
from claude_mem.store.db import connect, transaction
from claude_mem.store.records import ensure_session
from tests.cli_helpers import invoke, invoke_json, one_error_line
from tests.peer_db import PEER_COUNTS, file_digests, make_peer_db

SECRETS = ("sk-ant-api03-", "hunter2-correct-horse", "4200 EUR", "12 Elm Street")


def peer_rows(path: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.fixture
def peer(tmp_path: Path) -> Path:
    return make_peer_db(tmp_path / "dot-claude-mem" / "claude-mem.db")


@pytest.fixture
def ours(data_dir: Path) -> sqlite3.Connection:
    config = settings.load()
    config.ensure_dirs()
    return connect(config.db_path)


@pytest.mark.slow
def test_a_peer_database_imports_whole_findable_once_and_untouched(peer: Path, data_dir: Path, tmp_path: Path) -> None:
    """The issue's bar: everything there, searchable, in its project's digest; twice adds nothing;
    the peer's files byte-identical, even with the peer running (a connection holding rows in
    its WAL, never checkpointed)."""
    running = sqlite3.connect(peer, isolation_level=None)
    running.execute("PRAGMA wal_autocheckpoint = 0")
    running.execute("INSERT INTO observations (memory_session_id, project, type, title, subtitle, facts, narrative, concepts,"
                    " files_read, files_modified, prompt_number, created_at, created_at_epoch)"
                    " SELECT memory_session_id, project, 'discovery', 'Only in the WAL: the cache warms on boot', '', '[]',"
                    " 'The cache is filled when the app boots.', '[]', '[]', '[]', 1, created_at, created_at_epoch + 1"
                    " FROM observations WHERE id = 8")
    assert Path(f"{peer}-wal").stat().st_size > 0
    before = file_digests(peer)
    try:
        report = invoke_json("import", str(peer))
        expected = {**PEER_COUNTS, "observation": PEER_COUNTS["observation"] + 1}
        assert report["added"] == expected and report["schema_version"] == 52
        assert report["index_error"] is None and sum(report["indexed"].values()) == sum(expected.values()) - expected["session"]
        assert all(p["skipped"] == [] for p in report["projects"])

        again = invoke_json("import", str(peer))
        assert again["added"] == dict.fromkeys(expected, 0) and again["already_present"] == expected
        assert file_digests(peer) == before
    finally:
        running.close()

    conn = connect(str(data_dir / "claude-mem.db"))
    titles = {r[0] for r in conn.execute("SELECT title FROM observations")}
    assert titles == {r[0] for r in peer_rows(peer, "SELECT title FROM observations")}
    assert {r[0] for r in conn.execute("SELECT request FROM session_summaries")} == {
        r[0] for r in peer_rows(peer, "SELECT request FROM session_summaries")}
    assert conn.execute("SELECT count(*) FROM user_prompts").fetchone()[0] == PEER_COUNTS["prompt"]
    # Dates kept to the millisecond; files kept.
    assert sorted(r[0] for r in conn.execute("SELECT created_at_epoch FROM observations")) == sorted(
        r[0] for r in peer_rows(peer, "SELECT created_at_epoch FROM observations"))
    assert json.loads(conn.execute("SELECT files_read FROM observations WHERE title LIKE 'Test suite%'").fetchone()[0]) == [
        "tests/conftest.py"]
    # Redacted on the way in, as everywhere.
    dump = "\n".join(conn.iterdump())
    assert not [s for s in SECRETS if s in dump]
    assert "[REDACTED]" in dump

    found = invoke_json("search", "unsigned payment webhook")
    assert found["mode"] == "hybrid" and found["note"] is None  # the semantic index took part
    assert found["hits"][0]["title"] == "Payment webhook accepts unsigned requests", found
    found = invoke_json("search", "cache warms on boot")
    assert found["hits"][0]["title"] == "Only in the WAL: the cache warms on boot"

    notes = tmp_path / "notes"  # a folder of that name: the same project name in both tools
    notes.mkdir()
    digest = run_hook("context", {"session_id": "next", "cwd": str(notes), "hook_event_name": "SessionStart"})
    context = json.loads(digest.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "SQLite chosen over Postgres for the notes app" in context and "Explain the notes app storage choice" in context


def test_projects_go_to_ours_of_the_same_folder_name_or_where_the_map_says(peer: Path, ours: sqlite3.Connection) -> None:
    with transaction(ours):
        ensure_session(ours, "mine-1", project="github.com/acme/webapp", cwd=None, transcript_path=None)
        ensure_session(ours, "mine-2", project="github.com/me/notes", cwd=None, transcript_path=None)
        ensure_session(ours, "mine-3", project="gitlab.com/me/notes", cwd=None, transcript_path=None)
    imported = npm_import.import_npm(ours, str(peer), project_map={"old-api": "legacy-api"})
    plan = {name: (p.project, p.why) for name, p in imported.projects.items()}
    assert plan["webapp"] == ("github.com/acme/webapp", "the project here with that folder name")
    assert plan["webapp/webapp-payments"][0] == "github.com/acme/webapp"  # a worktree goes with its repository
    assert plan["webapp/webapp-payments"][1].startswith("a worktree of webapp")
    assert plan["notes"][0] == "notes" and "several projects here end in 'notes'" in plan["notes"][1]
    assert plan["old-api"] == ("legacy-api", "--project-map")
    counts = dict(ours.execute("SELECT project, count(*) FROM observations GROUP BY project").fetchall())
    assert counts == {"github.com/acme/webapp": 5, "notes": 2, "legacy-api": 1}
    sessions = dict(ours.execute("SELECT claude_session_id, project FROM sdk_sessions").fetchall())
    assert sessions["5e551001-0000-4000-8000-000000000002"] == "github.com/acme/webapp"
    assert imported.projects["webapp"].added == {"session": 1, "prompt": 2, "observation": 3, "summary": 2}


def test_types_are_mapped_to_the_closest_with_the_original_kept(peer: Path, ours: sqlite3.Connection) -> None:
    npm_import.import_npm(ours, str(peer))
    rows = dict(ours.execute("SELECT title, type || '/' || coalesce(raw_type, '') FROM observations").fetchall())
    assert rows["Payment webhook accepts unsigned requests"] == "discovery/security_alert"
    assert rows["Customer export lives outside the repository"] == "discovery/sensitive"
    assert rows["Login crash fixed by serialising token refresh"] == "bugfix/"
    assert [npm_import.map_type(t) for t in ("refactor", "Bug-Fix", "conclusion", "case-holding", None)] == [
        ("refactor", None), ("bugfix", "Bug-Fix"), ("decision", "conclusion"), ("discovery", "case-holding"), ("discovery", None)]


def test_shapes_the_peer_can_hold_are_imported_or_skipped_with_their_reason(peer: Path, ours: sqlite3.Connection) -> None:
    # Shapes the fixture's run did not produce but a long-used peer database holds: rows from
    # before titles (text only), several summaries of one prompt, a prompt that was all private,
    # an observation whose session is gone, an empty one, another agent's session, and a session
    # without an id (skipped with its rows: the rest is imported).
    edit = sqlite3.connect(peer, isolation_level=None)
    memory_id = edit.execute("SELECT memory_session_id FROM sdk_sessions WHERE id = 3").fetchone()[0]
    obs = ("INSERT INTO observations (memory_session_id, project, text, type, title, narrative, created_at, created_at_epoch)"
           " VALUES (?, 'notes', ?, ?, ?, ?, '2025-01-02T03:04:05.000Z', 1735787045000)")
    edit.execute(obs, (memory_id, "Backups run nightly at 02:00 to the NAS", "discovery", None, None))
    edit.execute(obs, (memory_id, None, "change", None, None))
    edit.execute(obs, ("gone-session", None, "bugfix", "Orphan", "its session was deleted"))
    edit.execute("INSERT INTO session_summaries (memory_session_id, project, request, prompt_number, created_at, created_at_epoch)"
                 " VALUES (?, 'notes', 'an older summary of the same turn', 1, '2025-01-01T00:00:00.000Z', 1735689600000)", (memory_id,))
    edit.execute("INSERT INTO user_prompts (session_db_id, content_session_id, prompt_number, prompt_text, created_at,"
                 " created_at_epoch) VALUES (3, '5e551001-0000-4000-8000-000000000003', 2, '<private>only this</private>',"
                 " '2025-01-02T00:00:00.000Z', 1735776000000)")
    edit.execute("INSERT INTO sdk_sessions (content_session_id, memory_session_id, project, platform_source, started_at,"
                 " started_at_epoch, status) VALUES ('5e551001-0000-4000-8000-000000000001', 'codex-mem', 'notes', 'codex',"
                 " '2025-01-03T00:00:00.000Z', 1735862400000, 'active')")
    blank = edit.execute("INSERT INTO sdk_sessions (content_session_id, memory_session_id, project, started_at, started_at_epoch,"
                         " status) VALUES ('', 'blank-mem', 'notes', '2025-01-04T00:00:00.000Z', 1735948800000, 'completed')"
                         ).lastrowid
    edit.execute(obs, ("blank-mem", None, "change", "Under a session without an id", "it cannot be filed"))
    edit.close()

    imported = npm_import.import_npm(ours, str(peer))
    reasons = {s.ref: s.reason for s in imported.skipped}
    old_summary = peer_rows(peer, "SELECT max(id) FROM session_summaries")[0][0]
    last_obs = peer_rows(peer, "SELECT max(id) FROM observations")[0][0]
    assert reasons == {
        f"observation {last_obs - 2}": "empty: no title, text or narrative",
        f"observation {last_obs - 1}": "its session (gone-session) is not in the database",
        f"session {blank}": "not importable (session: 'claude_session_id' must not be empty)",
        f"observation {last_obs}": f"its session {blank} was skipped",
        f"summary {old_summary}": "an earlier summary of prompt 1; the latest is kept",
        f"prompt {PEER_COUNTS['prompt'] + 1}": "empty once <private> parts and secrets are removed",
    }
    assert {s.ref for s in imported.projects["notes"].skipped} == set(reasons)
    legacy = ours.execute("SELECT title, narrative FROM observations WHERE created_at_epoch = 1735787045000").fetchone()
    assert tuple(legacy) == ("Backups run nightly at 02:00 to the NAS", "Backups run nightly at 02:00 to the NAS")
    # The same Claude session id from another agent stays a session of its own.
    codex = ours.execute("SELECT project, status FROM sdk_sessions WHERE claude_session_id = ?",
                         ("codex:5e551001-0000-4000-8000-000000000001",)).fetchone()
    assert tuple(codex) == ("notes", "ended")
    assert ours.execute("SELECT request FROM session_summaries WHERE request LIKE 'an older%'").fetchone() is None


def test_dry_run_counts_and_stores_nothing(peer: Path, ours: sqlite3.Connection) -> None:
    imported = npm_import.import_npm(ours, str(peer), dry_run=True)
    assert imported.result.added == PEER_COUNTS
    assert ours.execute("SELECT count(*) FROM observations").fetchone()[0] == 0


def test_what_is_not_the_peers_database_is_refused_in_one_line(peer: Path, ours: sqlite3.Connection, data_dir: Path,
                                                                tmp_path: Path) -> None:
    with pytest.raises(npm_import.NpmImportError, match="a database of this claude-mem"):
        npm_import.import_npm(ours, str(data_dir / "claude-mem.db"))
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    with pytest.raises(npm_import.NpmImportError, match="not the npm claude-mem"):
        npm_import.import_npm(ours, str(other))
    with pytest.raises(npm_import.NpmImportError, match="no project of that name.*its projects: notes, old-api, webapp"):
        npm_import.import_npm(ours, str(peer), project_map={"old-apii": "x"})
    assert ours.execute("SELECT count(*) FROM sdk_sessions").fetchone()[0] == 0


@pytest.mark.parametrize("args, message", [
    (["--project-map", "webapp"], "write OLD=NEW"),
    (["--project-map", "a=b", "--project-map", "a=c"], "names 'a' twice"),
])
def test_bad_project_maps_are_usage_errors(peer: Path, args: list[str], message: str) -> None:
    result = invoke("import", str(peer), *args, code=2)
    assert message in one_error_line(result.stderr)


def test_the_report_names_each_project_and_its_skipped_rows(peer: Path, data_dir: Path) -> None:
    edit = sqlite3.connect(peer, isolation_level=None)
    edit.execute("INSERT INTO observations (memory_session_id, project, type, created_at, created_at_epoch)"
                 " VALUES ('gone', 'old-api', 'change', '2025-01-01T00:00:00.000Z', 1735689600000)")
    edit.close()
    lines = invoke("import", os.path.dirname(peer), "--project-map", "old-api=legacy-api", "--no-index").stdout.splitlines()
    assert lines[0] == f"the npm claude-mem (thedotmack/claude-mem), schema 52: {peer}"
    assert lines[1].split()[:4] == ["PEER", "PROJECT", "FILED", "UNDER"]
    row = next(line.split() for line in lines if line.startswith("old-api "))
    assert row[:8] == ["old-api", "legacy-api", "2", "2", "1", "0", "0", "1"]
    assert f"skipped observation {PEER_COUNTS['observation'] + 1} (old-api): its session (gone) is not in the database" in lines
    assert lines[-1] == "imported 5 sessions, 6 prompts, 8 observations, 4 summaries"


def test_a_lone_surrogate_in_the_peers_rows_is_replaced_not_a_failure(peer: Path, ours: sqlite3.Connection) -> None:
    # Node writes what a JavaScript string holds: a lone surrogate as its WTF-8 bytes in a column,
    # escaped inside a JSON list. Before, reading the row raised and nothing was imported.
    edit = sqlite3.connect(peer, isolation_level=None)
    memory_id = edit.execute("SELECT memory_session_id FROM sdk_sessions WHERE id = 3").fetchone()[0]
    title = b"Emoji cut in half \xed\xa0\xbd" + " then pasted\u2028text".encode()
    edit.execute("INSERT INTO observations (memory_session_id, project, text, type, title, narrative, facts, created_at,"
                 " created_at_epoch) VALUES (?, 'notes', NULL, 'discovery', CAST(? AS TEXT), ?, ?,"
                 " '2025-01-02T03:04:05.000Z', 1735787045001)", (memory_id, title, "nul\x00kept", '["half \\ud83d emoji"]'))
    edit.close()
    imported = npm_import.import_npm(ours, str(peer))
    assert imported.skipped == []
    row = ours.execute("SELECT title, narrative, facts FROM observations WHERE created_at_epoch = 1735787045001").fetchone()
    # A title is one line (U+2028 ends a line, as \n does); the narrative keeps its NUL.
    assert tuple(row) == ("Emoji cut in half \ufffd then pasted text", "nul\x00kept", '["half \ufffd emoji"]')
