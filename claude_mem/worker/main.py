"""A session's worker: the session's lock first, then the imports. The hooks start it as
`claude-mem worker --session ID`, which entry.py hands to `main` without click; `claude-mem
worker` with other options (cli/worker.py) runs it through `run` too.

A burst of tool calls makes racing hooks start several workers for one session, of which one
takes the lock. Each used to import click, the loop and claude-agent-sdk (~40 MiB) before trying
it, and a few of them at once, exiting, are part of the peak bench/footprint.py measures; a
process that finds the lock taken now exits at the interpreter's own size.
"""

from __future__ import annotations

import sys

from claude_mem import settings
from claude_mem.kinds import StopReason
from claude_mem.worker import spawn


def main(session_id: str) -> int:
    try:
        config = settings.load(strict=True)
    except settings.SettingsError as exc:
        print(f"Error: bad setting: {exc}", file=sys.stderr)
        return 1
    return run(config, session_id)


def run(config: settings.Config, session_id: str, *, idle_s: float | None = None, drain: bool = False,
        synthesizer: str | None = None) -> int:
    """The worker for `session_id` (also `claude-mem worker` with its options): 0 when it ran or
    another one holds the session, 1 when the database is too new for this version."""
    config.ensure_dirs()
    lock_fd = spawn.acquire_lock(config.workers_dir, session_id)
    if lock_fd is None:
        print(StopReason.BUSY, file=sys.stderr)
        return 0
    # Past here the lock is the worker's: an exception ends the process, and the kernel drops it.
    from claude_mem.store.db import SchemaTooNewError, connect

    try:
        connect(config.db_path).close()  # created and migrated before the loop reads it
    except SchemaTooNewError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    from claude_mem.worker.sdk_import import import_sdk_without_mcp

    import_sdk_without_mcp()  # ~45 MiB less in every session's worker
    from claude_mem.worker.loop import run_worker

    reason = run_worker(config, session_id, idle_s=idle_s, drain=drain, synthesizer=synthesizer, lock_fd=lock_fd)
    if reason is StopReason.BUSY:
        print(reason, file=sys.stderr)
    return 0
