"""The worker and its upkeep: worker, service, workers, retry, reprocess, doctor (doctor.py's checks, printed), demo."""

from __future__ import annotations

import contextlib
import os
import sys

import click

from claude_mem.cli.app import AppContext, NotFound, cli, emit_json, pass_app
from claude_mem.cli.params import json_option
from claude_mem.kinds import StopReason


@cli.command("worker")
@click.option("--session", "session_id", required=True, help="Claude Code session id.")
@click.option("--idle", "idle_s", type=click.FloatRange(min=0), help="Exit after this many idle seconds (default: setting worker_idle_s).")
@click.option("--drain", is_flag=True, help="Exit as soon as the session's queue is empty.")
@click.option("--synthesizer", type=click.Choice(["auto", "model", "heuristic"]), help="Override the synthesizer setting.")
@pass_app
def worker_run(app: AppContext, session_id: str, idle_s: float | None, drain: bool, synthesizer: str | None) -> None:
    """Run the session's worker in the foreground (hooks start it detached)."""
    from claude_mem.worker.main import run

    code = run(app.config, session_id, idle_s=idle_s, drain=drain, synthesizer=synthesizer)
    if code:
        sys.exit(code)


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
@json_option
@pass_app
def workers_list(app: AppContext, as_json: bool) -> None:
    """List live workers."""
    from claude_mem.worker.spawn import list_workers

    live = [w for w in list_workers(app.config.workers_dir) if w.alive]
    if as_json:
        emit_json([w.as_dict() for w in live])
        return
    from claude_mem.cli.format import Column, echo_table
    from claude_mem.text.clock import local_stamp

    echo_table([Column("PID", ">"), Column("SYNTHESIZER"), Column("STARTED"), Column("SESSION")],
               [(w.pid, w.synthesizer, local_stamp(w.started_at_epoch), w.session_id) for w in live], empty="no live workers")


@cli.command("retry")
@click.option("--session", "session_id", help="Only this session.")
@click.argument("ids", nargs=-1, type=int)
@json_option
@pass_app
def retry(app: AppContext, session_id: str | None, ids: tuple[int, ...], as_json: bool) -> None:
    """Re-queue skipped events (all, a session's, or the given queue ids)."""
    from claude_mem.store import queue
    from claude_mem.store.db import transaction

    conn = app.db()
    with transaction(conn):
        before = queue.counts_by_status(conn, session_id)[queue.QueueStatus.SKIPPED]
        sessions = queue.retry_skipped(conn, session_id=session_id, ids=list(ids) or None)
        after = queue.counts_by_status(conn, session_id)[queue.QueueStatus.SKIPPED]
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
@json_option
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
    left = waiting[queue.QueueStatus.PENDING] + waiting[queue.QueueStatus.PROCESSING]
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


def _reprocess_in_foreground(app: AppContext, session_id: str, total: int, as_json: bool) -> StopReason:
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
                done.advance(max(0, total - counts[queue.QueueStatus.PENDING] - counts[queue.QueueStatus.PROCESSING] - done.done))
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
        if reason is not StopReason.SIGNAL:
            bar.complete()
    if reason is StopReason.SIGNAL:
        say_interrupted(f"the batch under way went back to the queue; {left}")
    return reason


def _start_workers(app: AppContext, sessions: list[str]) -> None:
    from claude_mem.worker.stranded import start_workers

    for line in start_workers(app.config, sessions):
        click.echo(line, err=True)


@cli.command("doctor", short_help="Check everything; --fix repairs.")
@click.option("--fix", is_flag=True, help="Repair what can be repaired, and say what was done.")
@json_option
@pass_app
def doctor(app: AppContext, fix: bool, as_json: bool) -> None:
    """Check the database, workers, locks, observer processes, spool and semantic index.

    Exits 1 when a problem is left unrepaired."""
    from claude_mem.cli.progress import Bar
    from claude_mem.doctor import diagnose

    conn = app.db()
    with Bar("indexing the missing rows", as_json) as bar:
        findings, said = diagnose(app.config, conn, fix=fix, index_progress=bar.progress)
    for line in said:
        click.echo(line, err=True)
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
