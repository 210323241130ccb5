"""The five hook commands (hosts/hook_table.py): Claude Code's hook JSON in, durable rows out.

  context  SessionStart        print the project's digest; start the memory service for the
                               session's first prompt when there is memory to search
  new      UserPromptSubmit    record the prompt, make sure a worker runs, push the memories
                               that bear on it (claude_mem/push/prompt.py)
  pre      PreToolUse          push what earlier sessions did with the file about to be read
                               or edited, or how the command about to run failed before
  save     PostToolUse(+Failure)  queue the tool event
  summary  Stop                queue the end-of-turn marker
           SessionEnd          mark the session ended, so its worker exits once drained (and
                               then writes the memory file, when memory_file is on)
           PreCompact          ask the session's worker for a checkpoint (queued only)

Contract: a hook never blocks or breaks Claude Code. Whatever happens it exits 0, and on
failure writes one line to stderr and one to the log. Events are made safe (redacted, capped)
first; if the database cannot take them (locked past the busy timeout, read-only, full), the
safe event is written to `<data dir>/spool/` and replayed later (store/spool.py), so nothing is lost that
could have been kept.

Only the standard library and the hook-safe modules are imported here: the hook's wall time
is dominated by interpreter start-up, and chromadb/claude_agent_sdk/lxml/mcp/click would
multiply it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys

from claude_mem import processes
from claude_mem import settings as settings_mod
from claude_mem.hosts import payloads
from claude_mem.hosts.hook_table import COMMAND_FOR_EVENT, HOOK_EVENTS
from claude_mem.hosts.payloads import PayloadError, optional_str, parse_payload, require_str, storable_record
from claude_mem.project import project_for
from claude_mem.settings import Config
from claude_mem.store.db import NpmDatabaseError, SchemaTooNewError, connect
from claude_mem.text.caps import clean_text, to_json_capped

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any, BinaryIO, TextIO

QUIET = '{"continue": true, "suppressOutput": true}'
# Claude's final reply, at most this much of it: kept with its prompt and searched, and carried by the turn's summary request.
REPLY_CHARS = 4000


def main(command: str, stdin: BinaryIO | None = None, stdout: TextIO | None = None, host: str = "") -> int:
    """Run one hook command for `host` (hosts/payloads.py; "" to tell by the payload). Always returns 0."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    stdout = stdout if stdout is not None else sys.stdout
    processes.HOOK_PROCESS = stdin is sys.stdin.buffer  # a hook process of its own (tests also call this in theirs)
    output = "" if command == "context" else QUIET
    config: Config | None = None
    try:
        raw = stdin.read()
        config = settings_mod.load(strict=False)
        for warning in config.warnings:
            _log(config.logs_dir, command, f"warning: {warning}", stderr=True)
        payload = parse_payload(raw)
        event = payload.get("hook_event_name")
        if isinstance(event, str) and event and event not in HOOK_EVENTS[command]:
            raise PayloadError(f"{command} does not handle {event} events")
        host = payloads.detect(payload, host)
        if host == payloads.CODEX:
            payload = codex_payload(config, command, payload)
        if command == "context":
            output = run_context(config, payload) or ""
        elif command == "pre":
            output = run_pre(config, payload) or QUIET
        elif command in SANITIZE:
            record = SANITIZE[command](config, payload)
            if record is not None:
                record = storable_record(record)
                record["host"] = host
            stored = record is not None and run_event(config, command, record)
            # A spooled prompt has no memory to search (and its one error line is said).
            if stored and record is not None and command == "new" and config.push_prompt:
                output = push_for_prompt(config, record) or QUIET
        else:
            raise PayloadError(f"unknown hook command {command!r}")
    except Exception as exc:  # the contract: never let anything reach Claude Code
        logs_dir = config.logs_dir if config else _fallback_logs_dir()
        _log(logs_dir, command, f"error: {_describe(exc)}", stderr=True)
    if host == payloads.CODEX:
        output = payloads.codex_answer(output)  # Codex fails a run on fields it does not know
    try:
        if output:
            stdout.write(output + "\n")
            stdout.flush()
    except (OSError, ValueError):
        pass
    return 0


