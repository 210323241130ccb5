"""Echoes: an observation that repeats what its session already stored is not stored again.

A repeat is the same type, title and facts as one of the session's observations (whatever the
subtitle and narrative say, so the content hash of store/memories.py does not see it), or, in
the reply to the message that carried a recap, a title the recap showed as already recorded:
after a renewal the model is shown what the session holds, and a careless model writes some of
it down again there (later, a title may recur for a new event: re-reading a file, re-running a
test). The worker counts each refusal on its run (`claude-mem stats`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable

from claude_mem.store import titles
from claude_mem.store.memories import Observation


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def _facts(items: Iterable[str]) -> list[str]:
    return sorted(_norm(f) for f in items if f.strip())


def repeats(conn: sqlite3.Connection, session_id: str, obs: Observation, shown: frozenset[str] = frozenset()) -> bool:
    """Whether `obs` repeats an observation the session holds, or a title the recap showed
    (`shown`: normalised by `shown_titles`)."""
    title = _norm(obs.title)
    if title in shown:
        return True
    facts = _facts(obs.facts)
    for stored_title, stored_facts in titles.of_session(conn, session_id, obs.type):
        if _norm(stored_title or "") != title:
            continue
        try:
            items = json.loads(stored_facts or "[]")
        except ValueError:
            items = []
        if _facts(i for i in items if isinstance(i, str)) == facts:
            return True
    return False


def shown_titles(titles: Iterable[str]) -> frozenset[str]:
    return frozenset(_norm(t) for t in titles if t.strip())
