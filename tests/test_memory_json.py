"""What the CLI and the viewer give of stored memories as JSON, pinned to the rows as stored:
every column in the table's order, the JSON list columns decoded (text that is not JSON as []),
then an observation's marks: `observations --json`, `summaries --json`, `show --json` of a
session and of one row, and the viewer's observation and session pages. The reads return records
(store/rows.py, issue 48); the output is held here to what the rows as dicts gave, byte for byte."""

from __future__ import annotations

import json
from typing import Any

from starlette.testclient import TestClient

from claude_mem.store import injections
from claude_mem.viewer import data
from claude_mem.viewer.app import create_app
from tests.cli_helpers import invoke
from tests.stored_rows import EDITED_MS, as_stored, odd_rows, printed, with_marks
from tests.stores import Stored


def test_observations_json_is_every_column_as_stored_then_the_marks(stored: Stored) -> None:
    odd_rows(stored)
    conn = stored.conn
    assert conn is not None
    rows = with_marks(conn, as_stored(conn, "observations"))
    assert invoke("observations", "--json").output == printed(rows)
    assert invoke("observations", "--json", "--limit", "2").output == printed(rows[-2:])
    alpha = [r for r in rows if r["project"] == "alpha"]
    assert invoke("observations", "--json", "--project", "alpha").output == printed(alpha)
    ci = next(r for r in rows if r["id"] == stored.obs["ci"])
    assert ci["concepts"] == [] and ci["conflicts_with"] == [f"obs:{stored.obs['billing']}"]


def test_summaries_json_is_every_column_as_stored(stored: Stored) -> None:
    odd_rows(stored)
    conn = stored.conn
    assert conn is not None
    rows = as_stored(conn, "session_summaries")
    assert invoke("summaries", "--json").output == printed(rows)
    assert invoke("summaries", "--json", "--limit", "1").output == printed(rows[-1:])


def test_the_viewer_shows_an_observation_whole_with_its_marks_and_withheld_text(stored: Stored) -> None:
    odd_rows(stored)
    reader = data.open_reader(stored.config.db_path)
    try:
        for name in ("login", "tests", "ci"):
            [row] = with_marks(reader, [r for r in as_stored(reader, "observations") if r["id"] == stored.obs[name]])
            written = json.loads(row["withheld_text"]) if row["withheld_text"] else {}
            detail = data.observation_detail(reader, stored.obs[name])
            assert detail is not None
            assert json.dumps(detail["observation"]) == json.dumps({**row, "withheld_original": written})
        items = {(i["kind"], i["id"]): i for i in data.feed(reader, limit=20)[0]}
    finally:
        reader.close()
    login = items[("observation", stored.obs["login"])]
    assert (login["withheld"], login["provenance"], login["title"]) == (
        "asked the assistant to run a command", ["tool_output"], "Ünïcode — “quoted” 日本")
    assert items[("observation", stored.obs["tests"])]["superseded_by"] == [f"obs:{stored.obs['dark']}"]
    assert items[("summary", stored.sums["alpha1"])]["withheld"] == "note"


def session_rows(stored: Stored, session_id: str) -> dict[str, Any]:
    """A session as stored, with what it holds in the order `show` lists it, and what memory gave
    it (one injection recorded here)."""
    conn = stored.conn
    assert conn is not None
    injections.record(conn, session_id, "alpha", "digest", [f"obs:{stored.obs['login']}"], 400)
    sid = (session_id,)
    [session] = as_stored(conn, "sdk_sessions", "claude_session_id = ?", sid, order="id")
    return {"session": session, "prompts": as_stored(conn, "user_prompts", "session_id = ?", sid, "prompt_number, id"),
            "observations": with_marks(conn, as_stored(conn, "observations", "session_id = ?", sid,
                                                       "prompt_number, created_at_epoch, id")),
            "summaries": as_stored(conn, "session_summaries", "session_id = ?", sid, "prompt_number, id"),
            "injections": [{**r, "refs": json.loads(r["refs"])} for r in as_stored(conn, "injections", "session_id = ?", sid, "id")]}


