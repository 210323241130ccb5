"""The observer's daily token budget (setting observer_daily_tokens): what the observer's model
spent today, counted from the usage the API reported for each reply, across every worker.

"Today" is the machine's local calendar day when a reply's usage is recorded; the budget resets
at local midnight. Every reply's tokens are added to that day's row in one UPSERT inside the
caller's transaction, so concurrent workers count one total. A budget is reached when today's
input (fresh, cache reads and cache writes, as `stats` counts it) plus output reaches it; the
worker that crosses it records so, once per budget value, and says so. Requests already in
flight at that moment (at most one per worker) still land: the budget can be passed by them.

Standard library only.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from claude_mem.store.costs import USAGE_FIELDS
from claude_mem.store.db import now_ms
from claude_mem.store.queue import QueueStatus

# Waiting rows' last_error starts with this: `reprocess` makes them due again.
WAITING_REASON = "observer_daily_tokens reached"


def today(epoch_s: float | None = None) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(epoch_s))


def next_day_ms(epoch_s: float | None = None) -> int:
    """Local midnight after `epoch_s` (now), in epoch ms."""
    t = time.localtime(epoch_s)
    return int(time.mktime((t.tm_year, t.tm_mon, t.tm_mday + 1, 0, 0, 0, 0, 0, -1)) * 1000)


def add(conn: sqlite3.Connection, usage: dict[str, Any]) -> None:
    """Add one reply and its tokens to today's row. Call inside a transaction."""
    values = [int(usage.get(k) or 0) for k in USAGE_FIELDS]
    columns = ", ".join(USAGE_FIELDS)
    updates = ", ".join(f"{f} = {f} + excluded.{f}" for f in USAGE_FIELDS)
    conn.execute(f"INSERT INTO observer_days (day, replies, {columns}) VALUES (?, 1, ?, ?, ?, ?)"
                 f" ON CONFLICT (day) DO UPDATE SET replies = replies + 1, {updates}", (today(), *values))


def spent(conn: sqlite3.Connection, day: str | None = None) -> dict[str, Any]:
    """A day's row (today's by default): its replies, tokens by kind, `total` and when a budget was reached."""
    row = conn.execute("SELECT * FROM observer_days WHERE day = ?", (day or today(),)).fetchone()
    out: dict[str, Any] = {"day": day or today(), "replies": 0, **dict.fromkeys(USAGE_FIELDS, 0),
                           "budget": None, "reached_at_epoch": None}
    if row is not None:
        out.update(dict(row))
    out["total"] = sum(int(out[f] or 0) for f in USAGE_FIELDS)
    return out


def reached(conn: sqlite3.Connection, limit: int) -> dict[str, Any] | None:
    """Today's spend when it has reached `limit` (0: no limit, never reached), else None."""
    if not limit:
        return None
    day = spent(conn)
    return day if day["total"] >= limit else None


def mark_reached(conn: sqlite3.Connection, limit: int) -> dict[str, Any] | None:
    """Record that today's spend reached `limit`, unless that (or a larger budget) was recorded
    already: returns today's spend for the one caller that recorded it, else None. Call inside a
    transaction, after `add`."""
    if not limit:
        return None
    day = today()
    cur = conn.execute(
        f"UPDATE observer_days SET budget = ?, reached_at_epoch = ? WHERE day = ? AND ({' + '.join(USAGE_FIELDS)}) >= ?"
        " AND (reached_at_epoch IS NULL OR budget < ?)", (limit, now_ms(), day, limit, limit))
    return spent(conn, day) if cur.rowcount else None


def state(conn: sqlite3.Connection, limit: int) -> dict[str, Any]:
    """What `status` and `stats` show: today's spend, the budget (0 = none), whether it is reached."""
    day = spent(conn)
    return {"day": day["day"], "tokens": day["total"], "replies": day["replies"], "budget": limit,
            "reached": bool(limit) and day["total"] >= limit,
            "reached_at_epoch": day["reached_at_epoch"] if limit and day["total"] >= limit else None}


def describe(budget: dict[str, Any]) -> str:
    """One line: "12,345 of 50,000 observer tokens today (25%)"."""
    line = f"{budget['tokens']:,} observer tokens today"
    if not budget["budget"]:
        return line + " (no daily budget: setting observer_daily_tokens)"
    share = 100 * budget["tokens"] / budget["budget"]
    return f"{budget['tokens']:,} of {budget['budget']:,} observer tokens today ({share:.0f}%, setting observer_daily_tokens)"


def wait_for_tomorrow(conn: sqlite3.Connection, session_id: str, ids: list[int], detail: str) -> int:
    """The rows `ids` (claimed) and every other pending row of the session wait for local
    midnight, marked as waiting for the budget; returns when they are due (epoch ms). Call
    inside a transaction."""
    due = next_day_ms()
    marks = ",".join("?" * len(ids))
    conn.execute(
        f"UPDATE observation_queue SET status = '{QueueStatus.PENDING}', claimed_by = NULL, last_error = ?, next_attempt_epoch = ?,"
        f" updated_at_epoch = ? WHERE session_id = ? AND (status = '{QueueStatus.PENDING}' OR id IN ({marks}))",
        (f"{WAITING_REASON} ({detail})"[:500], due, now_ms(), session_id, *ids))
    return due


def requeue_waiting(conn: sqlite3.Connection, session_id: str) -> int:
    """Make the session's events that wait for tomorrow's budget due now; returns how many. Call
    inside a transaction."""
    return conn.execute(
        "UPDATE observation_queue SET next_attempt_epoch = 0, updated_at_epoch = ? WHERE session_id = ?"
        f" AND status = '{QueueStatus.PENDING}' AND last_error LIKE ?", (now_ms(), session_id, WAITING_REASON + "%")).rowcount
