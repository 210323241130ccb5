"""The changing commands: forget, prune, export, import, settings, doctor. Real SQLite and a
real embedded Chroma index in the test's data dir."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.index.semantic_index import Index
from claude_mem.store.db import connect
from tests.cli_helpers import dead_chroma, fts_ids, invoke, invoke_json, one_error_line, table_rows
from tests.stores import Stored, populate

TABLES = {"sdk_sessions": "claude_session_id", "user_prompts": "session_id,prompt_number",
          "observations": "session_id,content_hash", "session_summaries": "session_id,prompt_number"}


def count(stored: Stored, table: str) -> int:
    return stored.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def search_ids(stored: Stored, index: Index, text: str) -> set[tuple[str, int]]:
    """What the one search function (MCP, CLI, viewer) finds, by keyword and by meaning."""
    from claude_mem.recall.search import search

    return {(h.kind, h.id) for h in search(stored.conn, text, index=index, limit=50).hits}


# --- forget --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "expected"), [
    ((), "say what to forget"),
    (("twelve",), "'twelve' is not a row id"),
    (("1", "--project", "alpha"), "either ids or --session"),
    (("--before", "someday"), "--before: 'someday' is not a date"),
    (("1", "--yes", "--dry-run"), "--yes and --dry-run say opposite things"),
])
def test_forget_usage_errors(stored: Stored, args: tuple[str, ...], expected: str) -> None:
    assert expected in one_error_line(invoke("forget", *args, code=2).output)
    assert count(stored, "observations") == 5


@pytest.mark.parametrize(("args", "expected"), [
    (("999",), "no observation 999"), (("obs:1", "sum:77"), "no summary 77"),
    (("--session", "ghost"), "no session 'ghost'"), (("--project", "gamma"), "nothing to forget"),
    (("--before", "2001-01-01"), "nothing to forget"),
])
def test_forget_unknown_is_exit_1_and_forgets_nothing(stored: Stored, args: tuple[str, ...], expected: str) -> None:
    assert expected in one_error_line(invoke("forget", *args, "--yes", code=1).output)
    assert count(stored, "observations") == 5 and count(stored, "sdk_sessions") == 3


def test_forget_dry_run_lists_and_removes_nothing(stored: Stored) -> None:
    out = invoke("forget", "--project", "alpha").output
    assert out.startswith("would forget 2 sessions, 3 prompts, 4 observations, 2 summaries, 2 queued events, 1 raw model reply:")
    assert "sess-alpha" in out and "sess-old" in out and "run again with --yes" in out
    assert invoke("forget", "--project", "alpha", "--dry-run").output == out  # the preview, said explicitly
    plan = invoke_json("forget", str(stored.obs["login"]), f"sum:{stored.sums['beta1']}")
    assert plan["dry_run"] is True and plan["observations"] == [stored.obs["login"]] and plan["summaries"] == [stored.sums["beta1"]]
    assert plan["counts"]["observations"] == 1 and plan["sessions"] == []
    assert count(stored, "observations") == 5 and count(stored, "session_summaries") == 3


def test_forget_removes_from_sqlite_fts_and_chroma_together(stored: Stored, index: Index) -> None:
    login = stored.obs["login"]
    assert ("observation", login) in search_ids(stored, index, "refresh token null after logout")
    out = invoke("forget", f"obs:{login}", "--yes").output
    assert out == "forgot 1 observation\ndatabase compacted\n"
    assert count(stored, "observations") == 4
    assert fts_ids(stored.conn, "observations_fts", "refresh") == []
    assert ("observation", login) not in search_ids(stored, index, "refresh token null after logout")
    assert index.drift(stored.conn)["in_sync"]

    assert any(kind == "observation" and i == stored.obs["ci"] for kind, i in search_ids(stored, index, "CI runner cores"))
    result = invoke_json("forget", "--session", "sess-beta", "--yes")
    assert result["counts"]["sessions"] == 1 and result["index_error"] is None and result["vacuumed"] is True
    assert not any(kind == "observation" and i == stored.obs["ci"] for kind, i in search_ids(stored, index, "CI runner cores"))
    assert fts_ids(stored.conn, "user_prompts_fts", "slow") == []
    assert index.drift(stored.conn)["in_sync"]


def test_forget_with_chroma_unavailable_still_forgets_and_says_so(stored: Stored, index: Index) -> None:
    result = invoke("forget", "--project", "beta", "--yes", "--no-vacuum", env=dead_chroma())
    assert result.stdout == "forgot 1 session, 1 prompt, 1 observation, 1 summary\n"
    assert "warning: semantic index at http://127.0.0.1" in result.stderr and "doctor --fix" in result.stderr
    assert count(stored, "sdk_sessions") == 2
    assert index.drift(stored.conn)["observation"]["stale"] == 1
    # Chroma is back: doctor --fix (index_missing) drops what was forgotten meanwhile.
    out = invoke("doctor", "--fix").output
    assert "removed documents of 3 deleted row(s)" in out
    assert index.drift(stored.conn)["in_sync"]


def test_forget_refuses_a_session_with_a_live_worker(stored: Stored, live_worker: str) -> None:
    line = one_error_line(invoke("forget", "--session", live_worker, "--yes", code=1).output)
    assert "has a live worker" in line and str(os.getpid()) in line
    assert count(stored, "sdk_sessions") == 3


def test_forget_before_a_date_keeps_newer_rows(stored: Stored) -> None:
    out = invoke("forget", "--before", "30d", "--yes").output
    assert out.startswith("forgot 1 session, 1 prompt, 1 observation, 1 queued event, 1 raw model reply\n")
    assert [r["claude_session_id"] for r in invoke_json("sessions")] == ["sess-beta", "sess-alpha"]


# --- prune ---------------------------------------------------------------------------------------

def test_prune_applies_retention_days(stored: Stored, live_worker: str) -> None:
    assert "retention_days is 0" in one_error_line(invoke("prune", code=1).output)
    invoke("settings", "set", "retention_days", "90")
    dry = invoke("prune").output
    assert dry.startswith("would forget 1 session, 1 prompt, 1 observation, 1 queued event, 1 raw model reply:")
    assert "sess-old" in dry and count(stored, "sdk_sessions") == 3
    stored.conn.execute("UPDATE observations SET created_at_epoch = 0 WHERE id = ?", (stored.obs["login"],))
    done = invoke_json("prune", "--yes")
    assert done["counts"]["sessions"] == 1 and done["counts"]["observations"] == 2
    # The live worker's session keeps its row and its newer memories.
    assert [o["title"] for o in invoke_json("observations", "--session", "sess-alpha")] == ["Ran the test suite", "Dark mode toggle"]
    assert "nothing to prune" in invoke("prune", "--yes", code=1).output
    assert "nothing to prune: nothing is older than 1000d" in invoke("prune", "--before", "1000d", code=1).output
    assert "nothing to prune" in invoke("prune", "--days", "1000", code=1).output  # older versions' spelling
    assert "--yes and --dry-run" in one_error_line(invoke("prune", "--yes", "--dry-run", code=2).output)


# --- export and import -------------------------------------------------------------------------------

def snapshot(stored: Stored) -> dict[str, list[dict]]:
    return {table: table_rows(stored.conn, table, key) for table, key in TABLES.items()}


def test_export_forget_everything_import_through_the_cli(stored: Stored, index: Index, tmp_path: Path) -> None:
    before = snapshot(stored)
    path = tmp_path / "memory.jsonl"
    assert invoke("export", "-o", str(path)).output == (
        f"exported 3 sessions, 4 prompts, 5 observations, 3 summaries to {path}\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    streamed = invoke("export")
    assert streamed.stdout.splitlines()[1:] == path.read_text().splitlines()[1:]
    assert "exported 3 sessions" in streamed.stderr

    invoke("forget", "--before", "2100-01-01", "--yes")
    assert count(stored, "sdk_sessions") == 0 and count(stored, "observations") == 0
    assert not search_ids(stored, index, "Fixed login crash")

    assert invoke("import", str(path)).output == "imported 3 sessions, 4 prompts, 5 observations, 3 summaries\n"
    assert snapshot(stored) == before
    login = stored.conn.execute("SELECT id FROM observations WHERE title = 'Fixed login crash'").fetchone()[0]
    assert ("observation", login) in search_ids(stored, index, "refresh token null after logout")
    assert index.drift(stored.conn)["in_sync"]  # the imported rows were indexed

    again = invoke("import", str(path))
    assert again.output == f"nothing new: all 15 rows of {path} are already here\n"
    assert snapshot(stored) == before


def test_export_filters_and_nothing_to_export(stored: Stored, tmp_path: Path) -> None:
    lines = invoke("export", "--session", "sess-beta").stdout.splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["header", "session", "prompt", "observation", "summary"]
    assert len(invoke("export", "--project", "alpha").stdout.splitlines()) == 1 + 2 + 3 + 4 + 2
    assert "no session 'ghost'" in invoke("export", "--session", "ghost", code=1).output
    assert "nothing to export" in invoke("export", "--project", "gamma", "-o", str(tmp_path / "x.jsonl"), code=1).output
    assert not (tmp_path / "x.jsonl").exists()
    assert invoke_json("export", "--project", "beta", "-o", str(tmp_path / "b.jsonl"))["counts"] == {
        "session": 1, "prompt": 1, "observation": 1, "summary": 1}


def test_import_a_bad_line_names_it_and_imports_nothing(stored: Stored, tmp_path: Path) -> None:
    path = tmp_path / "memory.jsonl"
    invoke("export", "--project", "beta", "-o", str(path))
    lines = path.read_text().splitlines()
    invoke("forget", "--project", "beta", "--yes")
    lines.insert(3, '{"kind": "observation", "session_id": "sess-beta", "type": "bugfix"}')
    path.write_text("\n".join(lines) + "\n")
    line = one_error_line(invoke("import", str(path), code=1).output)
    assert line == f"Error: {path}: line 4: observation: 'title' is missing; nothing was imported"
    assert count(stored, "sdk_sessions") == 2 and count(stored, "user_prompts") == 3
    assert "no file" in one_error_line(invoke("import", str(tmp_path / "missing.jsonl"), code=1).output)
    (tmp_path / "binary").write_bytes(b"\xff\xfe\x00")
    assert "not UTF-8 text" in invoke("import", str(tmp_path / "binary"), code=1).output


def test_import_from_stdin_dry_run_and_without_chroma(stored: Stored, tmp_path: Path) -> None:
    text = invoke("export", "--project", "beta").stdout
    invoke("forget", "--project", "beta", "--yes")
    assert invoke("import", "-", "--dry-run", input=text).output == "would import 1 session, 1 prompt, 1 observation, 1 summary\n"
    assert count(stored, "sdk_sessions") == 2
    result = invoke("import", "-", input=text, env=dead_chroma())
    assert result.stdout == "imported 1 session, 1 prompt, 1 observation, 1 summary\n"
    assert "warning: semantic index at http://127.0.0.1" in result.stderr and "searchable by keyword" in result.stderr
    assert count(stored, "sdk_sessions") == 3


def test_import_into_a_new_data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data_dir: Path) -> None:
    populate()
    path = tmp_path / "memory.jsonl"
    invoke("export", "-o", str(path))
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(tmp_path / "elsewhere"))
    result = invoke_json("import", str(path), "--no-index")
    assert result["added"] == {"session": 3, "prompt": 4, "observation": 5, "summary": 3} and result["indexed"] is None
    conn = connect(str(tmp_path / "elsewhere" / "claude-mem.db"))
    assert conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0] == 5


# --- settings ----------------------------------------------------------------------------------------

def test_settings_list_get_set_and_sources(data_dir: Path) -> None:
    rows = {r["key"]: r for r in invoke_json("settings", "list")}
    assert set(rows) == set(settings.SETTINGS) and rows["model"]["source"] == "default"
    assert invoke("settings", "get", "max_attempts").output == "3\n"
    assert invoke("settings", "set", "max_attempts", "5").output == f"max_attempts = 5 (in {data_dir / 'settings.json'})\n"
    assert json.loads((data_dir / "settings.json").read_text()) == {"max_attempts": 5}
    assert invoke_json("settings", "get", "max_attempts") == {"key": "max_attempts", "value": 5, "source": "file"}
    invoke("settings", "set", "skip_tools", '["Bash", "Read"]')
    assert invoke("settings", "get", "skip_tools").output == "Bash,Read\n"
    env = {"CLAUDE_MEM_MODEL": "claude-sonnet-4-5"}
    assert invoke_json("settings", "get", "model", env=env)["source"] == "env"
    result = invoke("settings", "set", "model", "claude-opus-4", env=env)
    assert "CLAUDE_MEM_MODEL is set and wins over the file" in result.stderr
    table = invoke("settings", "list").output.splitlines()
    assert table[0].split() == ["KEY", "VALUE", "SOURCE", "MEANING"]
    assert any(line.split()[:3] == ["max_attempts", "5", "file"] for line in table)


@pytest.mark.parametrize(("args", "expected"), [
    (("get", "modle"), "unknown setting 'modle'; did you mean 'model'?"),
    (("set", "max_attempts", "lots"), "max_attempts: expected an integer, got 'lots'; nothing was changed"),
    (("set", "max_attempts", "0"), "must be at least 1"),
    (("set", "synthesizer", "magic"), "'magic' is not one of auto, model, heuristic"),
    (("set", "installation_name", "caf\udce9"), "the value for installation_name is not UTF-8 text; nothing was changed"),
])
def test_settings_bad_input(data_dir: Path, args: tuple[str, ...], expected: str) -> None:
    assert expected in one_error_line(invoke("settings", *args, code=2).output)
    assert not (data_dir / "settings.json").exists()


def test_settings_set_repairs_a_broken_file(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "settings.json").write_text(json.dumps({"max_attempts": "lots", "model": "m"}))
    assert "bad setting" in invoke("sessions", code=1).output  # the other commands refuse it
    result = invoke("settings", "set", "max_attempts", "4")
    assert "warning: max_attempts: expected an integer" in result.stderr
    assert json.loads((data_dir / "settings.json").read_text()) == {"max_attempts": 4, "model": "m"}
    assert invoke("settings", "get", "max_attempts").stderr == ""


# --- doctor ------------------------------------------------------------------------------------------

def test_doctor_reports_and_fixes_index_drift(stored: Stored) -> None:
    stored.conn.execute("UPDATE observation_queue SET status = 'done'")  # no work waiting: only the index is at fault
    out = invoke("doctor", code=1).output
    assert "FAIL  index drift: semantic index not built yet (12 rows to index)" in out
    assert "ok    integrity: ok" in out and "ok    migrations" in out  # the older checks are still there
    fixed = invoke("doctor", "--fix").output
    assert "fixed index drift: " in fixed and "-> indexed 12 row(s), removed documents of 0 deleted row(s)" in fixed
    checks = {f["check"]: f for f in invoke_json("doctor")}
    assert checks["index drift"]["ok"] and "0 row(s) missing" in checks["index drift"]["detail"]

    stored.conn.execute("DELETE FROM observations WHERE id = ?", (stored.obs["ci"],))
    assert "documents of 1 deleted row(s)" in invoke("doctor", code=1).output
    assert "removed documents of 1 deleted row(s)" in invoke("doctor", "--fix").output
    assert "FAIL" not in invoke("doctor").output


def test_doctor_with_chroma_unavailable_fails_one_check_without_a_traceback(stored: Stored) -> None:
    out = invoke("doctor", "--fix", code=1, env=dead_chroma()).output
    assert "FAIL  index drift: semantic index at http://127.0.0.1" in out and "(could not repair)" in out
    assert "Traceback" not in out and "ok    integrity: ok" in out


def test_settings_cannot_write_or_read_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(blocker / "data"))  # below a file
    assert "cannot read" in one_error_line(invoke("settings", "set", "model", "m", code=1).output)
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", "/proc/claude-mem-test")  # nobody, not even root, creates that
    assert "cannot write" in one_error_line(invoke("settings", "set", "model", "m", code=1).output)
    assert "cannot create the data dir" in one_error_line(invoke("import", "-", input="", code=1).output)
    data = tmp_path / "data"
    data.mkdir()
    (data / "settings.json").write_text("{broken")
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(data))
    result = invoke("settings", "set", "model", "m", code=1)
    line = one_error_line(result.output)
    assert "settings.json is not valid JSON" in line and line.endswith("fix or remove the file, then try again")
    assert (data / "settings.json").read_text() == "{broken"
