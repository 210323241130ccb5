"""The service's search threads (service/threads.py): a run of requests stays on one thread and
its connection; a request that comes while that thread is busy runs beside it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from claude_mem.service.threads import FirstIdle


def _name() -> str:
    return threading.current_thread().name


@pytest.fixture
def release() -> Iterator[threading.Event]:
    """What the calls that keep a thread busy wait for; set at the end whatever happened."""
    event = threading.Event()
    yield event
    event.set()


@pytest.fixture
def pool(release: threading.Event) -> Iterator[FirstIdle]:
    """Two search threads, shut down after the test (its busy calls released first)."""
    threads = FirstIdle(2, thread_name_prefix="search")
    yield threads
    release.set()
    threads.shutdown()


def test_calls_one_after_another_stay_on_the_first_thread_after_two_ran_at_once(pool: FirstIdle) -> None:
    both = threading.Barrier(2, timeout=10)

    def together() -> str:
        both.wait()  # returns only when the other call is running too: two threads at once
        return _name()

    first = [pool.submit(together) for _ in range(2)]
    assert {f.result(timeout=10) for f in first} == {"search-0_0", "search-1_0"}
    # A plain ThreadPoolExecutor(2) would now hand these to its two threads in turn.
    assert {pool.submit(_name).result(timeout=10) for _ in range(20)} == {"search-0_0"}


def test_a_call_while_the_first_thread_is_busy_runs_on_the_next(pool: FirstIdle, release: threading.Event) -> None:
    busy = pool.submit(lambda: (release.wait(10), _name())[1])
    assert pool.submit(_name).result(timeout=10) == "search-1_0"
    release.set()
    assert busy.result(timeout=10) == "search-0_0"
    assert pool.submit(_name).result(timeout=10) == "search-0_0"


def test_a_failing_call_raises_from_its_future_and_leaves_its_thread_idle(pool: FirstIdle) -> None:
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result(timeout=10)
    assert pool.submit(_name).result(timeout=10) == "search-0_0"


def test_a_call_cancelled_before_it_ran_leaves_its_thread_idle(pool: FirstIdle, release: threading.Event) -> None:
    busy = [pool.submit(release.wait, 10) for _ in range(2)]  # both threads
    dropped = pool.submit(_name)  # queued behind thread 0's call
    assert dropped.cancel()
    release.set()
    assert [f.result(timeout=10) for f in busy] == [True, True]
    assert {pool.submit(_name).result(timeout=10) for _ in range(5)} == {"search-0_0"}


def test_shutdown_cancels_what_has_not_started_and_refuses_more(release: threading.Event) -> None:
    pool = FirstIdle(1, thread_name_prefix="search")
    running = pool.submit(release.wait, 10)
    waiting = pool.submit(_name)
    pool.shutdown(wait=False, cancel_futures=True)
    release.set()
    assert running.result(timeout=10) is True
    assert waiting.cancelled()
    with pytest.raises(RuntimeError):
        pool.submit(_name)
