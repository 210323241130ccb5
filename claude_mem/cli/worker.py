"""The worker and its upkeep: worker, workers, retry, reprocess, doctor."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Any

import click

from claude_mem import settings
from claude_mem.cli import AppContext, NotFound, cli, emit_json, pass_app


@cli.command("worker")
@click.option("--session", "session_id", required=True, help="Claude Code session id.")
@click.option("--idle", "idle_s", type=click.FloatRange(min=0), help="Exit after this many idle seconds (default: setting worker_idle_s).")
@click.option("--drain", is_flag=True, help="Exit as soon as the session's queue is empty.")
@click.option("--synthesizer", type=click.Choice(["auto", "model", "heuristic"]), help="Override the synthesizer setting.")
@pass_app
def worker_run(app: AppContext, session_id: str, idle_s: float | None, drain: bool, synthesizer: str | None) -> None:
    """Run the session's worker in the foreground (hooks start it detached)."""
    from claude_mem.worker.loop import run_worker

    app.db(create=True)
    reason = run_worker(app.config, session_id, idle_s=idle_s, drain=drain, synthesizer=synthesizer)
    if reason.startswith("another worker"):
        click.echo(reason, err=True)


@cli.command("service")
@click.option("--idle", "idle_s", type=click.FloatRange(min=0), help="Exit after this many seconds without a request "
              "(default: setting service_idle_s).")
@click.option("--stop", is_flag=True, help="Ask the running service to stop, and wait until it has.")
@pass_app
def service_run(app: AppContext, idle_s: float | None, stop: bool) -> None:
    """Run the memory service in the foreground (whoever needs it first starts it detached)."""
    if stop:
        from claude_mem.service.control import stop_service

        stopped = stop_service(app.config.data_dir)
        if stopped is None:
            raise NotFound("no memory service is running")
        click.echo(f"stopped the memory service (pid {stopped})")
        return
    from claude_mem.service.server import main as run_service

    sys.exit(run_service(app.config, idle_s=idle_s))


@cli.command("workers")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def workers_list(app: AppContext, as_json: bool) -> None:
    """List live workers."""
    from claude_mem.worker.processes import list_workers

    live = [w for w in list_workers(app.config.workers_dir) if w.alive]
    if as_json:
        emit_json([w.as_dict() for w in live])
        return
    from claude_mem.cli.format import Column, echo_table, local_time

    echo_table([Column("PID", ">"), Column("SYNTHESIZER"), Column("STARTED"), Column("SESSION")],
               [(w.pid, w.synthesizer, local_time(w.started_at_epoch), w.session_id) for w in live], empty="no live workers")


@cli.command("retry")
@click.option("--session", "session_id", help="Only this session.")
@click.argument("ids", nargs=-1, type=int)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def retry(app: AppContext, session_id: str | None, ids: tuple[int, ...], as_json: bool) -> None:
    """Re-queue skipped events (all, a session's, or the given queue ids)."""
    from claude_mem.store import queue
    from claude_mem.store.db import transaction

    conn = app.db()
    with transaction(conn):
        before = queue.counts_by_status(conn, session_id)["skipped"]
        sessions = queue.retry_skipped(conn, session_id=session_id, ids=list(ids) or None)
        after = queue.counts_by_status(conn, session_id)["skipped"]
    if not sessions:
        raise NotFound("nothing to retry: no skipped events match")
    if as_json:
        emit_json({"requeued": before - after, "sessions": sessions})
    else:
        click.echo(f"re-queued {before - after} event(s) in {len(sessions)} session(s)")
    _start_workers(app, sessions)


