"""Export, import and forget at the store level: real SQLite, real embedded Chroma."""

from __future__ import annotations

import io
import json
import socket
import sqlite3
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.index.semantic_index import Index
from claude_mem.store import forget as forget_mod
from claude_mem.store.memories import Observation, insert_observation
from claude_mem.store.records import record_prompt
from claude_mem.store.transfer import SPECS, TABLES, BadImportLine, import_lines, write_export
from tests.cli_helpers import fts_ids, table_rows
from tests.stores import ANCIENT_MS, DAY_MS, Stored

KEYS = {"sdk_sessions": "claude_session_id", "user_prompts": "session_id,prompt_number",
        "observations": "session_id,content_hash", "session_summaries": "session_id,prompt_number"}


def snapshot(conn: sqlite3.Connection) -> dict[str, list[dict]]:
    return {table: table_rows(conn, table, key) for table, key in KEYS.items()}


def export_text(conn: sqlite3.Connection, **filters: str) -> str:
    out = io.StringIO()
    write_export(conn, out, **filters)
    return out.getvalue()


def forget_everything(conn: sqlite3.Connection, index: Index | None = None) -> forget_mod.Outcome:
    return forget_mod.forget(conn, forget_mod.plan(conn, before_ms=None, project=None), index)


@pytest.fixture
def empty(data_dir: Path) -> sqlite3.Connection:
    from claude_mem.store.db import connect

    config = settings.load()
    config.ensure_dirs()
    return connect(config.db_path)


def test_the_export_carries_every_column_but_the_surrogate_id(stored: Stored) -> None:
    # A migration adding a column fails here until export and import carry it.
    for kind, table in TABLES.items():
        columns = {r["name"] for r in stored.conn.execute(f"PRAGMA table_info({table})")} - {"id"}
        assert {f.name for f in SPECS[kind]} == columns, kind


def test_export_forget_everything_import_gives_back_the_same_rows(stored: Stored) -> None:
    conn = stored.conn
    before = snapshot(conn)
    text = export_text(conn)
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0]["kind"] == "header" and lines[0]["format"] == "claude-mem" and lines[0]["version"] == 1
    assert [line["kind"] for line in lines[1:]].count("observation") == 5
    assert all("id" not in line for line in lines)

    outcome = forget_everything(conn)
    assert outcome.counts["sessions"] == 3 and outcome.counts["observations"] == 5
    assert all(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] == 0 for t in KEYS)
    assert fts_ids(conn, "observations_fts", "login") == []

    result = import_lines(conn, text.splitlines())
    assert result.added == {"session": 3, "prompt": 4, "observation": 5, "summary": 3}
    assert snapshot(conn) == before
    # Imported rows are searchable by keyword straight away (the FTS triggers saw the inserts).
    login = conn.execute("SELECT id FROM observations WHERE title = 'Fixed login crash'").fetchone()[0]
    assert fts_ids(conn, "observations_fts", "refresh token") == [login]

    again = import_lines(conn, text.splitlines())
    assert again.total_added == 0 and again.present == result.added
    assert snapshot(conn) == before


def test_export_filters_by_project_and_session(stored: Stored) -> None:
    beta = [json.loads(line) for line in export_text(stored.conn, project="beta").splitlines()[1:]]
    assert {line["kind"] for line in beta} == {"session", "prompt", "observation", "summary"}
    assert {line.get("session_id", line.get("claude_session_id")) for line in beta} == {"sess-beta"}
    old = [json.loads(line) for line in export_text(stored.conn, session_id="sess-old").splitlines()[1:]]
    assert [line["kind"] for line in old] == ["session", "prompt", "observation"]


BAD_LINES = [
    ("{not json", "not valid JSON"),
    ('["a list"]', "expected a JSON object"),
    ('{"kind": "memory"}', "'kind' is 'memory'"),
    ('{"kind": "observation", "session_id": "sess-x1", "type": "bugfix", "created_at_epoch": 1}', "'title' is missing"),
    ('{"kind": "observation", "session_id": "sess-x1", "type": "idea", "title": "t", "created_at_epoch": 1}', "not one of"),
    ('{"kind": "observation", "session_id": "sess-x1", "type": "bugfix", "title": "t", "created_at_epoch": "yesterday"}',
     "must be an integer"),
    ('{"kind": "observation", "session_id": "sess-x1", "type": "bugfix", "title": "t", "facts": "one", "created_at_epoch": 1}',
     "list of strings"),
    ('{"kind": "prompt", "session_id": "nobody", "prompt_number": 1, "prompt_text": "hi", "created_at_epoch": 1}',
     "session 'nobody' is neither in the file nor in the database"),
    ('{"kind": "summary", "session_id": "sess-x1", "created_at_epoch": 1, "mood": "great"}', "unknown field 'mood'"),
    ('{"kind": "session", "claude_session_id": "", "project": "p", "started_at_epoch": 1}', "must not be empty"),
]


