"""What `claude-mem doctor` checks, and what `--fix` repairs: the database, stale worker files and
locks, orphaned observer CLIs, queued work no worker takes, model outages, skipped events, the
spool, the memory service, the MCP server's description and the semantic index's drift. Beside status.py, whose report it
reads first (before any repair changes what it says). Core, not CLI: no click here; the command
only prints the findings.

A finding is {"check", "ok", "detail", "fixed"}: `fixed` says what a repair did (empty: nothing).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from claude_mem.settings import Config
from claude_mem.status import report
from claude_mem.store.db import quick_check
from claude_mem.text.clock import local_stamp

if TYPE_CHECKING:
    from claude_mem.progress import Progress

Finding = dict[str, Any]


def finding(check: str, ok: bool, detail: str, fixed: str = "") -> Finding:
    return {"check": check, "ok": ok, "detail": detail, "fixed": fixed}


def diagnose(config: Config, conn: sqlite3.Connection, *, fix: bool = False,
             index_progress: Callable[[], Progress] | None = None) -> tuple[list[Finding], list[str]]:
    """Every check, in order, repairing with `fix`; and what was said on the way (a repair left
    to the user). `index_progress` gives the Progress that indexing the missing rows advances."""
    info = report(config, conn, revive=False, outages=100, service_timeout_s=5.0)
    said: list[str] = []
    integrity = quick_check(conn)
    return [
        finding("integrity", integrity == "ok", integrity),
        _migrations(conn),
        *_worker_files(config, fix),
        _orphaned_observers(config, fix),
        _stranded(config, conn, fix, said),
        _outages(info["model_outages"]),
        _skipped(info["skipped"]),
        _withheld(info["withheld"]),
        _spool(config, conn, fix),
        _service(config, info["service"], fix),
        _mcp_server(config, fix),
        _index(config, conn, info["index"], fix, index_progress),
        *_codex(info["codex"]),
    ], said


def _codex(codex: dict[str, Any] | None) -> list[Finding]:
    """Registered with the Codex CLI: every hook there and trusted (Codex skips an untrusted one
    silently), and the MCP server. Nothing to say when Codex is not set up."""
    if codex is None:
        return []
    if codex["problem"]:
        return [finding("codex", False, codex["problem"])]
    whole = codex["hooks"] == codex["trusted"] == codex["expected"] and codex["mcp_server"]
    detail = (f"{codex['hooks']} of {codex['expected']} hooks in {codex['home']}, {codex['trusted']} trusted,"
              f" {'the' if codex['mcp_server'] else 'no'} MCP server")
    return [finding("codex", whole, detail if whole else detail + "; `claude-mem install --codex` sets it right")]


def _migrations(conn: sqlite3.Connection) -> Finding:
    from claude_mem.store.db import latest_version, schema_version

    version, latest = schema_version(conn), latest_version()
    return finding("migrations", version == latest, f"schema {version} of {latest}")


def _worker_files(config: Config, fix: bool) -> list[Finding]:
    from claude_mem.processes import unheld_locks
    from claude_mem.worker.spawn import list_workers

    dead = [w for w in list_workers(config.workers_dir) if not w.alive]
    fixed = f"removed {_remove([w.info_file for w in dead])} stale worker file(s)" if dead and fix else ""
    files = finding("stale worker files", not dead, f"{len(dead)} for dead workers", fixed)
    stale = unheld_locks(config.workers_dir)
    fixed = f"removed {_remove(stale)} unheld lock file(s)" if stale and fix else ""
    return [files, finding("stale locks", not stale, f"{len(stale)} lock file(s) held by no process", fixed)]


def _orphaned_observers(config: Config, fix: bool) -> Finding:
    from claude_mem.processes import census

    orphans = census.orphaned_observers(config.data_dir)
    fixed = f"stopped {census.terminate(orphans)} orphaned observer process(es)" if orphans and fix else ""
    return finding("orphaned observers", not orphans, f"{len(orphans)} observer CLI process(es) without a worker", fixed)


def _stranded(config: Config, conn: sqlite3.Connection, fix: bool, said: list[str]) -> Finding:
    from claude_mem.store import queue
    from claude_mem.store.db import transaction
    from claude_mem.worker import stranded

    # Due rows only: events waiting out an outage's backoff need no worker until they are due.
    waiting = stranded.stranded_sessions(conn, config.workers_dir, grace_ms=0, limit=10_000)
    stuck = queue.counts_by_status(conn)[queue.QueueStatus.PROCESSING]
    fixed = ""
    if waiting and fix:
        with transaction(conn):
            for sid in waiting:
                queue.release_processing(conn, sid)
        said.extend(stranded.start_workers(config, waiting))
        fixed = f"started workers for {len(waiting)} session(s)"
    return finding("queued work without a worker", not waiting,
                   f"{len(waiting)} session(s) with events due and no live worker ({stuck} processing)", fixed)


def _outages(outages: list[dict[str, Any]]) -> Finding:
    from claude_mem.store.outages import describe

    stalled = [o for o in outages if o["waiting"]]
    return finding("model outages", not stalled,
                   "; ".join(f"session {o['claude_session_id'][:12]}: {describe(o, local_stamp)}" for o in stalled[:3])
                   or "the model answers (or no session is waiting for it)")


def _skipped(skipped: dict[str, Any]) -> Finding:
    return finding("skipped events", not skipped["count"],
                   f"{skipped['count']} event(s) skipped after max_attempts failures of their own"
                   + (f" (last: {skipped['last_error']}); `claude-mem retry` re-queues them" if skipped["count"] else ""))


def _withheld(counts: dict[str, Any]) -> Finding:
    """What the write guard withheld (issue 47): nothing broken, a person's call to look at."""
    if not counts["total"]:
        return finding("withheld memories", True, "none: the write guard found no text addressed to AI assistants")
    sources = ", ".join(f"{source} {n}" for source, n in counts["by_source"].items())
    return finding("withheld memories", True, f"{counts['total']} withheld by the write guard (from {sources}); `claude-mem"
                   " withheld` lists them, `claude-mem release REF` gives one back after a person looked")


