"""What the viewer reads, shaped for the page.

Every row is read through the store (the feed's rows after a cursor: store/stream.py). Every
reading connection is opened with `query_only`, so SQLite itself refuses a write from it; what a
person changes (changes.py) opens its own.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from claude_mem.settings import Config
from claude_mem.store import costs, injections, marks, memory_rows, overview, reads, records, revisions, stream, withheld
from claude_mem.store.db import connect, query_only, snapshot
from claude_mem.store.reads import TURN_RANK
from claude_mem.store.rows import MarkedObservation, Prompt, StoredObservation, StoredSummary, as_dict
from claude_mem.text.shorten import cut

FEED_TEXT_CHARS = 400
STREAM_BATCH = 200  # rows per kind per poll; a bigger backlog goes out over the next polls
class DatabaseMissing(RuntimeError):
    """The database file went away while the viewer was running."""


@dataclass(frozen=True)
class Cursor:
    """The newest row id of each kind a client has seen; serialised as `obs.sum.prompt`."""

    observation: int = 0
    summary: int = 0
    prompt: int = 0

    def __str__(self) -> str:
        return f"{self.observation}.{self.summary}.{self.prompt}"

    @classmethod
    def parse(cls, text: str) -> Cursor:
        parts = text.strip().split(".")
        if len(parts) != 3 or not all(p.isdigit() and len(p) <= 18 for p in parts):
            raise ValueError(f"a cursor looks like 12.3.7 (the last observation, summary and prompt ids seen), got {text[:40]!r}")
        return cls(*(int(p) for p in parts))


def open_reader(db_path: str) -> sqlite3.Connection:
    if not os.path.exists(db_path):
        raise DatabaseMissing(f"no database at {db_path}")
    return query_only(connect(db_path, migrate=False))


@contextmanager
def reader(db_path: str) -> Iterator[sqlite3.Connection]:
    conn = open_reader(db_path)
    try:
        yield conn
    finally:
        conn.close()


def _item(kind: str, id_: int, session_id: str, project: str | None, prompt_number: int | None, created_at_epoch: int,
          title: str, text: str, type_: str | None = None, withheld_note: str = "",
          provenance: list[str] | None = None) -> dict[str, Any]:
    return {"kind": kind, "id": id_, "session_id": session_id, "project": project or "", "type": type_,
            "title": cut(title, 200), "text": cut(text, FEED_TEXT_CHARS), "prompt_number": prompt_number,
            "created_at_epoch": created_at_epoch, "withheld": withheld_note, "provenance": provenance or []}


def observation_item(marked: MarkedObservation) -> dict[str, Any]:
    """An observation for the list; its `mark` says what superseded it."""
    o = marked.observation
    return {**_item("observation", o.id, o.session_id, o.project, o.prompt_number, o.created_at_epoch, o.title,
                    o.subtitle or o.narrative or "", o.type, o.guard_note if o.withheld else "", reads.json_list(o.provenance)),
            "mark": marked.mark, "superseded_by": marked.superseded_by}


def summary_item(s: StoredSummary) -> dict[str, Any]:
    title = s.request or next((text for _, text in s.written() if text.strip()), "")
    return _item("summary", s.id, s.session_id, s.project, s.prompt_number, s.created_at_epoch, title,
                 s.completed or s.learned or "", withheld_note=s.guard_note if s.withheld else "")


def prompt_item(row: dict[str, Any]) -> dict[str, Any]:
    return _item("prompt", row["id"], row["session_id"], row.get("project"), row.get("prompt_number"), row["created_at_epoch"],
                 row["prompt_text"], "")


def sort_items(items: list[dict[str, Any]], newest_first: bool = False) -> list[dict[str, Any]]:
    return sorted(items, key=lambda i: (i["created_at_epoch"], TURN_RANK[i["kind"]], i["id"]), reverse=newest_first)


# -- the feed -----------------------------------------------------------------------------------

def current_cursor(conn: sqlite3.Connection) -> Cursor:
    return Cursor(*stream.newest_ids(conn))


def feed(conn: sqlite3.Connection, *, project: str | None = None, limit: int = 50) -> tuple[list[dict[str, Any]], Cursor]:
    """The newest prompts, observations and summaries (newest first) and the cursor to stream from."""
    with snapshot(conn):
        cursor = current_cursor(conn)
        rows = memory_rows.with_marks(conn, memory_rows.list_observations(conn, project=project, limit=limit, newest_first=True))
        items = [observation_item(r) for r in rows]
        items += [summary_item(r) for r in memory_rows.list_summaries(conn, project=project, limit=limit, newest_first=True)]
        items += [prompt_item(r) for r in stream.prompts_after(conn, project=project, limit=limit, newest_first=True)]
    return sort_items(items, newest_first=True)[:limit], cursor


def new_since(conn: sqlite3.Connection, cursor: Cursor, project: str | None = None) -> tuple[list[dict[str, Any]], Cursor, bool]:
    """Rows stored after `cursor` (oldest first), the cursor past them, and whether more are waiting.

    The cursor moves past rows of other projects too, so they are not read again on every poll.
    Ids only grow as rows commit (one writer at a time) and are never reused, even after a
    forget (migration 0004), which is what makes a cursor enough.
    """
    obs = memory_rows.with_marks(conn, stream.observations_after(conn, cursor.observation, STREAM_BATCH))
    sums = stream.summaries_after(conn, cursor.summary, STREAM_BATCH)
    prompts = stream.prompts_after(conn, after=cursor.prompt, limit=STREAM_BATCH)
    new_cursor = Cursor(obs[-1].observation.id if obs else cursor.observation, sums[-1].id if sums else cursor.summary,
                        prompts[-1]["id"] if prompts else cursor.prompt)
    items = [observation_item(r) for r in obs] + [summary_item(r) for r in sums] + [prompt_item(r) for r in prompts]
    if project:
        items = [i for i in items if i["project"] == project]
    more = STREAM_BATCH in (len(obs), len(sums), len(prompts))
    return sort_items(items), new_cursor, more


# -- details ------------------------------------------------------------------------------------

def observation_detail(conn: sqlite3.Connection, observation_id: int) -> dict[str, Any] | None:
    """One observation with its session, the prompt that led to it, its marks and its earlier versions."""
    rows = memory_rows.with_marks(conn, memory_rows.observations_by_id(conn, [observation_id]))
    if not rows:
        return None
    obs = rows[0].observation
    session = records.get_session(conn, obs.session_id)
    prompt = next((p for p in records.list_prompts(conn, obs.session_id) if p.prompt_number == obs.prompt_number), None)
    listed = [{k: m[k] for k in ("old_id", "new_id", "relation", "author", "rule", "reason", "created_at_epoch", "old_title",
                                 "new_title", "old_epoch", "new_epoch")} for m in marks.list_marks(conn, ids=[observation_id])]
    # The page is a person's view: the text the write guard withheld is shown, marked (issue 47).
    return {"observation": {**rows[0].as_dict(), "withheld_original": withheld.withheld_text(obs.withheld_text)},
            "session": as_dict(session) if session else None, "prompt": as_dict(prompt) if prompt else None,
            "marks": listed, "revisions": revisions.of(conn, observation_id)}


def session_timeline(conn: sqlite3.Connection, session_id: str) -> dict[str, Any] | None:
    """A session and everything stored for it, turn by turn: prompt, observations, summary."""
    with snapshot(conn):
        found = overview.session_timeline(conn, session_id)
        given = injections.for_session(conn, session_id)
    if found is None:
        return None
    rows: list[tuple[str, Prompt | StoredObservation | StoredSummary, dict[str, Any]]] = [
        *(("prompt", p, as_dict(p)) for p in found.prompts),
        *(("observation", m.observation, m.as_dict()) for m in found.observations),
        *(("summary", m, as_dict(m)) for m in found.summaries)]
    rows.sort(key=lambda r: (r[1].prompt_number, TURN_RANK[r[0]], r[1].created_at_epoch, r[1].id))
    entries = [{"kind": kind, **fields} for kind, _, fields in rows]
    return {"session": as_dict(found.session), "entries": entries, "injections": given}


def costs_of(conn: sqlite3.Connection, project: str | None = None, limit: int = 50) -> dict[str, Any]:
    """Tokens memory put into context and the observer spent (store/costs.py), newest sessions first."""
    with snapshot(conn):
        report = costs.usage(conn, project=project)
    return {**report, "sessions": report["sessions"][:limit]}


# -- health -------------------------------------------------------------------------------------

SERVICE_TIMEOUT_S = 0.5  # the page polls: a busy service goes unasked rather than stall it


def health(config: Config, conn: sqlite3.Connection) -> dict[str, Any]:
    """The status report (claude_mem/status.py) as the page shows it: read in one snapshot, no
    index drift (opening Chroma would stall the poll), the service asked for at most SERVICE_TIMEOUT_S."""
    from claude_mem.status import report

    with snapshot(conn):
        info = report(config, conn, revive=False, index=False, outages=3, service_timeout_s=SERVICE_TIMEOUT_S)
    return {"counts": info["counts"], "queue": info["queue"], "workers": info["workers"], "last_error": info["latest_error"],
            "outages": info["model_outages"], "skipped": info["skipped"], "service": info["service"], "withheld": info["withheld"]}