@pytest.mark.parametrize(("bad", "message"), BAD_LINES)
def test_a_bad_line_is_named_and_nothing_is_imported(empty: sqlite3.Connection, bad: str, message: str) -> None:
    conn = empty
    good = [
        '{"kind": "header", "format": "claude-mem", "version": 1}',
        '{"kind": "session", "claude_session_id": "sess-x1", "project": "p", "started_at_epoch": 1000}',
        '{"kind": "prompt", "session_id": "sess-x1", "prompt_number": 1, "prompt_text": "hello", "created_at_epoch": 1000}',
        '{"kind": "observation", "session_id": "sess-x1", "type": "bugfix", "title": "fine", "created_at_epoch": 1000}',
    ]
    with pytest.raises(BadImportLine) as caught:
        import_lines(conn, [*good, bad, good[3]])
    assert caught.value.line == 5 and str(caught.value).startswith("line 5: ") and message in str(caught.value)
    assert conn.execute("SELECT COUNT(*) FROM sdk_sessions").fetchone()[0] == 0
    assert not conn.in_transaction
    assert import_lines(conn, good).added == {"session": 1, "prompt": 1, "observation": 1, "summary": 0}


@pytest.mark.parametrize(("first", "message"), [
    ('{"kind": "session", "claude_session_id": "s", "project": "p", "started_at_epoch": 1}', "first line must be the header"),
    ('{"kind": "header", "format": "claude-mem", "version": 2}', "newer than this claude-mem reads"),
    ('{"kind": "header", "format": "other-tool", "version": 1}', "first line must be the header"),
])
def test_the_header_is_checked(stored: Stored, first: str, message: str) -> None:
    with pytest.raises(BadImportLine, match=message) as caught:
        import_lines(stored.conn, [first])
    assert caught.value.line == 1
    with pytest.raises(BadImportLine, match="line 1: the file is empty"):
        import_lines(stored.conn, ["", "  "])


def test_hand_written_lines_get_defaults_a_hash_and_a_prompt_counter(empty: sqlite3.Connection) -> None:
    conn = empty
    lines = [
        '{"kind": "header", "format": "claude-mem", "version": 1}',
        '{"kind": "session", "claude_session_id": "hand", "project": "notes", "started_at_epoch": 1700000000000}',
        '{"kind": "prompt", "session_id": "hand", "prompt_number": 4, "prompt_text": "earlier", "created_at_epoch": 1700000000000}',
        '{"kind": "observation", "session_id": "hand", "type": "decision", "title": "Use SQLite", "created_at_epoch": 1700000000000}',
    ]
    assert import_lines(conn, lines).total_added == 3
    row = conn.execute("SELECT * FROM observations").fetchone()
    assert row["project"] == "notes" and row["source"] == "import" and row["created_at"] == "2023-11-14T22:13:20.000Z"
    assert row["content_hash"] == Observation(type="decision", title="Use SQLite").content_hash()
    session = conn.execute("SELECT * FROM sdk_sessions").fetchone()
    assert session["status"] == "ended" and session["updated_at_epoch"] == 1700000000000
    # The next captured prompt must not collide with the imported prompt #4.
    assert session["prompt_counter"] == 4
    assert record_prompt(conn, "hand", "a new prompt", None) == 5
    # The same observation written differently (case, spacing) is the same memory.
    assert import_lines(conn, [lines[0], lines[3].replace("Use SQLite", "use  sqlite")]).total_added == 0


def test_dry_run_counts_and_writes_nothing(stored: Stored) -> None:
    text = export_text(stored.conn)
    forget_everything(stored.conn)
    result = import_lines(stored.conn, text.splitlines(), dry_run=True)
    assert result.added["observation"] == 5
    assert stored.conn.execute("SELECT COUNT(*) FROM observations").fetchone()[0] == 0


# --- forget ---------------------------------------------------------------------------------------

def test_plan_by_reference_and_unknown_ids(stored: Stored) -> None:
    planned = forget_mod.plan(stored.conn, refs=[("observation", stored.obs["login"]), ("summary", stored.sums["beta1"])])
    assert planned.observations == [stored.obs["login"]] and planned.summaries == [stored.sums["beta1"]]
    assert planned.sessions == [] and planned.queue == []
    with pytest.raises(forget_mod.ForgetError, match="no observation 999, summary 998"):
        forget_mod.plan(stored.conn, refs=[("observation", 999), ("summary", 998), ("observation", stored.obs["login"])])
    with pytest.raises(forget_mod.ForgetError, match="no session 'nope'"):
        forget_mod.plan(stored.conn, session_id="nope")


