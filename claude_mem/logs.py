"""One-line log records in `<data dir>/logs/claude-mem.log`.

Messages pass through the redactor: an exception text may quote what it choked on.
On the hook path: standard library only.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TextIO

MAX_LOG_BYTES = 5 * 1024 * 1024


def log_line(logs_dir: str | None, source: str, message: str, *, stderr: bool = False) -> None:
    from claude_mem.text.redact import redact

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
    """The last `lines` lines of the log, reading only the end of the file (the viewer polls this;
    the log grows to MAX_LOG_BYTES before it rotates)."""
    path = os.path.join(logs_dir, "claude-mem.log")
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            chunk = min(size, max(4096, lines * 512))
            while True:
                fh.seek(size - chunk)
                data = fh.read(chunk)
                if data.count(b"\n") > lines or chunk == size:
                    break
                chunk = min(size, chunk * 4)
    except OSError:
        return []
    text = data.decode("utf-8", "replace").splitlines()
    if chunk < size:
        text = text[1:]  # the first line of the window may be cut
    return text[-lines:]


def follow(fh: TextIO, path: str, emit: Callable[[str], None], poll_s: float = 0.2) -> None:
    """Hand `emit` the lines appended to the open log `fh` until Ctrl-C, reopening `path` when the log is
    rotated. Reading goes on from where the tail ended, so no line written meanwhile is lost."""
    inode = os.fstat(fh.fileno()).st_ino
    pending = ""
    try:
        while True:
            chunk = fh.read()
            if chunk:
                pending += chunk
                *lines, pending = pending.split("\n")
                for line in lines:
                    emit(line)
                continue
            try:
                rotated = os.stat(path).st_ino != inode
            except FileNotFoundError:
                rotated = False  # between the rename and the next write: keep reading the old file
            if rotated:
                fh.close()
                fh = open(path, encoding="utf-8", errors="replace")  # noqa: SIM115 (closed in finally)
                inode = os.fstat(fh.fileno()).st_ino
                continue
            time.sleep(poll_s)
    except KeyboardInterrupt:
        pass
    finally:
        fh.close()