def test_show_json_of_a_session_is_its_rows_as_stored_in_turn_order(stored: Stored) -> None:
    odd_rows(stored)
    rows = session_rows(stored, "sess-alpha")
    assert [o["title"] for o in rows["observations"]] == ["Ünïcode — “quoted” 日本", "Ran the test suite", "Dark mode toggle, kept"]
    assert rows["observations"][1]["superseded_by"] == [f"obs:{stored.obs['dark']}"]
    assert rows["injections"][0]["refs"] == [f"obs:{stored.obs['login']}"]
    expected = {"session": rows["session"], "prompts": rows["prompts"], "observations": rows["observations"],
                "summaries": rows["summaries"], "outage": None, "injections": rows["injections"]}
    assert invoke("show", "sess-alpha", "--json").output == printed(expected)
    assert invoke("show", "sess-al", "--json").output == printed(expected)


def test_show_json_of_one_row_is_its_columns_as_stored(stored: Stored) -> None:
    odd_rows(stored)
    conn = stored.conn
    assert conn is not None
    ids = {"observation": stored.obs["login"], "summary": stored.sums["alpha1"],
           "prompt": conn.execute("SELECT id FROM user_prompts WHERE session_id = 'sess-alpha' AND prompt_number = 1").fetchone()[0]}
    [login] = with_marks(conn, as_stored(conn, "observations", "id = ?", (ids["observation"],)))
    [summary] = as_stored(conn, "session_summaries", "id = ?", (ids["summary"],))
    [prompt] = as_stored(conn, "user_prompts", "id = ?", (ids["prompt"],))
    assert invoke("show", f"obs:{ids['observation']}", "--json").output == printed({"kind": "observation", **login, "revisions": []})
    assert invoke("show", str(ids["observation"]), "--json").output == printed({"kind": "observation", **login, "revisions": []})
    assert invoke("show", f"sum:{ids['summary']}", "--json").output == printed({"kind": "summary", **summary})
    assert invoke("show", f"prompt:{ids['prompt']}", "--json").output == printed({"kind": "prompt", **prompt})
    # An agent's shell is shown that a memory is withheld, never what the guard withheld (issue 47).
    agent = {"CLAUDECODE": "1"}
    assert login["withheld_text"] and summary["withheld_text"]
    assert invoke("show", f"obs:{ids['observation']}", "--json", env=agent).output == printed(
        {"kind": "observation", **login, "withheld_text": "", "revisions": []})
    assert invoke("show", f"sum:{ids['summary']}", "--json", env=agent).output == printed(
        {"kind": "summary", **summary, "withheld_text": ""})

    [dark] = with_marks(conn, as_stored(conn, "observations", "id = ?", (stored.obs["dark"],)))
    [revision] = as_stored(conn, "observation_revisions", "observation_id = ?", (stored.obs["dark"],), "id")
    assert (revision["title"], revision["changed"], revision["created_at_epoch"]) == ("Dark mode toggle", '["title"]', EDITED_MS)
    assert invoke("show", f"obs:{stored.obs['dark']}", "--json").output == printed(
        {"kind": "observation", **dark, "revisions": [{**revision, "changed": ["title"]}]})


def test_the_viewer_shows_a_session_as_its_rows_in_turn_order(stored: Stored) -> None:
    odd_rows(stored)
    rows = session_rows(stored, "sess-alpha")
    rank = {"prompt": 0, "observation": 1, "summary": 2}
    entries = sorted([{"kind": kind, **r} for kind, key in (("prompt", "prompts"), ("observation", "observations"),
                                                            ("summary", "summaries")) for r in rows[key]],
                     key=lambda e: (e["prompt_number"], rank[e["kind"]], e["created_at_epoch"], e["id"]))
    assert [e["kind"] for e in entries] == ["prompt", "observation", "observation", "summary", "prompt",
                                             "observation", "summary"]
    expected = {"session": rows["session"], "entries": entries, "injections": rows["injections"]}
    with TestClient(create_app(stored.config, poll_s=0.02, use_index=False), base_url="http://127.0.0.1:37777") as client:
        response = client.get("/api/session/sess-alpha")
    assert response.status_code == 200
    # As Starlette's JSONResponse writes it: compact, UTF-8, keys in order.
    assert response.content == json.dumps(expected, ensure_ascii=False, separators=(",", ":")).encode()