def test_plan_scopes(stored: Stored) -> None:
    conn = stored.conn
    alpha = forget_mod.plan(conn, project="alpha")
    assert sorted(alpha.sessions) == ["sess-alpha", "sess-old"]
    assert sorted(alpha.observations) == sorted(stored.obs[k] for k in ("login", "tests", "dark", "billing"))
    assert len(alpha.queue) == 2 and len(alpha.raw_replies) == 1

    cutoff = ANCIENT_MS + DAY_MS
    old = forget_mod.plan(conn, before_ms=cutoff)
    assert old.sessions == ["sess-old"] and old.observations == [stored.obs["billing"]]
    assert len(old.queue) == 1 and len(old.raw_replies) == 1
    assert forget_mod.plan(conn, before_ms=cutoff, keep_sessions=["sess-old"]).sessions == []
    assert forget_mod.plan(conn, before_ms=cutoff, project="beta").is_empty()

    # In a session still going on, only its older rows go, and a row a worker holds stays.
    conn.execute("UPDATE observations SET created_at_epoch = ? WHERE id = ?", (ANCIENT_MS, stored.obs["login"]))
    conn.execute("UPDATE observation_queue SET created_at_epoch = ?, status = 'processing' WHERE session_id = 'sess-alpha'",
                 (ANCIENT_MS,))
    partial = forget_mod.plan(conn, before_ms=cutoff, session_id="sess-alpha")
    assert partial.sessions == [] and partial.observations == [stored.obs["login"]] and partial.queue == []


def test_forget_a_session_removes_its_rows_and_their_fts_entries(stored: Stored) -> None:
    conn = stored.conn
    assert fts_ids(conn, "observations_fts", "refresh") == [stored.obs["login"]]
    assert fts_ids(conn, "user_prompts_fts", "login")
    outcome = forget_mod.forget(conn, forget_mod.plan(conn, session_id="sess-alpha"))
    assert outcome.counts == {"sessions": 1, "prompts": 2, "observations": 3, "summaries": 2, "queued_events": 1,
                              "raw_replies": 0}
    for table in ("observations_fts", "user_prompts_fts", "session_summaries_fts"):
        assert fts_ids(conn, table, "login") == [], table
    assert fts_ids(conn, "observations_fts", "cores") == [stored.obs["ci"]]  # others untouched
    # An FTS index whose entries no longer match their rows fails this check.
    for table in forget_mod.FTS_TABLES:
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")
    assert forget_mod.compact(conn) is None
    assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"


def hits(index: Index, text: str) -> list[tuple[str, int]]:
    return [(kind, i) for kind, i, _ in index.query(text, 10)]


def test_forget_removes_documents_from_chroma_too(stored: Stored, index: Index) -> None:
    login = stored.obs["login"]
    assert ("observation", login) in hits(index, "refresh token null after logout")
    outcome = forget_mod.forget(stored.conn, forget_mod.plan(stored.conn, refs=[("observation", login)]), index)
    assert outcome.index_error is None
    assert ("observation", login) not in hits(index, "refresh token null after logout")
    assert documents(index, "observation", login) == []
    assert index.drift(stored.conn)["in_sync"]
    assert stored.conn.execute("SELECT COUNT(*) FROM index_state WHERE kind = 'observation' AND row_id = ?",
                               (login,)).fetchone()[0] == 0


def dead_index() -> Index:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return Index(url=f"http://127.0.0.1:{port}")


def documents(index: Index, kind: str, row_id: int) -> list[str]:
    from claude_mem.index.documents import kind_where

    with index._use("inspect") as store:
        return sorted(store.collection.get(where=kind_where(kind, [row_id]), include=["documents"])["documents"])


def test_forget_with_chroma_down_still_forgets_and_index_missing_cleans_up_later(stored: Stored, index: Index) -> None:
    conn = stored.conn
    ci, billing = stored.obs["ci"], stored.obs["billing"]
    assert billing == max(stored.obs.values())  # the newest: its id must not go to the next row
    planned = forget_mod.plan(conn, refs=[("observation", ci), ("observation", billing)])
    outcome = forget_mod.forget(conn, planned, dead_index())
    assert outcome.index_error and "unavailable" in outcome.index_error
    assert conn.execute("SELECT COUNT(*) FROM observations WHERE id IN (?, ?)", (ci, billing)).fetchone()[0] == 0
    assert fts_ids(conn, "observations_fts", "cores") == []
    assert index.drift(conn)["observation"]["stale"] == 2  # still in Chroma, for now
    assert documents(index, "observation", billing) == ["Chose PostgreSQL for billing\nTransactions across ledgers need it"]

    new = insert_observation(conn, "sess-beta", "beta", Observation(type="change", title="Renamed the config loader"),
                             prompt_number=1)
    assert new > billing  # ids are never reused (migration 0004)
    counts = index.index_missing(conn)
    assert counts["removed"] == 2 and counts["observation"] == 1  # both orphans dropped, the new row indexed
    assert index.drift(conn)["in_sync"]
    assert documents(index, "observation", billing) == [] and documents(index, "observation", ci) == []
    assert documents(index, "observation", new) == ["Renamed the config loader"]
    assert ("observation", billing) not in hits(index, "Chose PostgreSQL for billing")