def _log(logs_dir: str | None, command: str, message: str, *, stderr: bool = False) -> None:
    """logs.log_line, loaded only when there is something to say: a hook that goes well never needs it."""
    from claude_mem.logs import log_line

    log_line(logs_dir, command, message, stderr=stderr)


def _fallback_logs_dir() -> str | None:
    try:
        return os.path.join(settings_mod.data_dir_from_env(), "logs")
    except Exception:
        return None


def _describe(exc: BaseException) -> str:
    if isinstance(exc, (PayloadError, settings_mod.SettingsError, SchemaTooNewError)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def codex_payload(config: Config, command: str, payload: dict[str, Any]) -> dict[str, Any]:
    """A Codex payload as Claude Code's (hosts/payloads.py). An apply_patch edit, which Codex follows with no
    PostToolUse, is queued by `pre` as the Edit it is, then pushes for its file like one."""
    if command == "save":
        return payloads.codex_tool_result(payload)
    edit = payloads.as_edit(payload) if command == "pre" else None
    if edit is None:
        return payload
    record = sanitize_tool(config, {**edit, "hook_event_name": "PostToolUse", "tool_response": None})
    if record is not None:
        record["host"] = payloads.CODEX
        run_event(config, "save", record)
    return edit


# --- making events safe -------------------------------------------------------------------

def _common(payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "session_id": require_str(payload, "session_id"),
        "cwd": optional_str(payload, "cwd"),
        "transcript_path": optional_str(payload, "transcript_path"),
    }


def sanitize_prompt(config: Config, payload: dict[str, Any]) -> dict[str, Any]:
    prompt = payload.get("prompt")
    if not isinstance(prompt, str):
        raise PayloadError("payload has no prompt")
    return {
        "type": "prompt",
        **_common(payload),
        "prompt": clean_text(prompt, config.max_field_chars),
        "prompt_id": optional_str(payload, "prompt_id"),
    }


def matches_skip_list(tool_name: str, patterns: list[str]) -> bool:
    """Exact names, or prefixes with a trailing `*` (fnmatch costs ~7 ms to import)."""
    for pattern in patterns:
        if pattern.endswith("*"):
            if tool_name.startswith(pattern[:-1]):
                return True
        elif tool_name == pattern:
            return True
    return False


def sanitize_tool(config: Config, payload: dict[str, Any]) -> dict[str, Any] | None:
    common = _common(payload)
    tool_name = require_str(payload, "tool_name")
    if matches_skip_list(tool_name, config.skip_tools):
        return None
    failed = payload.get("hook_event_name") == "PostToolUseFailure"
    if failed:
        response: Any = {"error": payload.get("error")}
        if payload.get("is_interrupt"):
            response["is_interrupt"] = True
    else:
        response = payload.get("tool_response")
    duration = payload.get("duration_ms")
    limit = config.max_field_chars
    return {
        "type": "tool",
        **common,
        "tool_name": tool_name[:200],
        "tool_input": to_json_capped(payload.get("tool_input"), limit),
        "tool_response": to_json_capped(response, limit),
        "tool_use_id": optional_str(payload, "tool_use_id"),
        "is_error": failed,
        "duration_ms": int(duration) if isinstance(duration, (int, float)) and not isinstance(duration, bool) else None,
        "agent_id": optional_str(payload, "agent_id"),
        "prompt_id": optional_str(payload, "prompt_id"),
    }


def sanitize_finalize(config: Config, payload: dict[str, Any]) -> dict[str, Any] | None:
    common = _common(payload)
    if payload.get("stop_hook_active") is True:
        return None  # Claude is continuing because of a Stop hook: the turn is not over
    event = payload.get("hook_event_name")
    if event == "SubagentStop":
        return None  # a subagent ending mid-turn does not end the user's turn
    if event == "SessionEnd":
        return {"type": "end", **common}
    if event == "PreCompact":
        trigger = optional_str(payload, "trigger")
        return {"type": "checkpoint", **common, "trigger": trigger if trigger in ("auto", "manual") else ""}
    message = payload.get("last_assistant_message")
    return {
        "type": "finalize",
        **common,
        "prompt_id": optional_str(payload, "prompt_id"),
        "last_assistant_message": clean_text(message, REPLY_CHARS) if isinstance(message, str) else None,
    }


# What each storing hook command makes of its payload (None: nothing to store).
SANITIZE = {"new": sanitize_prompt, "save": sanitize_tool, "summary": sanitize_finalize}


def store_in_process(config: Config, conn: sqlite3.Connection, payloads: Iterable[dict[str, Any]]) -> int:
    """Store payloads the way the hook commands do (same sanitising, same rows) without a
    process per event: for benchmarks and tests that need a filled queue fast. Returns rows stored."""
    from claude_mem.store.records import apply_event

    stored = 0
    for payload in payloads:
        make = SANITIZE.get(COMMAND_FOR_EVENT.get(payload.get("hook_event_name", ""), ""))
        record = make(config, payload) if make else None
        if record is not None:
            apply_event(conn, storable_record(record))
            stored += 1
    return stored


# --- writing them ---------------------------------------------------------------------------

def run_event(config: Config, command: str, record: dict[str, Any]) -> bool:
    """Store the event (or spool it); True when it reached the database."""
    # Here, not at the top: the SessionStart hook (the digest) needs neither the queue nor workers.
    from claude_mem.store.records import apply_event
    from claude_mem.worker import spawn

    config.ensure_dirs()
    try:
        conn = connect(config.db_path, busy_timeout_ms=config.hook_busy_ms)
        try:
            # Spooled events are older than this one: store them first, so prompts keep their
            # order and an event keeps its turn (a tool call stored before its spooled prompt was
            # counted in the turn before). Only a spool with files in it costs the import.
            if command == "new" or _spool_has_events(config):
                from claude_mem.store.spool import drain_spool

                drain_spool(config, conn)
            apply_event(conn, record)
            # This hook starts its own session's worker below (unless it ends the session).
            revive_stranded(config, conn, command, exclude=None if record["type"] == "end" else record["session_id"])
        finally:
            conn.close()
    except (sqlite3.Error, OSError, SchemaTooNewError) as exc:
        from claude_mem.store.spool import spool_event

        try:
            path = spool_event(config, record)
        except OSError as spool_exc:
            _log(config.logs_dir, command, f"error: database unavailable ({_describe(exc)}) and the event could not be"
                     f" spooled ({_describe(spool_exc)}); event lost", stderr=True)
            return False
        # The npm claude-mem's database in our place is not "unavailable": say what it is and the fix.
        problem = str(exc) if isinstance(exc, NpmDatabaseError) else f"database unavailable ({_describe(exc)})"
        _log(config.logs_dir, command, f"error: {problem}; event kept in {path}", stderr=True)
        return False
    # SessionEnd needs no worker, unless one is to write the memory file once the session's
    # events are stored (never on the hook's time).
    if config.worker_autostart and (record["type"] != "end" or config.memory_file != "off"):
        try:
            spawn.ensure_worker(config.data_dir, config.workers_dir, config.logs_dir, record["session_id"],
                                config.max_workers)
        except OSError as exc:
            _log(config.logs_dir, command, f"error: could not start a worker ({_describe(exc)})", stderr=True)
    return True


def _spool_has_events(config: Config) -> bool:
    """Whether an event waits in the spool: store/spool.spooled's test, here so that a hook with
    nothing spooled does not import that module (one directory read: every hook pays for it)."""
    try:
        return any(name.endswith(".json") for name in os.listdir(config.spool_dir))
    except OSError:
        return False


def revive_stranded(config: Config, conn: sqlite3.Connection, command: str, exclude: str | None = None) -> None:
    """Start workers for other sessions' events that no worker is left to take: this
    hook may be the only process that runs for a long time. Never fails the hook."""
    from claude_mem.worker import stranded

    try:
        stranded.revive(config, conn, exclude, throttle=True)
    except (sqlite3.Error, OSError) as exc:
        _log(config.logs_dir, command, f"error: could not check for waiting events ({_describe(exc)})", stderr=True)


# --- SessionStart -----------------------------------------------------------------------------

def run_context(config: Config, payload: dict[str, Any]) -> str | None:
    cwd = optional_str(payload, "cwd") or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    if not os.path.exists(config.db_path):
        return None  # nothing remembered yet; don't create anything on a read
    from claude_mem.push import has_memory
    from claude_mem.push.digest import build_digest, digest_refs
    from claude_mem.store import injections

    session_id = optional_str(payload, "session_id")
    source = optional_str(payload, "source") or ""
    project = project_for(cwd)
    conn = connect(config.db_path, busy_timeout_ms=config.hook_busy_ms)
    try:
        compacted = session_id if source == "compact" else None
        text = build_digest(conn, project, max_chars=config.context_chars, other_than=compacted)
        if compacted:
            text = _working_set(config, conn, compacted, cwd, payload) + text
        # No look for other sessions' stranded events here (revive_stranded): the queue and the
        # workers' modules would be most of the digest's imports, and the session's first prompt
        # hook, seconds later, looks.
        # Recorded so that no push repeats what the digest gave; after a compaction even an
        # empty digest is recorded: what was pushed before it is no longer in the context.
        if session_id and (text or source == "compact"):
            injections.record(conn, session_id, project, "digest", digest_refs(text), len(text), note=source)
        searchable = config.semantic_index and has_memory(conn, project, session_id or "")
    finally:
        conn.close()
    if searchable:
        # It loads (seconds) while the user types, so the session's first prompt is searched
        # semantically, not by keywords alone. Spawned, never waited for.
        from claude_mem.service import client

        client.ensure_started(config.data_dir)
    if not text:
        return None
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}},
                      ensure_ascii=False)


