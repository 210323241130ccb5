"""The memory service gives the C heap's free memory back once idle, never during a burst."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from claude_mem.processes.malloc import release_free_memory
from claude_mem.service.memory import IdleTrim


def test_the_heap_is_trimmed_where_glibc_can() -> None:
    assert release_free_memory() is sys.platform.startswith("linux")


def test_a_trim_waits_for_every_request_to_end_and_for_quiet() -> None:
    async def scenario() -> None:
        with ThreadPoolExecutor(1) as pool:
            slow = IdleTrim(pool, after_s=60.0)
            slow.started()
            slow.started()
            slow.ended()
            assert slow._pending is not None  # one request ended: the trim waits for quiet
            slow.started()
            assert slow._pending is None  # a new request cancels it: none during a burst
            slow.ended()
            slow.ended()
            assert slow.active == 0 and slow.trims == 0

            quick = IdleTrim(pool, after_s=0.01)
            quick.started()
            quick.started()
            quick.ended()
            assert quick._pending is not None
            await until(lambda: quick._pending is None)
            assert quick.trims == 0  # it fired with a request still in flight: nothing done
            quick.ended()
            await until(lambda: quick.trims == 1)

    async def until(condition: Callable[[], bool]) -> None:
        deadline = asyncio.get_running_loop().time() + 5
        while not condition():
            assert asyncio.get_running_loop().time() < deadline, "timed out"
            await asyncio.sleep(0.01)

    asyncio.run(scenario())
