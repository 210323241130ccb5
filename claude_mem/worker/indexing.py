"""A batch's rows end done once the memory service has indexed what they gave (issue 51): the
transaction that stores the memories marks the rows stored (still processing), the service is
told and waited for, at most INDEX_WAIT_S, then the rows are done. A drained queue then means
search by meaning finds everything.

The wait runs in a daemon thread the worker's event loop awaits, not in the loop itself: a
SIGTERM stops the worker at once, leaving its rows stored, which the next worker ends done
(store/queue.py `release_processing`); a thread of asyncio's own executor would be joined
before the process could exit.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from claude_mem.service import client as service
from claude_mem.settings import Config
from claude_mem.store import queue
from claude_mem.store.db import transaction

INDEX_WAIT_S = 5.0  # a batch's rows wait this long for the memory service to index what they gave


@dataclass
class Stored:
    """The queue rows of a batch whose memories are stored, and the rows the index must take."""

    queue_ids: list[int]
    observations: list[int] = field(default_factory=list)
    summaries: list[int] = field(default_factory=list)
    prompts: list[int] = field(default_factory=list)  # their replies came with the turn's end


async def settle(conn: sqlite3.Connection, config: Config, stored: list[Stored]) -> None:
    """Tell the service what each batch gave, wait for its index, then end the batch's rows done."""
    while stored:
        batch = stored[0]
        await in_daemon_thread(service.notify_index, config, batch.observations, batch.summaries, batch.prompts,
                               wait_s=INDEX_WAIT_S)
        with transaction(conn):
            queue.finish_stored(conn, batch.queue_ids)
        stored.pop(0)


async def in_daemon_thread(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`call(*args, **kwargs)` in a daemon thread, its result (or error) awaited."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle_future(outcome: Any, error: BaseException | None) -> None:
        if done.done():  # cancelled meanwhile: nobody waits for it
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(outcome)

    def run() -> None:
        try:
            outcome, error = call(*args, **kwargs), None
        except BaseException as exc:  # handed to the awaiting task, which decides
            outcome, error = None, exc
        try:
            loop.call_soon_threadsafe(settle_future, outcome, error)
        except RuntimeError:
            pass  # the loop has closed: the worker stopped without waiting

    threading.Thread(target=run, name="claude-mem-index-wait", daemon=True).start()
    return await done
