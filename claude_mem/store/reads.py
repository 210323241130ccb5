"""Reading observations and summaries back: filtered lists and records by id.

Kept apart from memories.py (which defines the dataclasses the worker writes) because the
SessionStart hook reads through here: no dataclasses (which import inspect), no typing, no
hashlib, ~10 ms of the hook's start-up saved. Standard library only.
"""

from __future__ import annotations

import json
import sqlite3

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

OBSERVATION_TYPES = ("decision", "bugfix", "feature", "refactor", "discovery", "change")
JSON_LIST_COLUMNS = ("facts", "concepts", "files_read", "files_modified", "files_edited")
SUMMARY_FIELDS = ("request", "investigated", "learned", "completed", "next_steps", "notes")
# What memory rows are called everywhere: their tables, and the refs people and agents type
# (`obs:12`, `sum:3`, `prompt:7`; Chroma document ids start the same way).
TABLES = {"observation": "observations", "summary": "session_summaries", "prompt": "user_prompts"}
REF_PREFIX = {"observation": "obs", "summary": "sum", "prompt": "prompt"}
KIND_OF_PREFIX = {prefix: kind for kind, prefix in REF_PREFIX.items()}
KINDS = tuple(TABLES)  # ("observation", "summary", "prompt")


def ref(kind: str, row_id: int, origin: str | None = None) -> str:
    """`obs:12`, or `obs:12@laptop-b` for a teammate's memory (recall/remote.py)."""
    return f"{REF_PREFIX[kind]}:{row_id}" + (f"@{origin}" if origin else "")


def decode(row: sqlite3.Row | dict[str, Any]) -> dict[str, Any]:
    item = dict(row)
    for key in JSON_LIST_COLUMNS:
        if isinstance(item.get(key), str):
            try:
                item[key] = json.loads(item[key])
            except ValueError:
                item[key] = []
    return item


def json_list(raw: Any) -> list[str]:
    """A JSON list column (or the list already decoded) as strings; [] for anything else, and
    blank or nested items dropped: model output lands in these columns."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw else []
        except ValueError:
            return []
    if not isinstance(raw, list):
        return []
    return [str(i) for i in raw if isinstance(i, str | int | float) and str(i).strip()]


def cut(text: str | None, limit: int) -> str:
    """`text` on one line, at most `limit` characters, an ellipsis marking a cut."""
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def like_escape(text: str) -> str:
    """`text` inside a `LIKE ? ESCAPE '\\'` pattern, its own %, _ and \\ matching themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def file_clause(file: str, columns: tuple[str, ...]) -> tuple[str, list[Any]]:
    """Rows whose JSON file lists (`columns`, e.g. "t.files_read") hold a path containing `file`."""
    ors = " OR ".join(f"EXISTS (SELECT 1 FROM json_each({c}) WHERE value LIKE ? ESCAPE '\\')" for c in columns)
    return f"({ors})", ["%" + like_escape(file) + "%"] * len(columns)


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
        clause, more = file_clause(file, file_columns)
        clauses.append(clause)
        params.extend(more)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def list_observations(conn: sqlite3.Connection, *, session_id: str | None = None, project: str | None = None,
                      type_: str | None = None, since_ms: int | None = None, until_ms: int | None = None,
                      file: str | None = None, limit: int | None = None, newest_first: bool = False) -> list[dict[str, Any]]:
    where = _filters(session_id, project, type_, since_ms, until_ms, file, ("files_read", "files_modified"))
    return _list(conn, "observations", where, limit, newest_first)


def list_summaries(conn: sqlite3.Connection, *, session_id: str | None = None, project: str | None = None,
                   since_ms: int | None = None, until_ms: int | None = None, file: str | None = None,
                   limit: int | None = None, newest_first: bool = False) -> list[dict[str, Any]]:
    where = _filters(session_id, project, None, since_ms, until_ms, file, ("files_read", "files_edited"))
    return _list(conn, "session_summaries", where, limit, newest_first)


def _list(conn: sqlite3.Connection, table: str, where: tuple[str, list[Any]], limit: int | None,
          newest_first: bool) -> list[dict[str, Any]]:
    clause, params = where
    order = "DESC" if newest_first else "ASC"
    sql = f"SELECT * FROM {table}{clause} ORDER BY created_at_epoch {order}, id {order}"
    if limit:
        sql += f" LIMIT {int(limit)}"
    return [decode(r) for r in conn.execute(sql, params)]


def get_observations(conn: sqlite3.Connection, ids: list[int]) -> list[dict[str, Any]]:
    if not ids:
        return []
    marks = ",".join("?" * len(ids))
    return [decode(r) for r in conn.execute(f"SELECT * FROM observations WHERE id IN ({marks}) ORDER BY id", ids)]
