"""The one way a test waits: for a state, polled, with a bound that only stops a hang.

Tests never sleep a fixed time before asserting (docs/development.md, "Tests that hold under
load"): they wait until what they expect is there, and the bound is generous because a loaded
machine is slow, not wrong.
"""

from __future__ import annotations

import os
import select
import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(condition: Callable[[], T], timeout: float, step: float = 0.2) -> T:
    """Poll `condition` until it gives something true, at most `timeout` seconds; returns its last
    answer (true when it came, so `assert wait_until(...)` reads as the test's claim)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(step)
    return condition()


def waited(what: str, condition: Callable[[], T], timeout: float, step: float = 0.2) -> T:
    """`wait_until`, raising when it does not come: for a value the test goes on to use."""
    found = wait_until(condition, timeout, step)
    if not found:
        raise AssertionError(f"no {what} after {timeout} s")
    return found


def read_line(proc: subprocess.Popen[bytes], timeout_s: float = 20) -> str:
    """One line of the process's output, or fail after `timeout_s` (never hang the suite). Read
    from the descriptor a byte at a time: a buffered readline() could take the next line with it,
    and select() would then wait for a line already read (a test waited 120 s so in CI)."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    data = b""
    deadline = time.monotonic() + timeout_s
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        assert ready, f"no line within {timeout_s} s (got {data!r})"
        byte = os.read(fd, 1)
        assert byte, f"output ended (got {data!r})"
        data += byte
    return data.decode().rstrip("\n")
