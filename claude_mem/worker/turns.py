"""The heuristic synthesizer's batches: a turn's tool events whole, once the turn is over.

The heuristic groups what it is given (a failing run, the edits after it and the passing re-run
become one bugfix; runs of one check one observation), so given the events a few at a time, as
they happen to be pending when the worker looks, it wrote other memories for the same session:
245 observations in one replay and 315 in another (issue 51). Its batch is therefore the turn:
every tool event of a prompt, taken once the turn has ended, so that the same events give the
same memories whatever their timing. A turn has ended when a later row of the session is queued
(its Stop, the next prompt's first event), when the session ended, when a compaction's checkpoint
asks for everything queued before it (up to there), or when the worker would otherwise sit idle
(then it takes what there is: the turn's end never came). The model's batches stay as they were
(its conversation wants events as they come).
"""

from __future__ import annotations

import sqlite3

from claude_mem.store import checkpoints, queue, queue_rows, records
from claude_mem.store.db import snapshot
from claude_mem.store.rows import QueuedEvent

TURN_LIMIT = 2000  # tool events of one turn taken at once: a very long turn is cut here, at the same place every time


def heuristic_batch(conn: sqlite3.Connection, session_id: str, rows: list[QueuedEvent], *,
                    take_open: bool) -> list[QueuedEvent] | None:
    """What the heuristic synthesizer takes next from the session's pending `rows` (in order): the
    first row alone unless it is a tool event, else its turn's pending tool events when the turn
    is over (or `take_open`); None while the turn goes on."""
    first = rows[0]
    if first.kind != "tool" or first.attempts:
        return [first]
    # The turn and its end read in one snapshot: read one after the other, the hooks could store
    # the turn's last events and then its end (a Stop, the next prompt, SessionEnd, a PreCompact)
    # in between, and the events read first would pass for the whole turn.
    with snapshot(conn):
        turn = queue_rows.pending_from(conn, session_id, first.id, TURN_LIMIT)
        # The turn's events, wherever a late event of an earlier prompt fell among them.
        run = [r for r in turn if r.kind == "tool" and r.prompt_number == first.prompt_number and not r.attempts]
        upto = _checkpoint_upto(conn, session_id)
        if upto is not None and upto >= first.id:
            return [r for r in run if r.id <= upto]
        if take_open or len(turn) == TURN_LIMIT or _ended(conn, session_id, first.prompt_number, run[-1].id):
            return run
        return None


def _ended(conn: sqlite3.Connection, session_id: str, prompt_number: int, last_id: int) -> bool:
    """Something after the turn's last event: its Stop, a later prompt's event, or the session's end.
    (A late event of an earlier prompt says nothing about this one.)"""
    if queue.queued_after_turn(conn, session_id, prompt_number, last_id) or records.session_ended(conn, session_id):
        return True
    session = records.get_session(conn, session_id)
    return session is not None and session.prompt_counter > prompt_number  # the next prompt came before any event of it


def _checkpoint_upto(conn: sqlite3.Connection, session_id: str) -> int | None:
    pending = checkpoints.pending(conn, session_id)
    return pending.upto_queue_id if pending is not None else None
