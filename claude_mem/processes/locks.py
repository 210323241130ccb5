"""Exclusive flocks a live process holds on a file of its own for its whole life: the kernel drops
one when its process dies, even on kill -9, so a lock never goes stale and says "alive" without
a pid file to trust. Probing one (`lock_held`) takes a shared lock for microseconds.

Standard library only: hooks probe the worker and service locks without psutil (~25 ms to import).
"""

from __future__ import annotations

import os
import sys

if sys.platform != "win32":
    import fcntl
else:  # pragma: no cover - claude-mem targets POSIX; Windows falls back to pid files
    fcntl = None


def lock_held(path: str) -> bool:
    """True while some process holds an exclusive flock on `path` (probed with a shared one)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def take_lock(path: str, wait_s: float = 0.0) -> int | None:
    """Take an exclusive flock on `path`; returns the fd to keep open, or None if another process
    holds it after `wait_s` (retried briefly: a liveness probe holds it shared for microseconds)."""
    import time

    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.05)


def unheld_locks(folder: str) -> list[str]:
    """The lock files in `folder` nobody holds. Harmless (a lock cannot outlive its process), but clutter."""
    import glob  # fnmatch and re with it: off the hook path

    stale = []
    for path in glob.glob(os.path.join(folder, "*.lock")):
        fd = os.open(path, os.O_RDONLY)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            stale.append(path)
        finally:
            os.close(fd)
    return stale
