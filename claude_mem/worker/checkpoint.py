"""The checkpoint a compaction asks for (PreCompact, store/checkpoints.py): written by the
session's worker once every event queued before the hook is taken, so it covers the session up
to the compaction. The model writes it when it is usable; otherwise, or when it fails (the
compaction will not wait through an outage), the heuristic synthesizer does, from the
session's observations and its own events.
"""

from __future__ import annotations

import sqlite3
from types import SimpleNamespace

from claude_mem.guard.screen import Context, screen_fields
from claude_mem.store import checkpoints, queue_rows, records, titles, working_set
from claude_mem.store.db import now_ms, transaction
from claude_mem.store.rows import Checkpoint, QueuedEvent
from claude_mem.text.shorten import clip, cut
from claude_mem.worker.parse import parse_reply
from claude_mem.worker.render import fill
from claude_mem.worker.synthesis import Synthesis

# Events before the checkpoint that wait out a backoff hold it back at most this long: the
# session's next SessionStart wants it more than it wants those events in it.
MAX_WAIT_MS = 30_000
RECENT_TITLES = 60


def due(conn: sqlite3.Connection, session_id: str, rows: list[QueuedEvent]) -> Checkpoint | None:
    """The pending checkpoint, once no event queued before it is left (`rows`: the session's
    pending events in order), or once those left have held it back for MAX_WAIT_MS."""
    checkpoint = checkpoints.pending(conn, session_id)
    if checkpoint is None:
        return None
    if not rows:
        # Read before the checkpoint: the hooks may have stored events and then the PreCompact
        # since, and written now it would cover none of them (nor cut their turn where it asks).
        rows = queue_rows.next_pending(conn, session_id, 1)
    if not rows or rows[0].id > checkpoint.upto_queue_id:
        return checkpoint
    waiting = rows[0].next_attempt_epoch > now_ms()
    return checkpoint if waiting and now_ms() - checkpoint.created_at_epoch >= MAX_WAIT_MS else None


async def write(synthesis: Synthesis, checkpoint: Checkpoint) -> str:
    """Write the checkpoint; returns who wrote it ("model" or "heuristic")."""
    conn, session_id = synthesis.conn, synthesis.session_id
    fields = heuristic_fields(conn, session_id)
    source = "heuristic"
    if synthesis.use_model:
        written = await _from_model(synthesis, fields)
        if written is not None:
            fields, source = {**fields, **{k: v for k, v in written.items() if v}}, "model"
            _guard(fields)
    with transaction(conn):
        checkpoints.write(conn, checkpoint.id, fields, source)
        if source == "model" and synthesis.conversation.turn is not None:
            records.set_resume_point(conn, session_id, *synthesis.conversation.turn)
            synthesis.conversation.fresh = False
    synthesis.conversation.turn = None
    return source


def _guard(fields: dict[str, str]) -> None:
    """What the model wrote, with text that reads as instructions to an AI replaced by a mark and
    the guard's note (issue 47): SessionStart shows the checkpoint after the compaction."""
    record = SimpleNamespace(**fields)
    if screen_fields(record, list(fields), Context(made_from=["reply"]))[0]:
        fields.update(vars(record))


async def _from_model(synthesis: Synthesis, fields: dict[str, str]) -> dict[str, str] | None:
    files = working_set.modified_files(synthesis.conn, synthesis.session_id)
    message = fill("checkpoint", request=cut(fields["request"], 1500) or "(unknown)",
                   files=cut(", ".join(f["path"] for f in files[:40]), 3000) or "(none)",
                   failing=fields["failing"] or "(none)")
    reply = await synthesis.conversation.send(message)
    if reply.error:
        synthesis.log(f"checkpoint: the model failed ({reply.error}: {reply.detail}); the heuristic one instead")
        return None
    summary = parse_reply(reply.text).summary
    if summary is None:
        await synthesis.conversation.drop()  # the next batch resumes before this unusable reply
        synthesis.log("checkpoint: the model wrote no <summary>; the heuristic one instead")
        return None
    return {"request": summary.request, "completed": summary.completed, "decided": summary.learned,
            "failing": summary.notes, "next_steps": summary.next_steps}


def heuristic_fields(conn: sqlite3.Connection, session_id: str) -> dict[str, str]:
    """The checkpoint without a model: the last request, what the session's observations say was
    done and decided, the commands still failing."""
    done: list[str] = []
    decided: list[str] = []
    for kind, title in titles.newest_of_session(conn, session_id, RECENT_TITLES):
        if kind in ("bugfix", "change", "feature", "refactor") and title not in done:
            done.append(title)
        elif kind == "decision" and title not in decided:
            decided.append(title)
    failures = working_set.open_failures(conn, session_id)
    failing = "; ".join(f"`{cut(f['command'], 80)}`: {cut(f['error'], 160)}" for f in failures)
    next_steps = f"make `{cut(failures[0]['command'], 80)}` pass" if failures else ""
    return {"request": clip(working_set.current_request(conn, session_id), 800),
            "completed": clip("; ".join(reversed(done[:12])), 1200), "decided": clip("; ".join(reversed(decided[:6])), 600),
            "failing": clip(failing, 600), "next_steps": next_steps}
