"""Stored observations and summaries read back whole, as records (store/rows.py `StoredObservation`,
`StoredSummary`): filtered lists, observations by id, and an observation with its marks. The CLI,
the viewer, the worker and the MCP tools' full records read memories through here.

The filters and the SQL are store/reads.py's, whose reads give the same rows as decoded dicts:
the SessionStart digest runs in the hook, which does without the records' module (dataclasses
cost it ~7 ms). Search's rows stay dict-shaped (store/recall_rows.py); its views read the
observations they print whole (`get_observations`) through here.
"""

from __future__ import annotations

import sqlite3
from typing import TypedDict, Unpack

from claude_mem.store import marks
from claude_mem.store.reads import observation_rows, summary_rows
from claude_mem.store.rows import MarkedObservation, StoredObservation, StoredSummary, columns


class SummaryFilters(TypedDict, total=False):
    """What `list_summaries` takes besides the connection (reads.summary_rows' keywords)."""

    session_id: str | None
    project: str | None
    since_ms: int | None
    until_ms: int | None
    file: str | None  # a path containing this text among its files
    limit: int | None
    newest_first: bool
    other_than: str | None  # none of that session's
    given: bool  # only those memory may give unasked (none the write guard withheld)


class ObservationFilters(SummaryFilters, total=False):
    """What `list_observations` takes besides the connection (reads.observation_rows' keywords)."""

    type_: str | None
    current: bool  # only those no mark supersedes
    stated: bool | None  # only those a person or the agent stated (True), or none of them (False)


def list_observations(conn: sqlite3.Connection, **filters: Unpack[ObservationFilters]) -> list[StoredObservation]:
    """Observations passing the filters, oldest first unless `newest_first`."""
    return [StoredObservation.from_row(r) for r in observation_rows(conn, **filters)]


def list_summaries(conn: sqlite3.Connection, **filters: Unpack[SummaryFilters]) -> list[StoredSummary]:
    """Summaries passing the filters, oldest first unless `newest_first`."""
    return [StoredSummary.from_row(r) for r in summary_rows(conn, **filters)]


def observations_by_id(conn: sqlite3.Connection, ids: list[int]) -> list[StoredObservation]:
    """The observations of these ids that exist, by id."""
    if not ids:
        return []
    wanted = ",".join("?" * len(ids))
    return [StoredObservation.from_row(r) for r in conn.execute(
        f"SELECT {columns(StoredObservation)} FROM observations WHERE id IN ({wanted}) ORDER BY id", ids)]


def with_marks(conn: sqlite3.Connection, observations: list[StoredObservation]) -> list[MarkedObservation]:
    """Each observation with what the marks say of it (store/marks.py `notes`)."""
    found = marks.notes(conn, [o.id for o in observations])
    return [MarkedObservation(o, *found[o.id]) for o in observations]
