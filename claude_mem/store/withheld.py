"""Withheld memories (issue 47): what the write guard flagged, left out of what memory gives
unasked, counted where they came from, and released by a person.

A memory is withheld when the guard left a note on it (`guard_note`, migration 0017) and no
person has released it (`released_at_epoch` NULL). The pushes leave withheld rows out with one
lookup of the partial indexes `observations_withheld` and `session_summaries_withheld` (0017,
0019), or a clause on a row they read anyway. A release is recorded on the row (when), logged,
and puts back the text the guard withheld (`withheld_text`, migration 0019); `undo` withholds it
again with the guard's text.

Standard library only: the hooks read through here.
"""

from __future__ import annotations

import json
import sqlite3

from claude_mem.store.db import now_ms

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

TABLES = {"observation": "observations", "summary": "session_summaries"}


def is_withheld(guard_note: str | None, released_at_epoch: int | None) -> bool:
    """Whether a row with these two columns is withheld (`shown` says the same in SQL)."""
    return bool(guard_note) and released_at_epoch is None


def shown(alias: str = "t") -> str:
    """SQL: the row in `alias` is not withheld (a clause on a row already read)."""
    return f"NOT ({alias}.guard_note != '' AND {alias}.released_at_epoch IS NULL)"


def withheld_ids(conn: sqlite3.Connection, project: str) -> set[tuple[str, int]]:
    """(kind, id) of the project's withheld observations and summaries, through the partial indexes."""
    found: set[tuple[str, int]] = set()
    for kind, table in TABLES.items():
        found.update((kind, r[0]) for r in conn.execute(
            f"SELECT id FROM {table} WHERE project = ? AND guard_note != '' AND released_at_epoch IS NULL", (project,)))
    return found


def counts(conn: sqlite3.Connection) -> dict[str, Any]:
    """How many memories are withheld, and where they came from: by provenance (what the
    observations were made from) and by project."""
    total = 0
    sources: dict[str, int] = {}
    projects: dict[str, int] = {}
    for kind, table in TABLES.items():
        provenance = "provenance" if kind == "observation" else "'[\"reply\"]'"
        for project, made_from in conn.execute(
                f"SELECT project, {provenance} FROM {table} WHERE guard_note != '' AND released_at_epoch IS NULL"):
            total += 1
            projects[project] = projects.get(project, 0) + 1
            for source in _list(made_from) or ["unknown"]:
                sources[source] = sources.get(source, 0) + 1
    return {"total": total, "by_source": dict(sorted(sources.items(), key=lambda kv: (-kv[1], kv[0]))),
            "by_project": dict(sorted(projects.items(), key=lambda kv: (-kv[1], kv[0])))}


def withheld_text(stored: str) -> dict[str, Any]:
    """What the guard withheld from a row, as written (its fields by name, and the pieces cut),
    from the row's `withheld_text`."""
    try:
        value = json.loads(stored or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


class NotWithheld(ValueError):
    """The memory is not in the state a release (or its undo) changes; the message says why."""


def release(conn: sqlite3.Connection, kind: str, row_id: int, *, undo: bool = False) -> dict[str, Any] | None:
    """Release a withheld memory (its text as written put back) or, with `undo`, withhold it
    again (the guard's text put back). Returns the row after, None when there is no such row;
    raises NotWithheld when there is nothing to release (or undo). Call inside a transaction."""
    table = TABLES[kind]
    found = conn.execute(f"SELECT * FROM {table} WHERE id = ?", (row_id,)).fetchone()
    if found is None:
        return None
    row = dict(found)
    if not row["guard_note"]:
        raise NotWithheld("the write guard withheld nothing from it")
    if undo != (row["released_at_epoch"] is not None):
        raise NotWithheld("it is withheld already" if undo else "it was released already (`--undo` withholds it again)")
    written = withheld_text(row["withheld_text"])
    fields = [name for name in written if name in row and name not in ("id", "withheld_text")]
    now: dict[str, Any] = {name: row[name] for name in fields}
    back = {name: json.dumps(v, ensure_ascii=False) if isinstance(v, list) else v for name, v in written.items() if name in fields}
    # The two sides swap: what is shown now becomes what is kept aside, so an undo restores it.
    kept = {**written, **{name: json.loads(v) if name in ("facts", "concepts") else v for name, v in now.items()}}
    sets = [f"{name} = ?" for name in back] + ["withheld_text = ?", "released_at_epoch = ?"]
    values = [*back.values(), json.dumps(kept, ensure_ascii=False), None if undo else now_ms()]
    conn.execute(f"UPDATE {table} SET {', '.join(sets)} WHERE id = ?", (*values, row_id))
    return dict(conn.execute(f"SELECT * FROM {table} WHERE id = ?", (row_id,)).fetchone())


def _list(raw: Any) -> list[str]:
    try:
        value = json.loads(raw or "[]")
    except ValueError:
        return []
    return [str(v) for v in value] if isinstance(value, list) else []


def listed(conn: sqlite3.Connection, kind: str, *, project: str | None = None, released: bool = False) -> list[dict[str, Any]]:
    """The rows of `kind` the guard left a note on, still withheld (and, with `released`, those a
    person released): id, project, created_at_epoch, guard_note, released_at_epoch and provenance
    (a JSON list; '[]' for a summary)."""
    made_from = "provenance" if kind == "observation" else "'[]' AS provenance"
    sql = (f"SELECT id, project, created_at_epoch, guard_note, released_at_epoch, {made_from} FROM {TABLES[kind]}"
           " WHERE guard_note != ''" + ("" if released else " AND released_at_epoch IS NULL")
           + (" AND project = ?" if project else ""))
    return [dict(r) for r in conn.execute(sql, [project] if project else [])]
