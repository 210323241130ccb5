"""Forgetting one observation where no index is at hand (the viewer): the same removal as
`claude-mem forget REF --yes` (store/forget.py: the row, its marks and revisions, its keyword
entries, in one transaction; the database compacted so the text leaves the file), its documents
dropped by the memory service (index.py), on a shared Chroma server too.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from claude_mem.settings import Config
from claude_mem.store import forget as forget_mod
from claude_mem.writes.checks import Missing
from claude_mem.writes.index import follow


def forget(config: Config, conn: sqlite3.Connection, observation_id: int) -> dict[str, Any]:
    """Remove the observation; what went (forget's counts) and whether the database was compacted."""
    try:
        planned = forget_mod.plan(conn, refs=[("observation", observation_id)])
    except forget_mod.ForgetError:
        raise Missing(f"no observation obs:{observation_id}") from None
    outcome = forget_mod.forget(conn, planned)
    compact_error = forget_mod.compact(conn)
    follow(config, planned.observations)
    return {"counts": outcome.counts, "vacuumed": compact_error is None}
