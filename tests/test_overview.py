"""The store's read-only summaries for people (claude_mem/store/overview.py), over the CLI tests'
store: sess-alpha (two prompts), sess-beta (another project), sess-old (400 days old)."""

from __future__ import annotations

import os

from claude_mem.store import overview
from claude_mem.store.rows import Prompt, StoredObservation, StoredSummary
from tests.stores import ANCIENT_MS, DAY_MS, NOW_MS, Stored


def test_counts_and_what_the_index_holds(stored: Stored) -> None:
    assert overview.counts(stored.conn) == {"sessions": 3, "prompts": 4, "observations": 5, "summaries": 3, "raw_replies": 1}
    assert overview.indexable_rows(stored.conn) == 5 + 3 + 4


def test_database_bytes_count_the_write_ahead_log(stored: Stored) -> None:
    path = stored.config.db_path
    on_disk = os.path.getsize(path) + (os.path.getsize(path + "-wal") if os.path.exists(path + "-wal") else 0)
    assert overview.database_bytes(path) == on_disk > 0
    assert overview.database_bytes(path + ".missing") == 0


def test_sessions_newest_first_with_their_sizes_and_filters(stored: Stored) -> None:
    rows = overview.list_sessions(stored.conn)
    assert [(r["claude_session_id"], r["observations"], r["summaries"]) for r in rows] == [
        ("sess-beta", 1, 1), ("sess-alpha", 3, 2), ("sess-old", 1, 0)]
    assert [r["claude_session_id"] for r in overview.list_sessions(stored.conn, project="alpha")] == ["sess-alpha", "sess-old"]
    assert [r["claude_session_id"] for r in overview.list_sessions(stored.conn, until_ms=ANCIENT_MS + 1)] == ["sess-old"]
    assert "sess-old" not in {r["claude_session_id"] for r in overview.list_sessions(stored.conn, since_ms=NOW_MS - DAY_MS)}
    assert len(overview.list_sessions(stored.conn, limit=1)) == 1
    assert overview.count_sessions(stored.conn) == 3 and overview.count_sessions(stored.conn, project="beta") == 1
    assert overview.count_sessions(stored.conn, session_id="sess-old", since_ms=NOW_MS - DAY_MS) == 0
    assert overview.count_sessions(stored.conn, project="") == 3  # an empty filter is no filter


def test_a_session_is_found_by_its_id_or_the_start_of_it(stored: Stored) -> None:
    assert overview.find_sessions(stored.conn, "sess-alpha") == ["sess-alpha"]
    assert overview.find_sessions(stored.conn, "sess-b") == ["sess-beta"]
    assert set(overview.find_sessions(stored.conn, "sess-")) == {"sess-alpha", "sess-beta", "sess-old"}
    # LIKE's wildcards are plain characters here.
    assert overview.find_sessions(stored.conn, "sess_") == [] and overview.find_sessions(stored.conn, "%") == []


def test_a_sessions_timeline_in_the_order_things_happened(stored: Stored) -> None:
    assert overview.session_timeline(stored.conn, "ghost") is None
    timeline = overview.session_timeline(stored.conn, "sess-alpha")
    assert timeline is not None and timeline.session.project == "alpha"
    assert [(p.prompt_number, p.prompt_text) for p in timeline.prompts] == [(1, "fix the login crash"), (2, "now add a dark theme")]
    assert [m.observation.id for m in timeline.observations] == [stored.obs["login"], stored.obs["tests"], stored.obs["dark"]]
    assert timeline.observations[0].observation.facts == ["token refresh raced with logout", "a lock now guards the refresh"]
    assert [m.mark for m in timeline.observations] == ["", "", ""]
    assert [s.id for s in timeline.summaries] == [stored.sums["alpha1"], stored.sums["alpha2"]]


def test_one_row_by_kind_and_id_as_its_record(stored: Stored) -> None:
    login = overview.get_row(stored.conn, "observation", stored.obs["login"])
    assert isinstance(login, StoredObservation)
    assert login.title == "Fixed login crash" and login.files_modified == ["src/session.py"]
    beta = overview.get_row(stored.conn, "summary", stored.sums["beta1"])
    assert isinstance(beta, StoredSummary) and beta.learned == "two cores"
    first = stored.conn.execute("SELECT id FROM user_prompts WHERE session_id = 'sess-alpha' AND prompt_number = 1").fetchone()[0]
    prompt = overview.get_row(stored.conn, "prompt", first)
    assert isinstance(prompt, Prompt) and prompt.prompt_text == "fix the login crash"
    assert overview.get_row(stored.conn, "observation", 999_999) is None


def test_skipped_events_and_the_latest_queue_error(stored: Stored) -> None:
    assert overview.skipped_events(stored.conn) == {"count": 0, "last_error": None, "session_id": None}
    assert overview.last_queue_error(stored.conn) is None
    stored.conn.execute("UPDATE observation_queue SET status = 'skipped', last_error = 'HTTP 400: too long',"
                        " updated_at_epoch = ? WHERE session_id = 'sess-alpha'", (NOW_MS,))
    stored.conn.execute("UPDATE observation_queue SET last_error = 'older', updated_at_epoch = ? WHERE session_id = 'sess-old'",
                        (NOW_MS - DAY_MS,))
    assert overview.skipped_events(stored.conn) == {"count": 1, "last_error": "HTTP 400: too long", "session_id": "sess-alpha"}
    latest = overview.last_queue_error(stored.conn)
    assert (latest["session_id"], latest["status"], latest["last_error"]) == ("sess-alpha", "skipped", "HTTP 400: too long")
