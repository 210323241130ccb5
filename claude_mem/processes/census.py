"""Which running processes are ours, and stopping them. psutil lives here, off the hook path.

An observer process is a Claude CLI a worker started, or anything that CLI started: each carries
OBSERVER_ENV (a unique id per CLI, set by the worker, inherited by children) and runs as this user,
so no user `claude` process is ever mistaken for one. The CLIs of a data folder work in its
`observer` folder. A live worker is known by pid AND process create time: a reused pid is not ours.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import psutil

OBSERVER_ENV = "CLAUDE_MEM_OBSERVER_ID"


def observer_dir(data_dir: str) -> str:
    """Where a data folder's observer CLIs work (and keep their conversations, out of the user's `claude --resume`)."""
    return os.path.join(data_dir, "observer")


def alive(proc: psutil.Process) -> bool:
    """Running and not a zombie (a dead child nobody has reaped yet still has a pid)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def same_process(pid: int, create_time: float) -> bool:
    """The process `pid` is the one created at `create_time` (not a later one given its pid)."""
    try:
        return abs(psutil.Process(pid).create_time() - create_time) < 0.01
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def observer_processes(*, observer_id: str | None = None, data_dir: str | None = None,
                       candidates: Iterable[psutil.Process] | None = None) -> list[psutil.Process]:
    """Observer processes among `candidates` (default: all): one observer's with `observer_id`,
    the CLIs of a data folder with `data_dir`."""
    uid = os.getuid()
    folder = os.path.realpath(observer_dir(data_dir)) if data_dir is not None else None
    found = []
    for proc in candidates if candidates is not None else psutil.process_iter():
        try:
            if proc.pid == os.getpid() or proc.uids().real != uid:
                continue
            mark = proc.environ().get(OBSERVER_ENV)
            if not mark or (observer_id is not None and mark != observer_id):
                continue
            if folder is not None and os.path.realpath(proc.cwd()) != folder:
                continue
            found.append(proc)
        except (psutil.Error, OSError):
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
    """The data folder's observer CLIs whose worker is gone."""
    return [p for p in observer_processes(data_dir=data_dir) if not _has_live_worker_ancestor(p)]


def terminate(procs: list[psutil.Process], grace_s: float = 3.0) -> int:
    """SIGTERM each, SIGKILL what is left after `grace_s`; returns how many there were."""
    for p in procs:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, left = psutil.wait_procs(procs, timeout=grace_s)
    for p in left:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(left, timeout=grace_s)
    return len(procs)


def own_rss() -> int | None:
    """This process's resident memory in bytes, if it can be read."""
    try:
        return int(psutil.Process().memory_info().rss)
    except psutil.Error:
        return None
