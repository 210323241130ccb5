"""Looking at and stopping the memory service from outside (status, doctor, uninstall, the
viewer, tests). psutil lives here, off the hook path."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from typing import Any

import psutil

from claude_mem.processes.census import alive
from claude_mem.service import client, protocol


@dataclass
class ServiceState:
    running: bool  # a process holds the service lock
    pid: int | None = None
    rss_bytes: int | None = None
    uptime_s: float | None = None
    answering: bool = False  # it answered a status request in time
    index_lag: int | None = None  # rows SQLite has and the index does not yet
    requests: int | None = None
    last_index_error: str | None = None
    index_job: dict[str, Any] | None = None  # the indexing under way (progress.py): what, done of total, rate, time left
    stale_files: tuple[str, ...] = ()  # socket or info file left by a service that is gone

    def as_dict(self) -> dict[str, Any]:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def _pid(data_dir: str) -> int | None:
    """The service's pid, written into its lock file as soon as it holds the lock (its info file
    comes only once it listens, after loading its model)."""
    try:
        with open(protocol.lock_path(data_dir), encoding="ascii") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None


def _process(pid: Any) -> psutil.Process | None:
    """The service's process, if `pid` is one (a reused pid running something else is not)."""
    try:
        proc = psutil.Process(int(pid))
        cmd = proc.cmdline()
    except (psutil.Error, TypeError, ValueError):
        return None
    # `python -m claude_mem service` as started on demand, or `claude-mem service` run by hand.
    ours = any(name in part for part in cmd[:3] for name in ("claude_mem", "claude-mem"))
    return proc if ours and "service" in cmd else None


def state(data_dir: str, *, timeout_s: float = 3.0) -> ServiceState:
    if not client.running(data_dir):
        leftovers = tuple(p for p in (protocol.socket_path(data_dir), protocol.info_path(data_dir)) if os.path.exists(p))
        return ServiceState(running=False, stale_files=leftovers)
    found = ServiceState(running=True, pid=_pid(data_dir))
    proc = _process(found.pid)
    if proc is not None:
        with contextlib.suppress(psutil.Error):
            found.rss_bytes = proc.memory_info().rss
            found.uptime_s = round(time.time() - proc.create_time(), 1)
    try:
        status = client.call(data_dir, "status", timeout_s=timeout_s, start=False)
    except (client.ServiceUnavailable, client.ServiceError):
        return found
    found.answering = True
    found.index_lag = status.get("index_lag")
    found.requests = status.get("requests")
    found.last_index_error = (status.get("index") or {}).get("last_error")
    found.index_job = (status.get("index") or {}).get("job")
    return found


def stop_service(data_dir: str, timeout_s: float = 10.0) -> int | None:
    """Stop the running service: asked first, then SIGTERM, then SIGKILL. Returns its pid (None
    if none was running)."""
    if not client.running(data_dir):
        remove_stale_files(data_dir)
        return None
    pid = _pid(data_dir)
    proc = _process(pid)
    asked = False
    with contextlib.suppress(client.ServiceUnavailable, client.ServiceError):
        client.call(data_dir, "stop", timeout_s=2.0, start=False)
        asked = True
    # One that did not take the request is still loading (or hung): a signal at once.
    if not (asked and _wait_gone(data_dir, proc, timeout_s / 2)):
        for signal_name in ("terminate", "kill"):
            if proc is not None:
                with contextlib.suppress(psutil.Error):
                    getattr(proc, signal_name)()
            if _wait_gone(data_dir, proc, timeout_s / 4):
                break
    remove_stale_files(data_dir)
    return pid


def remove_stale_files(data_dir: str) -> list[str]:
    """The socket and info file of a service that is gone (never those of a live one)."""
    if client.running(data_dir):
        return []
    removed = []
    for path in (protocol.socket_path(data_dir), protocol.info_path(data_dir)):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
            removed.append(path)
    return removed


def _wait_gone(data_dir: str, proc: psutil.Process | None, timeout_s: float) -> bool:
    """The lock released and the process ended (it tears down after letting go of the lock)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not client.running(data_dir) and (proc is None or not alive(proc)):
            return True
        time.sleep(0.05)
    return not client.running(data_dir) and (proc is None or not alive(proc))

