"""The flock that serialises writers of an embedded index across processes, and the write
generation it holds: chromadb keeps each process's vector index in memory, so a process that
sees a newer generation reloads (docs/search-tuning.md)."""

from __future__ import annotations

import os
import time

from claude_mem.index.chroma import IndexUnavailable


class FileLock:
    """flock on `<index folder>.lock`, which also holds the write generation. A no-op for a
    Chroma server (it serialises its own writes) and where fcntl does not exist."""

    def __init__(self, path: str | None, *, exclusive: bool, timeout_s: float = 30.0) -> None:
        self.path = path
        self.exclusive = exclusive
        self.timeout_s = timeout_s
        self.fd: int | None = None

    def __enter__(self) -> FileLock:
        if self.path is None:
            return self
        os.makedirs(os.path.dirname(self.path) or ".", mode=0o700, exist_ok=True)
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            import fcntl
        except ImportError:
            return self
        mode = (fcntl.LOCK_EX if self.exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                fcntl.flock(self.fd, mode)
                return self
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    self.fd = None
                    raise IndexUnavailable(f"semantic index {self.path} stayed locked for {self.timeout_s:g} s") from None
                time.sleep(0.01)

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor releases the flock
            self.fd = None

    def generation(self) -> int:
        if self.fd is None:
            return 0
        try:
            return int(os.pread(self.fd, 32, 0).strip() or 0)
        except ValueError:
            return 0

    def bump(self) -> int:
        if self.fd is None:
            # No file, no generations (a server): counting one made every use after a write
            # reconnect, a new HttpClient each time (~0.2-0.5 s).
            return self.generation()
        value = self.generation() + 1
        os.pwrite(self.fd, f"{value:<31}\n".encode(), 0)
        return value
