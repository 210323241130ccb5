"""Which queued rows go to the observer together, and when: batching by cost.

Every request re-reads the whole observer conversation (at best from the prompt cache, at a
tenth of the price), so the bill is set by how many requests a session makes more than by what
they carry (bench/observer_bill.py). Hence fewer, fuller requests:

- A batch is a run of ready rows in order, up to `batch_chars` of rendered events, and it may
  span turns: a turn's events, its end (the summary rides with them instead of a request of its
  own), the next turn's events. It crosses into the next turn only at a turn's end (an
  interrupted turn has none), so that every observation can be placed in its turn
  (worker/synthesis.py). A turn's end counts TURN_END_CHARS, for the summary it asks for.
- A batch that is not full waits, while the turn it belongs to goes on, for up to `batch_wait_s`
  after its first event: a turn that ends, or more events, come with it in one request. It does
  not wait once a turn in it ended, once it is full, once the session ended or a compaction's
  checkpoint waits for it, while another session waits for the worker's slot (worker/loop.py),
  or in a worker that drains.
- Events that say nothing new (worker/render.py's boring ones, and a file read again as it was)
  are one line in the next batch; never a request of their own: a batch of only those, its wait
  over, is settled without the model ("folded", as a subagent's calls are).
"""

from __future__ import annotations

import sqlite3

from claude_mem.settings import Config
from claude_mem.store import checkpoints, queue, records
from claude_mem.store.db import now_ms, transaction
from claude_mem.store.rows import QueuedEvent
from claude_mem.worker import turns
from claude_mem.worker.events import Event
from claude_mem.worker.render import folded_line, is_boring, render_event

TURN_END_CHARS = 1500  # what a turn's end takes of a batch: Claude's last message, and the summary it asks for


def choose(conn: sqlite3.Connection, config: Config, session_id: str, rows: list[QueuedEvent], *,
           hold: bool, heuristic: bool = False, take_open: bool = False) -> tuple[list[QueuedEvent] | None, set[int], int | None]:
    """The next batch of the session's pending rows (in order); of the rows, those that read a
    file again as it was; and, when `hold`, until when the batch waits for more (None: send it now).
    The heuristic synthesizer's batch is a turn whole once it is over (worker/turns.py; `take_open`:
    as it is), None while it goes on."""
    if heuristic:
        return turns.heuristic_batch(conn, session_id, rows, take_open=take_open), set(), None
    reads = [r.id for r in rows if r.kind == "tool" and r.tool_name == "Read"]
    repeats = queue.repeated_reads(conn, session_id, reads, subagents_seen=not config.fold_subagents)
    batch = take(rows, config, repeats, now_ms())
    return batch, repeats, wait_until(conn, config, session_id, batch, rows) if hold else None


def fold_subagents(conn: sqlite3.Connection, batch: list[QueuedEvent]) -> tuple[list[QueuedEvent], int]:
    """Settle a subagent's own tool calls without the model (setting fold_subagents): the result
    of the Task call that ran it tells what it found (the heuristic synthesizer, which costs no
    tokens, still sees them). Returns the rest of the batch and how many were folded."""
    folded = [r.id for r in batch if r.kind == "tool" and r.agent_id]
    if folded:
        with transaction(conn):
            queue.mark_done(conn, folded, "folded")
    return [r for r in batch if r.id not in folded], len(folded)


def says_nothing(event: Event, repeats: set[int]) -> bool:
    return event.kind == "tool" and (is_boring(event) or event.id in repeats)


def fold_if_silent(conn: sqlite3.Connection, events: list[Event], repeats: set[int]) -> bool:
    """A batch of events that say nothing new and no turn's end is settled without the model
    (marked "folded"); True when it was."""
    if not all(says_nothing(e, repeats) for e in events):
        return False
    with transaction(conn):
        queue.mark_done(conn, [e.id for e in events], "folded")
    return True


def take(rows: list[QueuedEvent], config: Config, repeats: set[int], now: int) -> list[QueuedEvent]:
    """The next batch from the session's pending rows in order: an event that failed on its own
    before goes alone; otherwise the ready rows up to batch_chars, across a turn's end."""
    first = rows[0]
    if first.attempts:
        return [first]
    batch: list[QueuedEvent] = []
    size = 0
    for row in rows:
        if row.next_attempt_epoch > now or row.attempts or row.kind not in ("tool", "finalize"):
            break
        if batch and row.prompt_number != batch[-1].prompt_number and batch[-1].kind != "finalize":
            break  # the turn before ended without its end (interrupted): its observations must stay its own
        cost = TURN_END_CHARS if row.kind == "finalize" else _chars(Event.from_row(row), repeats)
        if batch and size + cost > config.batch_chars:
            break
        batch.append(row)
        size += cost
    return batch


def _chars(event: Event, repeats: set[int]) -> int:
    return len(folded_line(event)) + 2 if says_nothing(event, repeats) else len(render_event(event))


def wait_until(conn: sqlite3.Connection, config: Config, session_id: str, batch: list[QueuedEvent],
               rows: list[QueuedEvent]) -> int | None:
    """When to send `batch` (epoch ms) if it should wait for more, else None: send it now."""
    if any(r.kind == "finalize" for r in batch) or len(batch) < len(rows) or batch[0].attempts:
        return None  # a turn ended, the batch is full, or what follows is not ready: more will not join it
    due = min(r.created_at_epoch for r in batch) + int(config.batch_wait_s * 1000)
    if due <= now_ms() or records.session_ended(conn, session_id) or checkpoints.pending(conn, session_id):
        return None
    return due