def _spool(config: Config, conn: sqlite3.Connection, fix: bool) -> Finding:
    from claude_mem.store.spool import drain_spool, spooled

    waiting = spooled(config)
    fixed = f"stored {drain_spool(config, conn)} spooled event(s)" if waiting and fix else ""
    return finding("spool", not waiting, f"{len(waiting)} event(s) waiting in {config.spool_dir}", fixed)


def _service(config: Config, found: dict[str, Any], fix: bool) -> Finding:
    """A service that is gone but left its socket or info file, or one that holds the lock and
    does not answer (hung): --fix removes the files, or ends the service (the next request
    starts a fresh one, which catches up from SQLite)."""
    from claude_mem.service import control

    if not found["running"]:
        if not found["stale_files"]:
            return finding("memory service", True, "not running (started on demand)")
        fixed = f"removed {len(control.remove_stale_files(config.data_dir))} stale file(s)" if fix else ""
        return finding("memory service", False, f"not running, but left {', '.join(found['stale_files'])}", fixed)
    if found["answering"]:
        return finding("memory service", True, f"pid {found['pid']} answering, index lag {found['index_lag']}")
    fixed = f"stopped the hung service (pid {control.stop_service(config.data_dir)})" if fix else ""
    return finding("memory service", False, f"pid {found['pid']} holds the lock but did not answer within 5 s", fixed)


def _mcp_server(config: Config, fix: bool) -> Finding:
    """`claude-mem mcp` answers Claude Code's first messages from the description the real
    server wrote (mcp/shim.py); without a current one they wait for the memory service to start,
    and Claude Code, which does not wait, may start the session without the memory tools.
    --fix writes it (the service also does, whenever it starts)."""
    from claude_mem.mcp.shim import description_path, read_description

    if read_description(config.data_dir):
        return finding("MCP server", True, "answers Claude Code's probe from its description at once")
    state = "written by other code" if os.path.exists(description_path(config.data_dir)) else "not written yet"
    fixed = ""
    if fix:
        from claude_mem.mcp.host import write_current_description

        write_current_description(config)
        fixed = "wrote the MCP server's description"
    return finding("MCP server", False, f"its description is {state}: Claude Code's probe waits for the memory service", fixed)


def _index(config: Config, conn: sqlite3.Connection, health: dict[str, Any], fix: bool,
           index_progress: Callable[[], Progress] | None) -> Finding:
    """Index drift, as `status` reports it (status.index_health): rows SQLite has and Chroma
    lacks, documents of rows SQLite no longer has. --fix indexes the missing rows and drops the
    stale documents (Index.index_missing), building the index when there is none yet."""
    from claude_mem.index.chroma import IndexUnavailable
    from claude_mem.store.reads import KINDS

    state = health["state"]
    if state == "off":
        return finding("index drift", True, "the semantic index is off (setting semantic_index)")
    if state == "not built":
        ok, detail = health["rows_to_index"] == 0, f"semantic index not built yet ({health['rows_to_index']} rows to index)"
    elif state == "unavailable":
        ok, detail = False, health["reason"]
    else:
        missing, stale, unfilled = (sum(health[k].get(key, 0) for k in KINDS) for key in ("missing", "stale", "unfilled"))
        ok, detail = state == "in sync", (f"{missing} row(s) missing from {health['location']}, documents of {stale} deleted row(s)"
                                          + (f", {unfilled} row(s) without their vectors in SQLite" if unfilled else ""))
    if ok or not fix:
        return finding("index drift", ok, detail)
    from claude_mem.index.embedders import choose
    from claude_mem.index.semantic_index import Index

    try:
        # The store is judged first, as the memory service would: the rows go where it will look.
        choose(config, conn)
        # index_missing may succeed where reading failed: it rebuilds a removed folder.
        done = Index(config).index_missing(conn, index_progress() if index_progress else None)
    except IndexUnavailable as exc:
        return finding("index drift", False, f"{detail}; could not repair: {exc}" if state == "drift" else f"{detail} (could not repair)")
    indexed = sum(done[k] for k in KINDS)
    return finding("index drift", False, detail, f"indexed {indexed} row(s), removed documents of {done['removed']} deleted row(s)")


def _remove(paths: list[str]) -> int:
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return len(paths)
