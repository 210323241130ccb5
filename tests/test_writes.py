"""Telling, correcting and forgetting memory from the command line: `remember`, `edit`,
`edit --undo`, `forget`, and what they do to search, the digest, `ask`, marks, export and import.
On a fresh data folder, keywords only (tests/test_writes_index.py has search by meaning, through a
real memory service); the core functions are claude_mem/writes/."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from claude_mem import settings
from claude_mem.cli.app import cli
from claude_mem.kinds import Source
from claude_mem.push.digest import build_digest
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, insert_observation
from claude_mem.store.reads import STATED_SOURCES
from claude_mem.store.records import ensure_session
from claude_mem.store.to_index import STALE_ROWS
from tests.cli_helpers import invoke, invoke_json, one_error_line

ROOT = Path(__file__).resolve().parent
OLD_EXPORT = ROOT / "fixtures" / "export-before-0017.jsonl"  # written by the code before migration 0017 (f509865)
PROJECT = "kiln"


@pytest.fixture(autouse=True)
def keywords_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A project folder to work in (outside git its name is the project), no model, no index."""
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INDEX", "0")
    monkeypatch.setenv("CLAUDE_MEM_SYNTHESIZER", "heuristic")
    folder = tmp_path / PROJECT
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


def db() -> sqlite3.Connection:
    config = settings.load()
    config.ensure_dirs()
    return connect(config.db_path)


def remember(*args: str, code: int = 0) -> dict[str, Any]:
    return invoke_json("remember", *args) if code == 0 else {"output": invoke("remember", *args, code=code).output}