@cli.command("reprocess")
@click.option("--session", "session_id", required=True, help="The session whose heuristic memories to redo.")
@click.option("--wait", is_flag=True, help="Process in the foreground and wait.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def reprocess(app: AppContext, session_id: str, wait: bool, as_json: bool) -> None:
    """Send events the heuristic synthesizer handled through the model again, and the events
    that wait for tomorrow's observer budget (setting observer_daily_tokens) now.

    With --wait, on a terminal a bar shows how many are done; Ctrl-C leaves the rest queued, and
    running it again goes on with them."""
    from claude_mem.store import budget, memories, queue
    from claude_mem.store.db import transaction

    conn = app.db()
    with transaction(conn):
        n = queue.requeue_heuristic(conn, session_id)
        if n:
            memories.delete_heuristic(conn, session_id)
        n += budget.requeue_waiting(conn, session_id)
    waiting = queue.counts_by_status(conn, session_id)
    left = waiting["pending"] + waiting["processing"]
    if not n and not (wait and left):
        raise NotFound(f"nothing to reprocess: no heuristic events in session {session_id}, none waiting for the budget")
    if not as_json:
        click.echo(f"re-queued {n} event(s) of {session_id} for the model" if n else
                   f"going on with the {left} event(s) of {session_id} still queued for the model")
    if wait:
        reason = _reprocess_in_foreground(app, session_id, left, as_json)
        if as_json:
            emit_json({"requeued": n, "session": session_id, "worker": reason})
    else:
        if as_json:
            emit_json({"requeued": n, "session": session_id})
        _start_workers(app, [session_id])


def _reprocess_in_foreground(app: AppContext, session_id: str, total: int, as_json: bool) -> str:
    """Run the session's worker here until its queue is empty, a bar following the events done.
    Ctrl-C (the worker's own SIGINT handling) hands its batch back: the rest stay queued."""
    import threading

    from claude_mem.cli.progress import Bar, bars_wanted, say_interrupted
    from claude_mem.progress import Progress
    from claude_mem.store import queue
    from claude_mem.store.db import connect
    from claude_mem.worker.loop import run_worker

    finished = threading.Event()
    done = Progress("events redone by the model", total)

    def follow(bar: Bar) -> None:  # its own connection: the worker's is busy in this process's main thread
        conn = connect(app.config.db_path)
        try:
            while not finished.wait(0.5):
                counts = queue.counts_by_status(conn, session_id)
                done.advance(max(0, total - counts["pending"] - counts["processing"] - done.done))
                bar.update(done.as_dict())
        finally:
            conn.close()

    left = (f"the events not redone yet stay queued for the model (a worker takes them at the next hook or `claude-mem"
            f" status`); `claude-mem reprocess --session {session_id} --wait` goes on with them")
    with Bar("reprocessing", as_json, unit="events", interrupted={"reprocessing": left, done.what: left}) as bar, \
            open(os.devnull, "w", encoding="utf-8") as sink:
        watcher = threading.Thread(target=follow, args=(bar,), name="reprocess-progress", daemon=True)
        watcher.start()
        # The worker narrates on stdout: with --json on stderr (stdout stays one JSON document),
        # under a bar to the log only.
        narration = sys.stderr if as_json else sink if bars_wanted(as_json) else None
        try:
            with contextlib.redirect_stdout(narration) if narration else contextlib.nullcontext():
                reason = run_worker(app.config, session_id, drain=True, synthesizer="model")
        finally:
            finished.set()
            watcher.join()
        if reason != "signal":
            bar.complete()
    if reason == "signal":
        say_interrupted(f"the batch under way went back to the queue; {left}")
    return reason


def _start_workers(app: AppContext, sessions: list[str]) -> None:
    from claude_mem.worker import spawn

    config = app.config
    if not config.worker_autostart:
        click.echo(f"worker_autostart is off: run `claude-mem worker --session ID` for {', '.join(sessions)}", err=True)
        return
    for sid in sessions:
        spawn.ensure_worker(config.data_dir, config.workers_dir, config.logs_dir, sid, config.max_workers)


@cli.command("doctor", short_help="Check everything; --fix repairs.")
@click.option("--fix", is_flag=True, help="Repair what can be repaired, and say what was done.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@pass_app
def doctor(app: AppContext, fix: bool, as_json: bool) -> None:
    """Check the database, workers, locks, observer processes, spool and semantic index.

    Exits 1 when a problem is left unrepaired."""
    from claude_mem.cli.format import local_time
    from claude_mem.status import report
    from claude_mem.store import queue
    from claude_mem.store.db import latest_version, transaction
    from claude_mem.store.outages import describe
    from claude_mem.store.spool import drain_spool, spooled
    from claude_mem.worker import processes, stranded

    config = app.config
    conn = app.db()
    # Read before any repair below (stale files removed, workers started) changes what it says.
    info = report(config, conn, revive=False, outages=100, service_timeout_s=5.0)
    findings: list[dict] = []

    def note(check: str, ok: bool, detail: str, fixed: str = "") -> None:
        findings.append({"check": check, "ok": ok, "detail": detail, "fixed": fixed})

    integrity = conn.execute("PRAGMA quick_check").fetchone()[0]
    note("integrity", integrity == "ok", integrity)
    version, latest = conn.execute("PRAGMA user_version").fetchone()[0], latest_version()
    note("migrations", version == latest, f"schema {version} of {latest}")

    workers = processes.list_workers(config.workers_dir)
    dead = [w for w in workers if not w.alive]
    fixed = ""
    if dead and fix:
        _remove([w.info_file for w in dead])
        fixed = f"removed {len(dead)} stale worker file(s)"
    note("stale worker files", not dead, f"{len(dead)} for dead workers", fixed)

    stale_locks = processes.stale_lock_files(config.workers_dir)
    fixed = ""
    if stale_locks and fix:
        _remove(stale_locks)
        fixed = f"removed {len(stale_locks)} unheld lock file(s)"
    note("stale locks", not stale_locks, f"{len(stale_locks)} lock file(s) held by no process", fixed)

    orphans = processes.orphaned_observers(config.data_dir)
    fixed = ""
    if orphans and fix:
        fixed = f"stopped {processes.terminate(orphans)} orphaned observer process(es)"
    note("orphaned observers", not orphans, f"{len(orphans)} observer CLI process(es) without a worker", fixed)

    # Due rows only: events waiting out an outage's backoff need no worker until they are due.
    waiting = stranded.stranded_sessions(conn, config.workers_dir, grace_ms=0, limit=10_000)
    stuck = queue.counts_by_status(conn)["processing"]
    fixed = ""
    if waiting and fix:
        with transaction(conn):
            for sid in waiting:
                queue.release_processing(conn, sid)
        _start_workers(app, waiting)
        fixed = f"started workers for {len(waiting)} session(s)"
    note("queued work without a worker", not waiting,
         f"{len(waiting)} session(s) with events due and no live worker ({stuck} processing)", fixed)

    stalled = [o for o in info["model_outages"] if o["waiting"]]
    note("model outages", not stalled,
         "; ".join(f"session {o['claude_session_id'][:12]}: {describe(o, local_time)}" for o in stalled[:3])
         or "the model answers (or no session is waiting for it)")

    skipped = info["skipped"]
    note("skipped events", not skipped["count"],
         f"{skipped['count']} event(s) skipped after max_attempts failures of their own"
         + (f" (last: {skipped['last_error']}); `claude-mem retry` re-queues them" if skipped["count"] else ""))

    waiting_files = spooled(config)
    fixed = ""
    if waiting_files and fix:
        fixed = f"stored {drain_spool(config, conn)} spooled event(s)"
    note("spool", not waiting_files, f"{len(waiting_files)} event(s) waiting in {config.spool_dir}", fixed)

    note(*_service_check(config, info["service"], fix))
    note(*_index_check(app, conn, info["index"], fix, as_json))

    if as_json:
        emit_json(findings)
    else:
        from claude_mem.cli.format import paint, status_colour

        for f in findings:
            mark = "ok" if f["ok"] else ("fixed" if f["fixed"] else "FAIL")
            click.echo(f"{paint(mark.ljust(5), status_colour(mark))} {f['check']}: {f['detail']}"
                       + (f" -> {f['fixed']}" if f["fixed"] else ""))
    if any(not f["ok"] and not f["fixed"] for f in findings):
        sys.exit(1)


def _remove(paths: list[str]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _service_check(config: settings.Config, found: dict[str, Any], fix: bool) -> tuple[str, bool, str, str]:
    """A service that is gone but left its socket or info file, or one that holds the lock and
    does not answer (hung): --fix removes the files, or ends the service (the next request
    starts a fresh one, which catches up from SQLite)."""
    from claude_mem.service import control

    if not found["running"]:
        if not found["stale_files"]:
            return "memory service", True, "not running (started on demand)", ""
        fixed = f"removed {len(control.remove_stale_files(config.data_dir))} stale file(s)" if fix else ""
        return "memory service", False, f"not running, but left {', '.join(found['stale_files'])}", fixed
    if found["answering"]:
        return "memory service", True, f"pid {found['pid']} answering, index lag {found['index_lag']}", ""
    fixed = f"stopped the hung service (pid {control.stop_service(config.data_dir)})" if fix else ""
    return "memory service", False, f"pid {found['pid']} holds the lock but did not answer within 5 s", fixed


def _index_check(app: AppContext, conn: Any, health: dict[str, Any], fix: bool, as_json: bool) -> tuple[str, bool, str, str]:
    """Index drift, as `status` reports it (status.index_health): rows SQLite has and Chroma
    lacks, documents of rows SQLite no longer has. --fix indexes the missing rows and drops the
    stale documents (Index.index_missing), building the index when there is none yet."""
    from claude_mem.cli.params import open_index
    from claude_mem.cli.progress import Bar
    from claude_mem.recall.index import KINDS, IndexUnavailable

    state = health["state"]
    if state == "off":
        return "index drift", True, "the semantic index is off (setting semantic_index)", ""
    if state == "not built":
        ok, detail = health["rows_to_index"] == 0, f"semantic index not built yet ({health['rows_to_index']} rows to index)"
    elif state == "unavailable":
        ok, detail = False, health["reason"]
    else:
        missing, stale = (sum(health[k][key] for k in KINDS) for key in ("missing", "stale"))
        ok, detail = state == "in sync", f"{missing} row(s) missing from {health['location']}, documents of {stale} deleted row(s)"
    if ok or not fix:
        return "index drift", ok, detail, ""
    try:
        # index_missing may succeed where reading failed: it rebuilds a removed folder.
        with Bar("indexing the missing rows", as_json) as bar:
            done = open_index(app.config, create=True, conn=conn).index_missing(conn, bar.progress())  # type: ignore[union-attr]
    except IndexUnavailable as exc:
        return "index drift", False, f"{detail}; could not repair: {exc}" if state == "drift" else f"{detail} (could not repair)", ""
    indexed = sum(done[k] for k in KINDS)
    return "index drift", False, detail, f"indexed {indexed} row(s), removed documents of {done['removed']} deleted row(s)"


@cli.command("demo")
@click.option("--synthesizer", type=click.Choice(["auto", "model", "heuristic"]), default="auto", show_default=True)
@click.option("--keep", is_flag=True, help="Keep the temporary data dir and print where it is.")
def demo(synthesizer: str, keep: bool) -> None:
    """Play a small scripted session through the real hooks and worker, and show what is remembered."""
    import shutil
    import tempfile

    from claude_mem.demo import run_demo

    root = tempfile.mkdtemp(prefix="claude-mem-demo-")
    try:
        run_demo(os.path.join(root, "data"), os.path.join(root, "calc-project"), synthesizer=synthesizer, echo=click.echo)
    except RuntimeError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        from claude_mem.service.control import stop_service

        stop_service(os.path.join(root, "data"))  # the worker started one for this throw-away folder
        if keep:
            click.echo(f"\n(data kept in {root})")
        else:
            shutil.rmtree(root, ignore_errors=True)
