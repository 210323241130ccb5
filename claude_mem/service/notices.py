"""Index notices a worker could not deliver, kept for the memory service (issue 51).

A worker tells the service which rows it committed (client.notify_index) within a short
deadline: a service still loading its model, or busy embedding, did not answer, and the notice was
dropped. New rows the service finds by id anyway; rows rewritten in place (a turn's summary
replaced, a prompt given Claude's reply) it learns of only from a notice, or from the full
catch-up a quarter of an hour later. So a notice that cannot be delivered is kept as a file in
`<data dir>/index-notices/`, and the service takes every one there each time it polls (about a
second), on start included: retried, never dropped. Standard library only: the worker writes them.
"""

from __future__ import annotations

import os
import time

from claude_mem.jsonfile import JSONFileError, read_json_object, write_json_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FOLDER = "index-notices"
MAX_KEPT = 1000  # past this the service is long gone: its catch-up on start and the full one find the rows


def folder(data_dir: str) -> str:
    return os.path.join(data_dir, FOLDER)


def keep(data_dir: str, observations: list[int], summaries: list[int], prompts: list[int]) -> str | None:
    """Keep a notice for the service; returns its path (None when the folder is full or unwritable)."""
    where = folder(data_dir)
    try:
        os.makedirs(where, mode=0o700, exist_ok=True)
        if len(os.listdir(where)) >= MAX_KEPT:
            return None
        path = os.path.join(where, f"{time.time_ns()}-{os.getpid()}.json")
        write_json_atomic(path, {"observations": observations, "summaries": summaries, "prompts": prompts})
        return path
    except OSError:
        return None


def take(data_dir: str) -> list[dict[str, Any]]:
    """The kept notices, oldest first, each removed once read (an unreadable one is removed too)."""
    where = folder(data_dir)
    try:
        names = sorted(n for n in os.listdir(where) if n.endswith(".json"))
    except OSError:
        return []
    found = []
    for name in names:
        path = os.path.join(where, name)
        try:
            notice, _ = read_json_object(path)
            found.append({k: [int(i) for i in notice.get(k) or [] if isinstance(i, int)] for k in ("observations", "summaries", "prompts")})
        except (JSONFileError, OSError, ValueError):
            pass
        try:
            os.unlink(path)
        except OSError:
            pass
    return found


def waiting(data_dir: str) -> int:
    """How many notices wait for the service."""
    try:
        return sum(1 for n in os.listdir(folder(data_dir)) if n.endswith(".json"))
    except OSError:
        return 0