def _working_set(config: Config, conn: sqlite3.Connection, session_id: str, cwd: str, payload: dict[str, Any]) -> str:
    """After a compaction: what this session was in the middle of (push/compact.py)."""
    from claude_mem.push import compact

    block = compact.build(conn, session_id, cwd=cwd, transcript_path=optional_str(payload, "transcript_path"),
                          max_chars=config.compact_context_chars)
    return block + "\n" if block else ""


# --- pushes: memory that bears on the prompt, the file, the command ----------------------------

def push_for_prompt(config: Config, record: dict[str, Any]) -> str | None:
    if not os.path.exists(config.db_path):
        return None  # the prompt was spooled: there is no memory to search yet
    from claude_mem.push import project_of, prompt

    conn = connect(config.db_path, busy_timeout_ms=config.hook_busy_ms)
    try:
        project = project_of(conn, record["session_id"], record.get("cwd"))
        return prompt.run(config, conn, record["session_id"], project, record["prompt"])
    finally:
        conn.close()


def run_pre(config: Config, payload: dict[str, Any]) -> str | None:
    """PreToolUse: answers with additional context or nothing; never a permission decision."""
    session_id = require_str(payload, "session_id")
    tool = payload.get("tool_name")
    tool_input = payload.get("tool_input")
    if tool == "Bash":
        command = tool_input.get("command") if isinstance(tool_input, dict) else None
        if not config.push_commands or not isinstance(command, str) or not command.strip():
            return None
    else:
        from claude_mem.push.files import TOOLS, target

        path = target(tool_input) if tool in TOOLS else None
        if not config.push_files or path is None:
            return None
    if not os.path.exists(config.db_path):
        return None
    conn = connect(config.db_path, busy_timeout_ms=config.hook_busy_ms)
    try:
        cwd = optional_str(payload, "cwd")
        if tool == "Bash":
            from claude_mem.push import failures

            # Redacted as the stored commands were: the same key for the same command, and no
            # secret of the live one can reach the injections table or the output.
            return failures.run(conn, session_id, cwd, clean_text(str(command), config.max_field_chars))
        from claude_mem.push import files

        return files.run(conn, session_id, cwd, str(path))
    finally:
        conn.close()
