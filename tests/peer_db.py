"""The npm claude-mem's own database for tests: tests/fixtures/peer/peer-13.25.3.sql (written by
its worker, hooks and observer; see the README there) restored into a file."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

PEER_SQL = Path(__file__).resolve().parent / "fixtures" / "peer" / "peer-13.25.3.sql"
# What the fixture holds (tests/fixtures/peer/README.md).
PEER_COUNTS = {"session": 5, "prompt": 6, "observation": 8, "summary": 4}


def make_peer_db(path: Path) -> Path:
    """The peer's database at `path`, in WAL mode as the peer keeps it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript(PEER_SQL.read_text(encoding="utf-8"))
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    return path


def file_digests(path: Path) -> dict[str, str | None]:
    """sha256 of the database and its -wal and -shm files (None: absent)."""
    out: dict[str, str | None] = {}
    for suffix in ("", "-wal", "-shm"):
        f = Path(f"{path}{suffix}")
        out[suffix or "db"] = hashlib.sha256(f.read_bytes()).hexdigest() if f.exists() else None
    return out
