"""Which observations name a file: the one lookup of the `observation_files` index (migration
0006), for the `pre` hook's file push, the observer's "memory already holds" lines and the marking
rules' candidates.

The index is keyed by base name; each row found is then compared path by path with
`file_paths.same_file`, its recorded path read from its own session's folder. Only current
observations (no active mark supersedes them), none the write guard withheld. One base name at a time, newest id first: the index
(name, observation_id) is walked in order and the walk stops at `limit`, however many
observations name a common file (`__init__.py`, `README.md`). Standard library only: the hook
path imports it.
"""

from __future__ import annotations

import os

from claude_mem.file_paths import place, same_file
from claude_mem.store import marks, withheld

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    import sqlite3
    from typing import Any

    from claude_mem.file_paths import Place

_SQL = ("SELECT o.id, o.type, o.title, o.created_at_epoch, f.path, f.modified, s.cwd,"
        " (SELECT COUNT(*) FROM observation_files g WHERE g.observation_id = o.id) AS breadth"
        " FROM observation_files f JOIN observations o ON o.id = f.observation_id"
        " LEFT JOIN sdk_sessions s ON s.claude_session_id = o.session_id"
        " WHERE f.name = ? AND o.project = ? AND o.session_id != ? AND (o.created_at_epoch, o.id) < (?, ?)"
        f" AND {marks.not_superseded('o')} AND {withheld.shown('o')} ORDER BY f.observation_id DESC LIMIT ?")
_NO_SESSION = ""  # no session id is empty: excluding it excludes nothing
_ANY_TIME = (2**62, 2**62)


def naming(conn: sqlite3.Connection, project: str, files: list[Place], *, limit: int, other_than_session: str = _NO_SESSION,
           before: tuple[int, int] = _ANY_TIME) -> list[dict[str, Any]]:
    """The current observations of `project` naming one of `files` (each a `file_paths.Place`), of
    any session but `other_than_session`, recorded before `before` (created_at_epoch, id): newest
    id first, each once, with its id, type, title, created_at_epoch, `modified` (1 when it
    modified one of them), and `breadth` (how many files it names). At most `limit` rows are read
    per base name."""
    found: dict[int, dict[str, Any]] = {}
    for name in sorted({os.path.basename(f.path) for f in files if os.path.basename(f.path)}):
        wanted = [f for f in files if os.path.basename(f.path) == name]
        for row in conn.execute(_SQL, (name, project, other_than_session, *before, limit)):
            stored = place(row["path"], row["cwd"])
            if not any(same_file(stored, f) for f in wanted):
                continue
            seen = found.setdefault(row["id"], dict(row))
            seen["modified"] = max(seen["modified"], row["modified"])
    return sorted(found.values(), key=lambda r: -r["id"])
