"""Forgetting: which rows a request names (`plan`), removing them (`forget`), and giving the
space back (`compact`).

SQLite is the source of truth, so rows go from SQLite first (FTS5 follows through the
triggers of migration 0001, also for rows removed by ON DELETE CASCADE) and from the semantic
index second. The index is passed in by the caller (the store does not import recall/); when
it cannot be reached, the rows' `index_state` entries are left behind, with an empty
collection id, and `Index.index_missing` removes their documents as orphans once Chroma is
back (search never shows them meanwhile: its hits are read from SQLite). The empty id also
made a row re-indexed under a reused id drop the old documents first; since migration 0004
ids are never reused, so that half is only a safeguard.

Standard library only.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from claude_mem.store.db import chunks, transaction
from claude_mem.store.overview import session_scope
from claude_mem.store.queue import QueueStatus
from claude_mem.store.reads import KIND, TABLES

CHUNK = 500  # ids per statement: well under SQLite's variable limit
FTS_TABLES = tuple(kind.fts for kind in KIND.values())


class ForgetError(LookupError):
    """The request names rows or sessions that do not exist."""


class SemanticIndex(Protocol):
    def delete(self, kind: str, ids: Iterable[int], conn: sqlite3.Connection | None = None, progress: Any = None) -> None: ...


@dataclass
class Plan:
    """The rows a forget request removes. `sessions` go whole (with everything they hold); the
    id lists name every prompt, observation and summary that goes, theirs included."""

    sessions: list[str] = field(default_factory=list)
    prompts: list[int] = field(default_factory=list)
    observations: list[int] = field(default_factory=list)
    summaries: list[int] = field(default_factory=list)
    queue: list[int] = field(default_factory=list)
    raw_replies: list[int] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"sessions": len(self.sessions), "prompts": len(self.prompts), "observations": len(self.observations),
                "summaries": len(self.summaries), "queued_events": len(self.queue), "raw_replies": len(self.raw_replies)}

    def is_empty(self) -> bool:
        return not any(self.counts().values())

    def by_kind(self) -> dict[str, list[int]]:
        return {"observation": self.observations, "summary": self.summaries, "prompt": self.prompts}


@dataclass
class Outcome:
    counts: dict[str, int]
    index_error: str | None = None  # why Chroma was not updated now (it is, later, by index_missing)


def _ids(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> list[Any]:
    return [r[0] for r in conn.execute(sql, list(params))]


def _in_sessions(conn: sqlite3.Connection, table: str, sessions: Sequence[str], extra: str = "",
                 params: Sequence[Any] = ()) -> list[int]:
    found: list[int] = []
    for chunk in chunks(sessions, CHUNK):
        marks = ",".join("?" * len(chunk))
        found += _ids(conn, f"SELECT id FROM {table} WHERE session_id IN ({marks}){extra}", [*chunk, *params])
    return found


def plan(conn: sqlite3.Connection, *, refs: Sequence[tuple[str, int]] = (), session_id: str | None = None,
         project: str | None = None, before_ms: int | None = None, keep_sessions: Iterable[str] = ()) -> Plan:
    """What `forget` would remove for one request: row references (kind, id), or a scope (one
    session, one project, everything) optionally limited to what is older than `before_ms`.

    With `before_ms`, everything created before it goes except queue rows a worker holds right
    now; a session goes whole once nothing of it is newer. Sessions in `keep_sessions` (a live
    worker writes to them) are never removed whole, though their selected rows still go.
    """
    if refs:
        if session_id or project or before_ms is not None:
            raise ValueError("row references cannot be combined with a scope")
        return _plan_refs(conn, refs)
    if session_id and conn.execute("SELECT 1 FROM sdk_sessions WHERE claude_session_id = ?", (session_id,)).fetchone() is None:
        raise ForgetError(f"no session {session_id!r}")

    where, params = session_scope(project=project, session_id=session_id)
    scope_sql = "SELECT s.claude_session_id FROM sdk_sessions s" + where
    scope = _ids(conn, scope_sql, params)
    age, age_params = "", []
    whole = scope
    if before_ms is not None:
        age, age_params = " AND created_at_epoch < ?", [before_ms]
        newer = " ".join(
            f"AND NOT EXISTS (SELECT 1 FROM {table} r WHERE r.session_id = s.claude_session_id AND r.created_at_epoch >= ?)"
            for table in ("user_prompts", "observations", "session_summaries", "observation_queue", "raw_replies"))
        whole = _ids(conn, f"{scope_sql} AND s.updated_at_epoch < ? {newer} AND NOT EXISTS (SELECT 1 FROM observation_queue q"
                           f" WHERE q.session_id = s.claude_session_id AND q.status = '{QueueStatus.PROCESSING}')",
                     [*params, before_ms, *[before_ms] * 5])
    keep = set(keep_sessions)
    result = Plan(sessions=[s for s in whole if s not in keep])
    result.prompts = _in_sessions(conn, "user_prompts", scope, age, age_params)
    result.observations = _in_sessions(conn, "observations", scope, age, age_params)
    result.summaries = _in_sessions(conn, "session_summaries", scope, age, age_params)
    result.raw_replies = _in_sessions(conn, "raw_replies", scope, age, age_params)
    # A worker holds 'processing' rows right now; they are only removed with their session.
    result.queue = _in_sessions(conn, "observation_queue", scope, age + f" AND status != '{QueueStatus.PROCESSING}'", age_params)
    gone = set(result.sessions)
    result.queue = sorted(set(result.queue) | set(_in_sessions(conn, "observation_queue", [s for s in scope if s in gone])))
    if project:
        # A memory filed under the project in a session of another project (rare: a session
        # that changed repository) belongs to the project too.
        result.observations = sorted(set(result.observations) | set(
            _ids(conn, "SELECT id FROM observations WHERE project = ?" + age, [project, *age_params])))
        result.summaries = sorted(set(result.summaries) | set(
            _ids(conn, "SELECT id FROM session_summaries WHERE project = ?" + age, [project, *age_params])))
    return result


def _plan_refs(conn: sqlite3.Connection, refs: Sequence[tuple[str, int]]) -> Plan:
    wanted: dict[str, set[int]] = {kind: set() for kind in TABLES}
    for kind, row_id in refs:
        if kind not in TABLES:
            raise ValueError(f"unknown kind {kind!r}")
        wanted[kind].add(int(row_id))
    found: dict[str, list[int]] = {}
    missing: list[str] = []
    for kind, ids in wanted.items():
        present: set[int] = set()
        ordered = sorted(ids)
        for chunk in chunks(ordered, CHUNK):
            marks = ",".join("?" * len(chunk))
            present.update(_ids(conn, f"SELECT id FROM {TABLES[kind]} WHERE id IN ({marks})", chunk))
        found[kind] = [i for i in ordered if i in present]
        missing += [f"{kind} {i}" for i in ordered if i not in present]
    if missing:
        raise ForgetError("no " + ", ".join(missing))
    return Plan(prompts=found["prompt"], observations=found["observation"], summaries=found["summary"])


def _delete_ids(conn: sqlite3.Connection, table: str, column: str, ids: Sequence[Any], progress: Any = None) -> int:
    removed = 0
    for chunk in chunks(ids, CHUNK):
        marks = ",".join("?" * len(chunk))
        removed += conn.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", list(chunk)).rowcount
        if progress is not None:
            progress.advance(len(chunk))
    return removed


def forget(conn: sqlite3.Connection, planned: Plan, index: SemanticIndex | None = None,
           progress: Callable[[str], Any] | None = None) -> Outcome:
    """Remove the planned rows from SQLite in one transaction (all or nothing, an interrupt
    included), then their documents from the index, chunk by chunk (an interrupt there leaves
    tombstones the next catch-up completes). An index that cannot be reached is reported in
    `index_error`, not raised. `progress(what)` gives a progress.Progress for each of the two."""
    rows = progress("forgetting rows") if progress else None
    with transaction(conn):
        # Rows stored in a whole-session forget since the plan was made (a hook meanwhile) go by
        # cascade: name them, so they get tombstones and lose their documents too.
        planned.prompts = sorted(set(planned.prompts) | set(_in_sessions(conn, "user_prompts", planned.sessions)))
        planned.observations = sorted(set(planned.observations) | set(_in_sessions(conn, "observations", planned.sessions)))
        planned.summaries = sorted(set(planned.summaries) | set(_in_sessions(conn, "session_summaries", planned.sessions)))
        for kind, ids in planned.by_kind().items():
            for chunk in chunks(ids, CHUNK):
                marks = ",".join("?" * len(chunk))
                # Tombstones: see the module docstring.
                conn.execute(f"UPDATE index_state SET collection_id = '' WHERE kind = ? AND row_id IN ({marks})", [kind, *chunk])
        if rows is not None:
            rows.grow(sum(len(ids) for ids in (planned.observations, planned.summaries, planned.prompts, planned.queue,
                                               planned.raw_replies)))
        removed = {
            "observations": _delete_ids(conn, "observations", "id", planned.observations, rows),
            "summaries": _delete_ids(conn, "session_summaries", "id", planned.summaries, rows),
            "prompts": _delete_ids(conn, "user_prompts", "id", planned.prompts, rows),
            "queued_events": _delete_ids(conn, "observation_queue", "id", planned.queue, rows),
            "raw_replies": _delete_ids(conn, "raw_replies", "id", planned.raw_replies, rows),
        }
        _delete_ids(conn, "worker_runs", "session_id", planned.sessions)
        _delete_ids(conn, "injections", "session_id", planned.sessions)
        removed["sessions"] = _delete_ids(conn, "sdk_sessions", "claude_session_id", planned.sessions)
    counts = {key: removed[key] for key in planned.counts()}  # in the order the plan reports them
    outcome = Outcome(counts)
    if index is not None:
        documents = progress("dropping their documents from the semantic index") if progress else None
        if documents is not None:
            documents.grow(sum(len(ids) for ids in planned.by_kind().values()))
        try:
            for kind, ids in planned.by_kind().items():
                index.delete(kind, ids, conn, documents)
        except RuntimeError as exc:  # IndexUnavailable (the store does not import recall/)
            outcome.index_error = str(exc)
    return outcome


def compact(conn: sqlite3.Connection) -> str | None:
    """Merge the FTS indexes (dropping what deleted rows left in them), VACUUM, and empty the
    WAL, so forgotten text does not linger in free pages. Returns why it could not, or None."""
    try:
        with transaction(conn):
            for table in FTS_TABLES:
                conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.OperationalError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class SessionLine:
    """A session as a plan's preview shows it."""

    session_id: str
    project: str
    started_at_epoch: int
    first_prompt: str


@dataclass(frozen=True)
class ObservationLine:
    """An observation as a plan's preview shows it."""

    id: int
    type: str
    project: str
    title: str


def session_lines(conn: sqlite3.Connection, session_ids: Sequence[str]) -> list[SessionLine]:
    """The sessions `session_ids`, oldest first."""
    if not session_ids:
        return []
    return [SessionLine(r[0], r[1], r[2], r[3] or "") for r in conn.execute(
        f"SELECT claude_session_id, project, started_at_epoch, user_prompt FROM sdk_sessions WHERE claude_session_id IN"
        f" ({','.join('?' * len(session_ids))}) ORDER BY started_at_epoch", list(session_ids))]


def observation_lines(conn: sqlite3.Connection, ids: Sequence[int]) -> list[ObservationLine]:
    """The observations `ids`, in id order."""
    if not ids:
        return []
    return [ObservationLine(*r) for r in conn.execute(
        f"SELECT id, type, project, title FROM observations WHERE id IN ({','.join('?' * len(ids))}) ORDER BY id", list(ids))]
