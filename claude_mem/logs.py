"""One-line log records in `<data dir>/logs/claude-mem.log`.

Messages pass through the redactor: an exception text may quote what it choked on.
On the hook path: standard library only.
"""

from __future__ import annotations

import os
import sys
import time

MAX_LOG_BYTES = 5 * 1024 * 1024


def log_line(logs_dir: str | None, source: str, message: str, *, stderr: bool = False) -> None:
    from claude_mem.payload import redact

    message = redact(" ".join(str(message).split()))[:2000]
    if stderr:
        try:
            sys.stderr.write(f"claude-mem {source}: {message}\n")
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
    if not logs_dir:
        return
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    path = os.path.join(logs_dir, "claude-mem.log")
    try:
        os.makedirs(logs_dir, mode=0o700, exist_ok=True)
        try:
            if os.path.getsize(path) > MAX_LOG_BYTES:
                os.replace(path, path + ".1")
        except OSError:
            pass
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{stamp} pid={os.getpid()} {source}: {message}\n".encode("utf-8", "replace"))
        finally:
            os.close(fd)
    except OSError:
        pass  # a full disk must not turn a log line into a failure


def read_tail(logs_dir: str, lines: int = 50) -> list[str]:
    path = os.path.join(logs_dir, "claude-mem.log")
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read().splitlines()[-lines:]
    except OSError:
        return []
