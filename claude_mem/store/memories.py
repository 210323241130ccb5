"""Observations and summaries: what the worker distils from the queue, and how it is read.

Observations are deduplicated per session by a hash of their content, so a replayed batch (a
worker killed after the model answered, or the CLI re-sending a failed message) inserts
nothing new. On the hook path for reading (the digest): standard library only.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from claude_mem.store.db import now_iso, now_ms

OBSERVATION_TYPES = ("decision", "bugfix", "feature", "refactor", "discovery", "change")
JSON_LIST_COLUMNS = ("facts", "concepts", "files_read", "files_modified", "files_edited")
SUMMARY_FIELDS = ("request", "investigated", "learned", "completed", "next_steps", "notes")


@dataclass
class Observation:
    type: str
    title: str
    subtitle: str = ""
    narrative: str = ""
    facts: list[str] = field(default_factory=list)
    concepts: list[str] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    raw_type: str | None = None  # set when the model used a type we do not know

    def content_hash(self) -> str:
        def norm(text: str) -> str:
            return " ".join(text.lower().split())

        parts = [self.type, norm(self.title), norm(self.subtitle), norm(self.narrative),
                 *sorted(norm(f) for f in self.facts)]
        return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


@dataclass
class Summary:
    request: str = ""
    investigated: str = ""
    learned: str = ""
    completed: str = ""
    next_steps: str = ""
    notes: str = ""
    files_read: list[str] = field(default_factory=list)
    files_edited: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not any(getattr(self, f).strip() for f in SUMMARY_FIELDS)


def insert_observation(conn: sqlite3.Connection, session_id: str, project: str, obs: Observation, *,
                       prompt_number: int, source: str = "model", model: str | None = None,
                       created_at_epoch: int | None = None) -> int | None:
    """Insert unless the session already holds the same content; returns the new id or None."""
    now = created_at_epoch if created_at_epoch is not None else now_ms()
    cur = conn.execute(
        "INSERT INTO observations (session_id, project, type, raw_type, title, subtitle, narrative,"
        " facts, concepts, files_read, files_modified, prompt_number, source, model, content_hash,"
        " created_at, created_at_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (session_id, content_hash) DO NOTHING",
        (session_id, project, obs.type, obs.raw_type, obs.title, obs.subtitle, obs.narrative,
         _json(obs.facts), _json(obs.concepts), _json(obs.files_read), _json(obs.files_modified),
         prompt_number, source, model, obs.content_hash(), now_iso(now), now),
    )
    return cur.lastrowid if cur.rowcount else None


def upsert_summary(conn: sqlite3.Connection, session_id: str, project: str, summary: Summary, *,
                   prompt_number: int, source: str = "model", model: str | None = None) -> int:
    """One summary per prompt: a later one for the same prompt replaces the earlier."""
    now = now_ms()
    row = conn.execute(
        "INSERT INTO session_summaries (session_id, project, request, investigated, learned, completed,"
        " next_steps, files_read, files_edited, notes, prompt_number, source, model, created_at,"
        " created_at_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (session_id, prompt_number) DO UPDATE SET request = excluded.request,"
        " investigated = excluded.investigated, learned = excluded.learned,"
        " completed = excluded.completed, next_steps = excluded.next_steps,"
        " files_read = excluded.files_read, files_edited = excluded.files_edited,"
        " notes = excluded.notes, source = excluded.source, model = excluded.model RETURNING id",
        (session_id, project, summary.request, summary.investigated, summary.learned,
         summary.completed, summary.next_steps, _json(summary.files_read),
         _json(summary.files_edited), summary.notes, prompt_number, source, model, now_iso(now), now),
    ).fetchone()
    return int(row[0])


def _json(items: list[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False)


def decode(row: sqlite3.Row | dict[str, Any]) -> dict[str, Any]:
    item = dict(row)
    for key in JSON_LIST_COLUMNS:
        if isinstance(item.get(key), str):
            try:
                item[key] = json.loads(item[key])
            except ValueError:
                item[key] = []
    return item


def _filters(session_id: str | None, project: str | None, type_: str | None,
             since_ms: int | None, until_ms: int | None, file: str | None,
             file_columns: tuple[str, ...]) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if session_id:
        clauses.append("session_id = ?")
        params.append(session_id)
    if project:
        clauses.append("project = ?")
        params.append(project)
    if type_:
        clauses.append("type = ?")
        params.append(type_)
    if since_ms is not None:
        clauses.append("created_at_epoch >= ?")
        params.append(since_ms)
    if until_ms is not None:
        clauses.append("created_at_epoch < ?")
        params.append(until_ms)
    if file:
        ors = " OR ".join(f"EXISTS (SELECT 1 FROM json_each({c}) WHERE value LIKE ? ESCAPE '\\')" for c in file_columns)
        clauses.append(f"({ors})")
        pattern = "%" + file.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        params.extend([pattern] * len(file_columns))
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def list_observations(conn: sqlite3.Connection, *, session_id: str | None = None, project: str | None = None,
                      type_: str | None = None, since_ms: int | None = None, until_ms: int | None = None,
                      file: str | None = None, limit: int | None = None, newest_first: bool = False) -> list[dict[str, Any]]:
    where, params = _filters(session_id, project, type_, since_ms, until_ms, file, ("files_read", "files_modified"))
    order = "DESC" if newest_first else "ASC"
    sql = f"SELECT * FROM observations{where} ORDER BY created_at_epoch {order}, id {order}"
    if limit:
        sql += f" LIMIT {int(limit)}"
    return [decode(r) for r in conn.execute(sql, params)]


def list_summaries(conn: sqlite3.Connection, *, session_id: str | None = None, project: str | None = None,
                   since_ms: int | None = None, until_ms: int | None = None, file: str | None = None,
                   limit: int | None = None, newest_first: bool = False) -> list[dict[str, Any]]:
    where, params = _filters(session_id, project, None, since_ms, until_ms, file, ("files_read", "files_edited"))
    order = "DESC" if newest_first else "ASC"
    sql = f"SELECT * FROM session_summaries{where} ORDER BY created_at_epoch {order}, id {order}"
    if limit:
        sql += f" LIMIT {int(limit)}"
    return [decode(r) for r in conn.execute(sql, params)]


def get_observations(conn: sqlite3.Connection, ids: list[int]) -> list[dict[str, Any]]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    return [decode(r) for r in conn.execute(f"SELECT * FROM observations WHERE id IN ({marks}) ORDER BY id", ids)]
