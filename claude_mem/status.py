"""How the installation is doing: one report that `status`, `doctor` and the viewer all read.

Counts, the queue, live workers and the sessions waiting for a worker slot, model outages,
skipped events, the observer's tokens today against its daily budget, the memory service, the
semantic index's drift, what is shared with a team, where a model login would come from, and
the last error. Core, not CLI: no click here; the commands and the viewer only format it.
"""

from __future__ import annotations

import calendar
import sqlite3
import time
from typing import Any

from claude_mem import login
from claude_mem.hosts import codex_cli
from claude_mem.settings import Config
from claude_mem.store import budget, overview, withheld
from claude_mem.store import queue as queue_mod

LOG_LINES_SEARCHED = 500  # for the last error: the log's end, read backwards from the tail


def index_health(config: Config, conn: sqlite3.Connection) -> dict[str, Any]:
    """Rows in SQLite against rows in Chroma; never raises (the index is optional)."""
    from claude_mem.index.chroma import IndexUnavailable
    from claude_mem.index.embedders import choose, in_use
    from claude_mem.index.semantic_index import readable_index

    if not config.semantic_index:
        return {"state": "off"}
    # The model whose vectors recall compares, why, and the one the memory service is switching to.
    choice = choose(config, conn, record=False)
    embedder = {"embedder": in_use(config), "embedder_reason": choice.reason}
    if choice.name != embedder["embedder"]:
        embedder["embedder_next"] = choice.name
    index = readable_index(config)[0]
    if index is None:
        return {"state": "not built", "rows_to_index": overview.indexable_rows(conn), **embedder}
    try:
        drift = index.drift(conn)
    except IndexUnavailable as exc:
        return {"state": "unavailable", "reason": str(exc), "location": index.location, **embedder}
    return {"state": "in sync" if drift["in_sync"] else "drift", "location": index.location, **embedder, **drift}


def sharing(config: Config, health: dict[str, Any] | None) -> dict[str, Any]:
    """What this installation sends to a shared Chroma server (sharing is said, not implied):
    the server, the name teammates see, what was sent, what is kept local."""
    from claude_mem.identity import clean_name, default_name

    url = (config.chroma_url or "").strip()
    out: dict[str, Any] = {"server": url or None, "name": clean_name(config.installation_name) or default_name(),
                           "local_projects": sorted(config.local_projects) if url else []}
    if health and "installation" in health:
        out["installation_id"] = health["installation"]["id"]
    if url and health and "shared" in health:
        out["rows_sent"] = {kind: health[kind]["indexed"] for kind in ("observation", "summary", "prompt")}
        out.update(health["shared"])
    return out


def last_log_error(logs_dir: str) -> dict[str, Any] | None:
    """The log's latest line that speaks of an error: the line, its message, when (ms)."""
    from claude_mem.logs import read_tail

    for line in reversed(read_tail(logs_dir, LOG_LINES_SEARCHED)):
        if "error" not in line.lower():
            continue
        stamp, _, message = line.partition(" ")
        try:
            at = calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")) * 1000
        except ValueError:
            at = 0
        return {"line": line, "message": message, "at_epoch": at}
    return None


def latest_error(conn: sqlite3.Connection, logged: dict[str, Any] | None) -> dict[str, Any] | None:
    """The most recent of: a queue row's failure, a session's model outage, the log's last error
    (`logged`, from last_log_error)."""
    found = [{"source": "log", "message": logged["message"], "at_epoch": logged["at_epoch"], "session_id": None}
             if logged else None]
    row = overview.last_queue_error(conn)
    if row:
        found.append({"source": "queue", "message": row["last_error"], "at_epoch": row["updated_at_epoch"],
                      "session_id": row["session_id"]})
    for outage in overview.model_outages(conn, limit=1):
        found.append({"source": "observer", "message": outage["observer_error"], "at_epoch": outage["observer_error_at_epoch"] or 0,
                      "session_id": outage["claude_session_id"]})
    errors = [e for e in found if e]
    return max(errors, key=lambda e: e["at_epoch"]) if errors else None


def waiting_for_slot(config: Config, conn: sqlite3.Connection, workers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sessions with pending events and no worker while every worker slot is taken, oldest first."""
    from claude_mem.worker import spawn

    if len(workers) < config.max_workers and spawn.slots_in_use(config.workers_dir, config.max_workers) < config.max_workers:
        return []
    live = {w["session_id"] for w in workers}
    return [w for w in queue_mod.waiting_sessions(conn) if w["session_id"] not in live]


def report(config: Config, conn: sqlite3.Connection | None, *, revive: bool = True, index: bool = True,
           outages: int = 5, service_timeout_s: float = 3.0) -> dict[str, Any]:
    """Everything `status` shows (`conn` None: no database yet). `revive` starts workers for
    events no worker is left to take (whoever asks may be what runs next); `index`
    opens the semantic index to measure its drift (seconds on a cold start; the viewer skips it)."""
    from claude_mem.service import control, notices
    from claude_mem.worker.spawn import list_workers

    info: dict[str, Any] = {"data_dir": config.data_dir, "database": config.db_path, "database_exists": conn is not None,
                            "model": config.model, "synthesizer": config.synthesizer, "credentials": login.describe(),
                            "database_bytes": overview.database_bytes(config.db_path), "codex": codex_cli.state()}
    info.update(counts={}, queue={}, model_outages=[], skipped={"count": 0}, last_queue_error=None, index=None, observer_budget=None,
                sharing=sharing(config, None), workers_started=[], withheld={"total": 0, "by_source": {}, "by_project": {}})
    if conn is not None:
        if revive:
            from claude_mem.worker import stranded

            info["workers_started"] = stranded.revive(config, conn)
        info["counts"] = overview.counts(conn)
        info["queue"] = queue_mod.counts_by_status(conn)
        info["model_outages"] = overview.model_outages(conn, limit=outages)
        info["skipped"] = overview.skipped_events(conn)
        info["withheld"] = withheld.counts(conn)  # what the write guard withheld, and from where (issue 47)
        info["last_queue_error"] = overview.last_queue_error(conn)
        info["observer_budget"] = budget.state(conn, config.observer_daily_tokens)
        if index:
            info["index"] = index_health(config, conn)
            info["sharing"] = sharing(config, info["index"])
    info["workers"] = [w.as_dict() for w in list_workers(config.workers_dir) if w.alive]
    info["waiting_sessions"] = waiting_for_slot(config, conn, info["workers"]) if conn is not None else []
    info["service"] = control.state(config.data_dir, timeout_s=service_timeout_s).as_dict()
    if conn is not None and config.semantic_index and info["service"]["index_lag"] is None:
        info["service"]["index_lag"] = overview.unindexed_rows(conn)  # the service is away: what its next start catches up
    info["service"]["notices_waiting"] = notices.waiting(config.data_dir)
    logged = last_log_error(config.logs_dir)
    info["last_error"] = logged["line"] if logged else None
    info["latest_error"] = latest_error(conn, logged) if conn is not None else None
    return info
