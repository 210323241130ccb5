"""Finding our processes: live workers, stale worker files, orphaned observer CLIs.

psutil lives here, off the hook path. A worker is identified by pid AND process create time
(a reused pid is not ours); an observer CLI by its working directory, which is always
`<data dir>/observer` (set by the worker), so no user `claude` process is ever mistaken for one.
"""

from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass
from typing import Any

import psutil

from claude_mem.worker import spawn


@dataclass
class WorkerInfo:
    session_id: str
    pid: int
    create_time: float
    started_at_epoch: int
    synthesizer: str | None
    alive: bool
    info_file: str

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "info_file"}


def alive(proc: psutil.Process) -> bool:
    """Running and not a zombie (a dead child nobody has reaped yet still has a pid)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _process_matches(pid: int, create_time: float) -> bool:
    try:
        return abs(psutil.Process(pid).create_time() - create_time) < 0.01
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def list_workers(workers_dir: str) -> list[WorkerInfo]:
    found = []
    for path in sorted(glob.glob(os.path.join(workers_dir, "*.json"))):
        try:
            with open(path, encoding="utf-8") as fh:
                info = json.load(fh)
            session_id, pid, create_time = info["session_id"], int(info["pid"]), float(info["create_time"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        alive = _process_matches(pid, create_time) and spawn.worker_alive(workers_dir, session_id)
        found.append(WorkerInfo(session_id, pid, create_time, int(info.get("started_at_epoch") or 0),
                                info.get("synthesizer"), alive, path))
    return found


def stale_lock_files(workers_dir: str) -> list[str]:
    """Lock files nobody holds. Harmless (a lock cannot outlive its process), but clutter."""
    stale = []
    for path in glob.glob(os.path.join(workers_dir, "*.lock")):
        fd = os.open(path, os.O_RDONLY)
        try:
            import fcntl

            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            stale.append(path)
        finally:
            os.close(fd)
    return stale


def observer_processes(data_dir: str) -> list[psutil.Process]:
    observer_dir = os.path.realpath(os.path.join(data_dir, "observer"))
    found = []
    for proc in psutil.process_iter(["pid", "cwd"]):
        try:
            cwd = proc.info.get("cwd")
            if cwd and os.path.realpath(cwd) == observer_dir:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def _has_live_worker_ancestor(proc: psutil.Process) -> bool:
    try:
        for parent in proc.parents():
            cmd = " ".join(parent.cmdline())
            if "claude_mem" in cmd and " worker" in cmd:
                return True
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    return False


def orphaned_observers(data_dir: str) -> list[psutil.Process]:
    """Observer CLI processes whose worker is gone."""
    return [p for p in observer_processes(data_dir) if not _has_live_worker_ancestor(p)]


def terminate(procs: list[psutil.Process], grace_s: float = 3.0) -> int:
    for p in procs:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace_s)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=grace_s)
    return len(procs)


def our_processes(data_dir: str) -> list[psutil.Process]:
    """Every worker, memory service or observer process of this data dir still running (for leak checks)."""
    procs = observer_processes(data_dir)
    for proc in psutil.process_iter(["pid", "cmdline", "environ"]):
        try:
            cmd = proc.info.get("cmdline") or []
            if "claude_mem" in cmd and ("worker" in cmd or "service" in cmd):
                env = proc.info.get("environ") or {}
                if env.get("CLAUDE_MEM_DATA_DIR", "") in ("", data_dir) or proc.cwd() == data_dir:
                    procs.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return procs
