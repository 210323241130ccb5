"""The semantic index follows what a person or the agent wrote.

The keyword index follows in SQLite (the FTS triggers); a rewritten observation's vectors and
index_state go stale there too (migration 0018's trigger). The documents are the memory
service's to write: it holds the model, and on a shared Chroma server this installation's
documents are replaced or removed there. It is told at once; a notice it misses (not running,
busy past the deadline) costs nothing but time: it starts when told, catches up from SQLite on
start, and takes stale rows on its next pass once it runs (service/indexer.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from claude_mem.service.client import ensure_started, notify_index
from claude_mem.settings import Config


def follow(config: Config, observation_ids: Iterable[int]) -> None:
    ids = sorted({int(i) for i in observation_ids})
    if ids and config.semantic_index:
        # A person who just said "remember" searches next: a service that was not running starts
        # loading its model now, while they type, and indexes the row as it catches up.
        ensure_started(config.data_dir)
        notify_index(config, ids, [], [])
