"""The answer written by the observer's model: one request through worker/observer.py (its own
short-lived Claude CLI, not a worker's conversation), given the question and the records found.

Used only when a model is usable: not with `synthesizer` heuristic ("never call a model"), not
once the day's `observer_daily_tokens` are spent, not while a session's observer has found no
login or no CLI it can run (store/outages.py), and not for an hour after an ask of its own found
so (a file in the observer's folder): each of those would cost seconds of a CLI start to learn
what is already known. Both holds end as soon as what they learned may have changed
(login.py): a login variable or endpoint the hold did not see, a credentials file written
since, another Claude CLI. A user who logs in gets the model's answer at the next ask. Any
failure gives the extractive answer, with the reason as its note. The reply's tokens are added to
the day's total (store/budget.py), which `stats` shows and the budget counts.
"""

from __future__ import annotations

import asyncio
import os
import re
import sqlite3
import time
from typing import Any

from claude_mem import login
from claude_mem.ask.answer import Answer
from claude_mem.ask.extract import Evidence
from claude_mem.jsonfile import JSONFileError, read_json_object, write_json_atomic
from claude_mem.processes.census import observer_dir
from claude_mem.settings import Config
from claude_mem.store import budget, outages
from claude_mem.store.costs import USAGE_FIELDS
from claude_mem.store.db import transaction
from claude_mem.text.shorten import clip, cut

RECORD_CHARS = 700  # of one record in the request
REQUEST_CHARS = 9000  # of all the records: a dozen memories, a few thousand tokens at most
TIMEOUT_S = 60.0  # an answer is waited for by an agent mid-task: past this the extractive one serves
NO_MODEL_HOLD_S = 3600.0  # after an ask found no login or no CLI, the model is not tried again for this long
NO_MODEL_FILE = "ask-no-model.json"
_REF = re.compile(r"\b(?:obs|sum|prompt):[1-9][0-9]*\b")

SYSTEM = """You answer a developer's question about their earlier work with Claude Code, from the memory \
records given with it and nothing else. Write a few plain sentences, at most {chars} characters in all, the \
direct answer first. After each claim put the refs of the records it rests on in square brackets, e.g. \
[obs:12] or [obs:12, sum:3]. Give dates when the question asks when. If the records do not answer the \
question, say "I don't know" and, in a sentence, what they do hold. No preamble, no markdown headings."""

def blocked(config: Config, conn: sqlite3.Connection) -> str | None:
    """Why the model is not to be asked now, or None when it may be."""
    if config.synthesizer == "heuristic":
        return "synthesizer is heuristic: no model is called"
    if budget.reached(conn, config.observer_daily_tokens) is not None:
        return "observer_daily_tokens reached for today"
    path = os.path.join(observer_dir(config.data_dir), NO_MODEL_FILE)
    try:
        held, _ = read_json_object(path)
    except (JSONFileError, OSError):
        held = {}
    if held:
        if held.get("login") != login.state(config.cli_path):
            return None  # what the hold learned may no longer be true: worth one CLI start
        if time.time() - float(held.get("at") or 0) < NO_MODEL_HOLD_S:
            return f"no model answered an earlier ask: {held.get('reason') or 'unknown'}"
    for outage in outages.current(conn, limit=20):
        if (str(outage["observer_error"] or "").split(":")[0].split(" ")[0] in outages.NO_MODEL
                and not login.changed_since((outage["observer_error_at_epoch"] or 0) / 1000)):
            return "the observer has no usable model (claude-mem status says why)"
    return None


def request_text(question: str, items: list[Evidence]) -> str:
    """The question and the records, best match first, within REQUEST_CHARS."""
    lines = [f"Question: {question}", "", "Memory records, best match first:"]
    size = sum(len(x) + 1 for x in lines)
    for item in items:
        record = f"[{item.ref}] {item.day} {item.kind}: " + clip(" ".join(item.texts), RECORD_CHARS)
        if size + len(record) + 1 > REQUEST_CHARS:
            break
        lines.append(record)
        size += len(record) + 1
    return "\n".join(lines)


def answer_with_model(config: Config, conn: sqlite3.Connection, question: str, items: list[Evidence]) -> Answer | None:
    """The model's answer, an extractive stand-in's note (Answer with source "extractive" and
    only a note) when the request failed, or None when no model is to be asked."""
    reason = blocked(config, conn)
    if reason is not None:
        return None
    folder = observer_dir(config.data_dir)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    reply = asyncio.run(_one_request(config, folder, request_text(question, items)))
    usage = reply.usage or {}
    tokens = sum(int(usage.get(k) or 0) for k in USAGE_FIELDS)
    if usage:
        _record_usage(conn, config, usage)
    if reply.error:
        if reply.error in outages.NO_MODEL:
            try:
                write_json_atomic(os.path.join(folder, NO_MODEL_FILE), {"at": time.time(), "reason": f"{reply.error}: {reply.detail}",
                                                                       "login": login.state(config.cli_path)})
            except OSError:
                pass  # a data folder that takes no file costs the next ask a CLI start, never this answer
        return Answer("", [], "extractive", tokens, note=f"the model did not answer ({reply.error}): extractive answer")
    known = {item.ref for item in items}
    text = cut(reply.text.strip(), config.ask_chars, one_line=False)
    refs = [r for r in dict.fromkeys(_REF.findall(text)) if r in known]
    if not refs and not text.lower().startswith("i don't know"):  # an answer naming no record rests on the best of them
        refs = [item.ref for item in items[:3]]
        tail = f" [{', '.join(refs)}]"
        text = cut(text, config.ask_chars - len(tail), one_line=False) + tail
    return Answer(text, refs, "model", tokens, evidence=[item.ref for item in items])


async def _one_request(config: Config, folder: str, text: str) -> Any:
    from claude_mem.worker.observer import Observer

    observer = Observer(model=config.model, system_prompt=SYSTEM.format(chars=config.ask_chars), cwd=folder,
                       cli_path=config.cli_path or None, turn_timeout_s=min(TIMEOUT_S, config.observer_timeout_s))
    try:
        await observer.start()
        return await observer.send(text)
    finally:
        await observer.close()


def _record_usage(conn: sqlite3.Connection, config: Config, usage: dict[str, Any]) -> None:
    """The reply's tokens, added to the day's total like a worker's; bookkeeping that a database
    which cannot take it now costs, never the answer."""
    try:
        with transaction(conn):
            budget.add(conn, usage)
            budget.mark_reached(conn, config.observer_daily_tokens)
    except sqlite3.Error:
        pass
