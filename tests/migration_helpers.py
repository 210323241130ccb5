"""A migrations folder holding only the first k of ours: a database as an older claude-mem left it."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

from claude_mem.store.db import migrations


def copy_first_migrations(k: int, directory: Path) -> Path:
    directory.mkdir()
    for migration in migrations()[:k]:
        shutil.copy(migration.path, directory / os.path.basename(migration.path))
    return directory


def old_observation(conn: sqlite3.Connection, session_id: str, project: str, title: str, *, type_: str = "discovery",
                    facts: tuple[str, ...] = (), prompt_number: int = 1, created_at_epoch: int = 1) -> int:
    """An observation as an older claude-mem wrote it: only the columns every schema has (today's
    insert_observation writes those of 0017 and 0019 too). Call inside a transaction."""
    return int(conn.execute(
        "INSERT INTO observations (session_id, project, type, title, facts, prompt_number, content_hash, created_at,"
        " created_at_epoch) VALUES (?, ?, ?, ?, ?, ?, ?, '', ?) RETURNING id",
        (session_id, project, type_, title, json.dumps(list(facts), ensure_ascii=False), prompt_number,
         f"{title}|{prompt_number}", created_at_epoch)).fetchone()[0])


def old_summary(conn: sqlite3.Connection, session_id: str, project: str, request: str, *, prompt_number: int = 1) -> int:
    """A summary as an older claude-mem wrote it (see old_observation). Call inside a transaction."""
    return int(conn.execute(
        "INSERT INTO session_summaries (session_id, project, request, prompt_number, created_at, created_at_epoch)"
        " VALUES (?, ?, ?, ?, '', 1) RETURNING id", (session_id, project, request, prompt_number)).fetchone()[0])