def fts(query: str) -> list[str]:
    """What `search --mode fts` finds (it exits 1 when nothing matches)."""
    result = CliRunner().invoke(cli, ["search", query, "--mode", "keyword", "--json"], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return [f"{h['kind']}:{h['id']}" for h in json.loads(result.stdout)["hits"]]


def digest() -> str:
    conn = db()
    try:
        return build_digest(conn, PROJECT)
    finally:
        conn.close()


def count(table: str) -> int:
    if not os.path.exists(settings.load().db_path):
        return 0
    conn = db()
    try:
        return int(conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


def test_the_stated_sources_are_the_ones_kinds_calls_stated() -> None:
    assert set(STATED_SOURCES) == {source.value for source in Source if source.stated}


def test_remember_prints_a_ref_found_by_keywords_at_once_and_first_in_the_next_digest() -> None:
    conn = db()
    with transaction(conn):  # what the observer recorded before: the digest lists it after the stated memory
        ensure_session(conn, "s1", project=PROJECT, cwd=None, transcript_path=None)
        insert_observation(conn, "s1", PROJECT, Observation("change", "Moved the CI config to .ci/"), prompt_number=1)
    conn.close()
    said = invoke("remember", "we", "deploy", "with", "`just release`", "(the", "quasar-8812", "recipe)").output
    [ref] = [word for word in said.split() if word.startswith("obs:")]
    assert said.startswith(f"remembered as {ref} in {PROJECT}")
    assert fts("quasar-8812") == [f"observation:{ref[4:]}"]
    shown = invoke_json("show", ref)
    assert (shown["source"], shown["provenance"], shown["session_id"]) == ("person", ["person"], f"stated:{PROJECT}")
    assert shown["narrative"] == "we deploy with `just release` (the quasar-8812 recipe)" and shown["revisions"] == []
    text = digest()
    assert text.index(f"- {ref} ") < text.index("## Recent observations") < text.index("Moved the CI config")
    assert "Remembered on request" in text and "quasar-8812" in text
    # The stated session is nobody's Claude Code session: no prompts, no worker, host "stated".
    [session] = [s for s in invoke_json("sessions") if s["claude_session_id"] == f"stated:{PROJECT}"]
    assert (session["host"], session["status"], session["prompt_counter"]) == ("stated", "ended", 0)
    assert invoke_json("queue") == []


def test_the_same_text_twice_is_one_memory_and_the_marking_rules_run_on_a_new_one() -> None:
    first = remember("Uploads use 4 worker threads", "--type", "decision")
    assert remember("Uploads use 4 worker threads", "--type", "decision") == {**first, "created": False}
    again = remember("uploads use 4 worker threads.", "--type", "decision")  # the same claim, worded a hair apart
    assert again["created"] and again["marked"] == {"repeat": 1}
    [mark] = invoke_json("marks")
    assert (mark["old"], mark["new"], mark["author"], mark["rule"]) == (first["ref"], again["ref"], "rule", "repeat")


def test_supersedes_marks_the_old_memory_by_a_person_and_the_digest_names_the_new_one() -> None:
    old = remember("Staging listens on port 8443")
    new = remember("Staging listens on port 9443 since the proxy moved", "--supersedes", old["ref"])
    assert new["supersedes"] == old["ref"] and new["marked"] == {}
    [mark] = invoke_json("marks")
    assert (mark["old"], mark["new"], mark["relation"], mark["author"]) == (old["ref"], new["ref"], "supersedes", "person")
    assert old["ref"] in invoke("marks").output
    text = digest()
    assert f"- {new['ref']} " in text and f"- {old['ref']} " not in text and "8443" not in text
    assert "superseded by" in invoke_json("show", old["ref"])["mark"]


def test_edit_changes_what_show_and_search_give_and_undo_brings_the_old_text_back() -> None:
    ref = remember("Release builds are signed with the zanzibar key")["ref"]
    done = invoke_json("edit", ref, "--title", "Release builds are signed", "--text", "Release builds are signed with the okapi key")
    assert done == {"ref": ref, "changed": ["title", "narrative"], "undone": False}
    shown = invoke_json("show", ref)
    assert (shown["title"], shown["narrative"]) == ("Release builds are signed", "Release builds are signed with the okapi key")
    assert fts("zanzibar") == [] and fts("okapi") == [f"observation:{ref[4:]}"]
    [kept] = shown["revisions"]
    assert (kept["author"], kept["changed"], kept["title"]) == ("person", ["title", "narrative"],
                                                                 "Release builds are signed with the zanzibar key")
    table = invoke("show", ref).output
    assert "earlier versions" in table and "edited by person: title, text" in table and "zanzibar" in table
    invoke("edit", ref, "--fact", "the key lives in the vault", "--type", "decision")
    assert [r["changed"] for r in invoke_json("show", ref)["revisions"]] == [["type", "facts"], ["title", "narrative"]]

    assert "the version before the last edit is back" in invoke("edit", ref, "--undo").output
    assert invoke_json("show", ref)["facts"] == []
    invoke("edit", ref, "--undo")
    shown = invoke_json("show", ref)
    assert shown["narrative"] == "Release builds are signed with the zanzibar key" and shown["revisions"] == []
    assert fts("zanzibar") == [f"observation:{ref[4:]}"] and fts("okapi") == []
    assert "no earlier version" in one_error_line(invoke("edit", ref, "--undo", code=2).output)


def test_a_title_made_from_the_text_follows_it_and_the_observers_own_can_be_edited() -> None:
    ref = remember("Cache keys carry the schema version")["ref"]
    invoke("edit", ref, "--text", "Cache keys carry the schema version and the locale")
    assert invoke_json("show", ref)["title"] == "Cache keys carry the schema version and the locale"
    conn = db()
    with transaction(conn):
        ensure_session(conn, "s1", project=PROJECT, cwd=None, transcript_path=None)
        mine = insert_observation(conn, "s1", PROJECT, Observation("bugfix", "Fixed the flaky parser test", narrative="a lock",
                                                                   facts=["the cache was shared"]), prompt_number=1)
    conn.close()
    invoke("edit", str(mine), "--text", "A lock around the cache fixed it")
    shown = invoke_json("show", f"obs:{mine}")
    assert (shown["title"], shown["narrative"], shown["source"]) == ("Fixed the flaky parser test", "A lock around the cache fixed it",
                                                                     "model")
    assert invoke_json("edit", str(mine), "--text", "A lock around the cache fixed it")["changed"] == []
    invoke("edit", str(mine), "--fact", "")
    assert invoke_json("show", f"obs:{mine}")["facts"] == []


def test_edit_in_the_editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ref = remember("Backups run at 02:00 UTC")["ref"]
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys\n"
        "path = sys.argv[1]\n"
        "form = open(path).read()\n"
        "assert '# Editing " + ref + "' in form and 'title: Backups run at 02:00 UTC' in form, form\n"
        "form = form.replace('Backups run at 02:00 UTC', 'Backups run at 03:00 UTC').replace('type: discovery', 'type: decision')\n"
        "open(path, 'w').write(form + '- moved off the deploy window\\n')\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    done = invoke_json("edit", ref)
    assert done["changed"] == ["type", "title", "narrative", "facts"]
    shown = invoke_json("show", ref)
    assert (shown["type"], shown["title"], shown["narrative"], shown["facts"]) == (
        "decision", "Backups run at 03:00 UTC", "Backups run at 03:00 UTC", ["moved off the deploy window"])
    # An editor closed without saving changes nothing.
    monkeypatch.setenv("EDITOR", "true")
    assert "nothing changed" in invoke("edit", ref).output and len(invoke_json("show", ref)["revisions"]) == 1


@pytest.mark.parametrize(("args", "code", "words"), [
    ([""], 2, "the text is empty; nothing was stored"),
    (["x" * 100_000], 2, "100,000 characters, over the limit of 4,000 (setting remember_chars)"),
    (["<private>all of it</private>"], 2, "empty once its <private> spans are removed"),
    (["fine", "--supersedes", "obs:999999"], 1, "no observation obs:999999 to supersede"),
    (["fine", "--supersedes", "twelve"], 2, "is not an observation"),
])
def test_bad_input_is_refused_and_nothing_is_stored(args: list[str], code: int, words: str) -> None:
    line = one_error_line(invoke("remember", *args, code=code).output)
    assert words in line
    assert count("observations") == 0 and count("sdk_sessions") == 0


def test_the_limit_is_the_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_REMEMBER_CHARS", "120")
    assert "over the limit of 120" in invoke("remember", "y" * 121, code=2).output
    ref = remember("y" * 120)["ref"]
    assert "over the limit of 120" in invoke("edit", ref, "--text", "z" * 200, code=2).output
    assert invoke_json("show", ref)["revisions"] == []


def test_secrets_and_private_spans_are_never_stored_logged_or_indexed(data_dir: Path) -> None:
    key = "sk-ant-api03-" + "Q" * 40
    ref = remember(f"The staging password is in 1Password <private>it is hunter2-falcon</private>; the API key {key}"
                   " rotates monthly")["ref"]
    shown = invoke_json("show", ref)
    assert "[REDACTED]" in shown["narrative"] and "rotates monthly" in shown["narrative"]
    invoke("edit", ref, "--text", f"password=tr0ub4dor-marmot and <private>hunter2-falcon</private> again, {key}")
    invoke("edit", ref, "--fact", f"token: {key}")
    raw = b"".join(p.read_bytes() for p in data_dir.rglob("*") if p.is_file())
    for secret in (b"hunter2-falcon", key.encode(), b"tr0ub4dor-marmot"):
        assert secret not in raw
    assert fts("falcon") == [] and fts("marmot") == []


def test_an_unknown_ref_is_an_error() -> None:
    remember("something to have a database")
    line = one_error_line(invoke("edit", "obs:999999", "--title", "x", code=1).output)
    assert line == "Error: no observation obs:999999 (list them with `claude-mem observations`)"
    assert "no observation obs:999999" in one_error_line(invoke("edit", "obs:999999", "--undo", code=1).output)
    assert "is not an observation" in invoke("edit", "sum:3", "--title", "x", code=2).output
    assert "--undo restores the previous version" in invoke("edit", "obs:1", "--undo", "--title", "x", code=2).output
    assert "say what to change" not in invoke("edit", "obs:1", "--title", "renamed").output


def test_forget_removes_it_from_search_the_digest_and_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    keep = remember("The nightly job runs on the large runner")["ref"]
    gone = remember("The nightly job needs the quokka-7719 secret mounted")["ref"]
    invoke("edit", gone, "--fact", "mounted at /run/quokka")
    asked = invoke_json("ask", "what does the nightly job need mounted?")
    assert gone in asked["refs"]
    invoke("forget", gone, "--yes")
    assert fts("quokka") == [] and f"- {gone} " not in digest() and f"- {keep} " in digest()
    asked = invoke_json("ask", "what does the nightly job need mounted?")
    assert gone not in asked["refs"] and "quokka" not in json.dumps(asked)
    assert count("observation_revisions") == 0
    invoke("show", gone, code=1)


def test_export_then_import_into_an_empty_folder_keeps_stated_memories_and_their_versions(tmp_path: Path,
                                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    ref = remember("Feature flags live in flags.toml, not in the database (okra-5510)", "--type", "decision")["ref"]
    invoke("edit", ref, "--fact", "flags.toml is reviewed like code")
    old = remember("The changelog is written by hand")["ref"]
    remember("The changelog is generated from commit trailers", "--supersedes", old)
    path = tmp_path / "memory.jsonl"
    counts = invoke_json("export", "-o", str(path))["counts"]
    assert (counts["observation"], counts["revision"], counts["mark"], counts["session"]) == (3, 1, 1, 1)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600

    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(tmp_path / "elsewhere"))
    added = invoke_json("import", str(path))["added"]
    assert (added["observation"], added["revision"], added["mark"]) == (3, 1, 1)
    [hit] = fts("okra")
    shown = invoke_json("show", hit)
    assert (shown["source"], shown["session_id"], shown["facts"]) == ("person", f"stated:{PROJECT}", ["flags.toml is reviewed like code"])
    assert [r["facts"] for r in shown["revisions"]] == [[]]
    assert "okra-5510" in digest() and "written by hand" not in digest()
    assert invoke_json("sessions")[0]["host"] == "stated"
    # Importing it again adds nothing; undo works on what was imported.
    assert sum(invoke_json("import", str(path))["added"].values()) == 0
    invoke("edit", hit, "--undo")
    assert invoke_json("show", hit)["facts"] == []


def test_an_export_of_the_version_before_stated_memories_still_imports() -> None:
    added = invoke_json("import", str(OLD_EXPORT))["added"]
    assert (added["session"], added["observation"], added["summary"], added["mark"]) == (1, 2, 1, 1)
    [hit] = fts("quasar")
    shown = invoke_json("show", hit)
    assert (shown["source"], shown["provenance"], shown["revisions"]) == ("model", [], [])
    # What it brought is memory like any other: it can be edited and remembered beside.
    invoke("edit", hit, "--text", "timeout-minutes: 90 in .ci/nightly.yml")
    assert fts("quasar") == []
    conn = db()
    try:
        project = conn.execute("SELECT project FROM observations WHERE id = ?", (int(hit[12:]),)).fetchone()[0]
    finally:
        conn.close()
    assert remember("Nightly builds run on two runners now", "--project", project)["project"] == project


def test_an_edit_leaves_the_rows_vectors_and_index_state_stale_for_the_service() -> None:
    """Migration 0018's trigger: what makes the memory service embed an edited text again."""
    ref = remember("Logs are kept for 30 days")["ref"]
    row_id = int(ref[4:])
    conn = db()
    with transaction(conn):
        conn.execute("INSERT INTO vector_spaces (id, name) VALUES (1, 'c@me')")
        conn.execute("INSERT INTO index_state (kind, row_id, indexed_at, collection_id, vectors) VALUES ('observation', ?, 1, 'c@me', 1)",
                     (row_id,))
        conn.execute("INSERT INTO vectors (kind, row_id, part, space, vector) VALUES ('observation', ?, 'main', 1, x'00')", (row_id,))
    conn.close()
    invoke("edit", ref, "--text", "Logs are kept for 90 days")
    conn = db()
    try:
        assert tuple(conn.execute("SELECT collection_id, vectors FROM index_state WHERE row_id = ?", (row_id,)).fetchone()) == ("", 0)
        assert conn.execute("SELECT COUNT(*) FROM vectors WHERE row_id = ?", (row_id,)).fetchone()[0] == 0
        assert [r[0] for r in conn.execute(STALE_ROWS, ("observation",))] == [row_id]  # what the service's next pass takes
    finally:
        conn.close()


def test_an_imported_stated_memory_passes_the_same_checks(tmp_path: Path) -> None:
    """An export may come from elsewhere, or be written by hand: its stated memories are checked as
    `remember` checks them (redacted; an empty one refuses the file, naming its line); the
    observer's rows are imported as they are."""
    key = "sk-ant-api03-" + "K" * 40
    header = {"kind": "header", "format": "claude-mem", "version": 1}
    session = {"kind": "session", "claude_session_id": "stated:elsewhere", "project": "elsewhere", "started_at_epoch": 1,
               "host": "stated"}

    def stated(text: str, source: str = "person") -> dict[str, Any]:
        return {"kind": "observation", "session_id": "stated:elsewhere", "type": "discovery", "title": text[:40],
                "narrative": text, "source": source, "created_at_epoch": 2}

    path = tmp_path / "handmade.jsonl"
    path.write_text("\n".join(json.dumps(o) for o in (header, session, stated(f"Deploy key {key} <private>pw</private> rotates"),
                                                      stated(f"model row keeps {key}", source="model"))) + "\n")
    invoke("import", str(path))
    conn = db()
    try:
        rows = dict(conn.execute("SELECT source, narrative FROM observations").fetchall())
    finally:
        conn.close()
    assert rows["person"] == "Deploy key [REDACTED]  rotates" and key in rows["model"]

    path.write_text("\n".join(json.dumps(o) for o in (header, session, stated("<private>nothing else</private>"))) + "\n")
    assert "line 3: the text is empty once its <private> spans are removed" in invoke("import", str(path), code=1).output
