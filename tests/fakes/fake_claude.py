#!/usr/bin/env python3
"""A fake Claude Code CLI for claude-agent-sdk's `cli_path`: speaks the stream-json control
protocol on stdin/stdout and answers each user message from a script, so the observer seam can be
tested through the real SDK and real processes without any model.

Environment:
  FAKE_CLAUDE_SCRIPT    JSON file: a list of steps, or {"steps": [...], "default": step}. Steps are
                        consumed one per user turn, in order, across processes (a cursor file
                        `<script>.cursor` remembers the position, so a CLI restarted after a crash
                        goes on with the next step). When they run out, `default` (else echo) is used.
  FAKE_CLAUDE_LOG       JSON-lines file; every start (argv, cwd, selected env), every received line
                        and every exit is appended to it.
  FAKE_CLAUDE_SESSIONS  optional directory of known session ids. When set, `--resume ID` with an
                        unknown ID fails the way the real CLI does; new sessions are recorded there.
  FAKE_CLAUDE_MODEL     model reported when no `--model` flag is given.
  FAKE_CLAUDE_START_SLEEP  optional seconds to spend starting up (before the handshake), as the real CLI
                        does for about a second: a window in which tests kill a CLI while it starts.
  FAKE_CLAUDE_OUTAGE    optional file holding "START:END" (epoch seconds): every turn in that window
                        answers {"error": "overloaded"} instead of its step (the step is still consumed);
                        "arm:SECONDS" starts such a window at the next turn of any CLI.

A step is one JSON object:
  {"reply": "text"}                     the reply text ("" gives an assistant message without text)
  {"reply_template": "...{chars}..."}   {turn} {chars} {text} {session_id} are substituted
  {"echo": true}                        "ECHO turn=N chars=L" and then the received text
  {"copy": true}                        a model that was fooled: copies what it is shown into its answer: one
                                        <observation> per rendered event whose narrative and facts are the event's
                                        lines as they came (tool output included), a <summary> per ended turn whose
                                        fields repeat the request and Claude's final message, and for an `ask` the
                                        records it was given, word for word
  {"per_event": true}                   one <observation> per rendered event line, and a <summary> per turn the
                                        message says has ended (the worker's nudge is answered for the events
                                        of the message before);
                                        with "tag_project": true each title ends with " @<project>", the
                                        project named in the system prompt (which worker sent it)
  {"error": "auth"|"overloaded"|"rate_limit"|"api_error"|"invalid_request"}   an API failure shaped like the real CLI's
  {"crash": true, "exit_code": 3, "partial": "text"}        exit mid-turn (after the partial reply, if any)
  any step may add "sleep": seconds (before answering), "ignore_sigterm": true, and "hold_until": a
  path (the answer waits until that file exists: a test holds a worker busy until it has seen what
  it is waiting for).

Tests point cli_path at `write_wrapper(tmp_dir)` (importable as tests.fakes.fake_claude).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import signal
import sys
import time
import uuid
from itertools import pairwise
from xml.sax.saxutils import escape

VERSION = "2.1.330"
LOG = os.environ.get("FAKE_CLAUDE_LOG")
SCRIPT = os.environ.get("FAKE_CLAUDE_SCRIPT")
SESSIONS = os.environ.get("FAKE_CLAUDE_SESSIONS")

# The real CLI's wording (2.1.330), so classification is tested against what users will see.
_RETRY = "This is a server-side issue, usually temporary — try again in a moment."
ERRORS = {
    "auth": ("authentication_failed", None, "Not logged in · Please run /login"),
    "overloaded": ("server_error", 529, f"API Error: 529 Overloaded. {_RETRY}"),
    "rate_limit": ("rate_limit", 429, "API Error: Request rejected (429) · rate_limit_error"),
    "api_error": ("server_error", 500, f"API Error: 500 api_error. {_RETRY}"),
    "invalid_request": ("unknown", 400, "API Error: 400 messages: text content blocks must contain non-whitespace text"),
}
LOGGED_ENV = ("CLAUDE_CODE_MAX_RETRIES", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CONFIG_DIR",
              "CLAUDE_MEM_OBSERVER_ID", "ANTHROPIC_BASE_URL")


def write_wrapper(directory: str | os.PathLike[str], python: str = sys.executable) -> str:
    """Write `<directory>/claude`, an executable that runs this fake with `python` (cli_path must
    be a single executable; the shebang's python3 might not be the venv's). Returns its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, "claude")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(f'#!/bin/sh\nexec "{python}" "{os.path.abspath(__file__)}" "$@"\n')
    os.chmod(path, 0o755)
    return path


def log(event: str, **fields: object) -> None:
    if not LOG:
        return
    with open(LOG, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"event": event, "pid": os.getpid(), "time": time.time(), **fields}) + "\n")


def emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def flag(argv: list[str], name: str) -> str | None:
    """The value of `--name=value` or `--name value` (the SDK uses both forms)."""
    for i, arg in enumerate(argv):
        if arg.startswith(name + "="):
            return arg[len(name) + 1:]
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
    return None


def load_script() -> tuple[list[dict], dict]:
    if not SCRIPT:
        return [], {"echo": True}
    with open(SCRIPT, encoding="utf-8") as fh:
        data = json.load(fh)
    if isinstance(data, list):
        return data, {"echo": True}
    return list(data.get("steps", [])), data.get("default") or {"echo": True}


def next_step() -> tuple[int, dict]:
    """Take the next step; the cursor lives in a file so restarts continue the script."""
    steps, default = load_script()
    if not SCRIPT:
        return 0, default
    with open(SCRIPT + ".cursor", "a+", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        raw = fh.read().strip()
        index = int(raw) if raw else 0
        fh.seek(0)
        fh.truncate()
        fh.write(str(index + 1))
    return index, steps[index] if index < len(steps) else default


def in_outage() -> bool:
    path = os.environ.get("FAKE_CLAUDE_OUTAGE")
    if not path:
        return False
    try:
        with open(path, "r+", encoding="utf-8") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            first, second = fh.read().split(":")
            if first == "arm":
                now = time.time()
                first, second = str(now), str(now + float(second))
                fh.seek(0)
                fh.truncate()
                fh.write(f"{first}:{second}")
    except (OSError, ValueError):
        return False
    return float(first) <= time.time() < float(second)


def user_text(message: dict) -> str:
    content = message.get("message", {}).get("content", "")
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if isinstance(block, dict))


def usage(input_tokens: int, output_tokens: int) -> dict:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}


def assistant(session_id: str, model: str, text: str, *, error: str | None = None) -> dict:
    msg: dict = {
        "type": "assistant",
        "message": {"id": "msg_" + uuid.uuid4().hex[:20], "type": "message", "role": "assistant",
                    "model": "<synthetic>" if error else model,
                    "content": [{"type": "text", "text": text}] if text else [],
                    "stop_reason": "stop_sequence" if error else "end_turn", "stop_sequence": None,
                    "usage": usage(0, 0) if error else usage(max(1, len(text) // 4), max(1, len(text) // 4))},
        "parent_tool_use_id": None, "session_id": session_id, "uuid": str(uuid.uuid4()),
    }
    if error:
        msg["error"] = error
        msg["is_api_error_message"] = True
    return msg


def result(session_id: str, text: str, *, turn: int, started: float, status: int | None = None, is_error: bool = False,
           subtype: str = "success", errors: list[str] | None = None, tokens: tuple[int, int] = (0, 0)) -> dict:
    out: dict = {
        "type": "result", "subtype": subtype, "is_error": is_error,
        "duration_ms": int((time.time() - started) * 1000), "duration_api_ms": 0 if is_error else 5,
        "num_turns": 1, "session_id": session_id, "result": text, "stop_reason": "end_turn",
        "total_cost_usd": 0, "usage": usage(*tokens), "api_error_status": status, "uuid": str(uuid.uuid4()),
    }
    if is_error:
        out["terminal_reason"] = "api_error"
    if errors is not None:
        out["errors"] = errors
    return out


TURN_END = re.compile(r"^The turn for request #(\d+) has ended")
HEADER = re.compile(r"^User's request #(\d+): (.*)$", re.M)
MISSING = re.compile(r"had no <summary> block for request ((?:#\d+(?:, )?)+)")


def per_event_reply(text: str, tag: str = "") -> str:
    """A model stand-in whose answer is a pure function of the events it was shown: one
    observation per rendered event line (`[HH:MM:SS] headline`), and a summary for each turn the
    message says has ended, right after that turn's observations (or for each one a nudge says is
    missing). However events are batched, each event yields the same observation, so tests can
    check "exactly once" by content."""
    REQUESTS.update(HEADER.findall(text))  # the conversation's requests: a later message names them by number only
    requests = REQUESTS
    missing = MISSING.search(text)
    if missing:
        return "\n".join(_summary(n, requests.get(n, "")) for n in re.findall(r"\d+", missing[1]))
    blocks = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("[") and len(line) > 11 and line[9] == "]":
            # The headline plus its first detail line tells apart two edits of one file.
            detail = lines[i + 1].strip() if i + 1 < len(lines) and lines[i + 1].startswith("  ") else ""
            what = (line[11:].strip() + (" | " + detail if detail else ""))[:150] + tag
            blocks.append(f"<observation><type>change</type><title>{escape(what)}</title>"
                          f"<facts><fact>{escape(what)}</fact></facts><narrative>seen</narrative></observation>")
        elif ended := TURN_END.match(line):
            blocks.append(_summary(ended[1], requests.get(ended[1], "")))
    if not blocks and "<summary>" in text:  # a summary asked for on its own (a compaction's checkpoint)
        return _summary("", "")
    return "\n".join(blocks) or "<nothing/>"


def _summary(number: str, request: str) -> str:
    named = f' request="{number}"' if number else ""
    return (f"<summary{named}><request>{escape(request)}</request><investigated>the events</investigated>"
            f"<learned>fake</learned><completed>turn done</completed><next_steps>none</next_steps><notes>per_event</notes>"
            "</summary>")


def copy_reply(text: str) -> str:
    """What a model that repeats its input writes (see the docstring's "copy")."""
    if text.startswith("Question:"):  # ask: the records, as given
        return "\n".join(line for line in text.splitlines()[2:] if line.strip())
    REQUESTS.update(HEADER.findall(text))
    lines = text.splitlines()
    if not any(_is_event(line) or TURN_END.match(line) for line in lines) and "<summary>" in text:  # a checkpoint
        fields = {line.split(":", 1)[0].strip(): line.split(":", 1)[1].strip() for line in lines if ":" in line}
        request = fields.get("User's request") or fields.get("User's current request") or ""
        return _copied_summary("", request, fields.get("Claude's final message", ""))
    bounds = [i for i, line in enumerate(lines) if _is_event(line) or TURN_END.match(line) or HEADER.match(line)
              or line.startswith("Write the <observation>")] + [len(lines)]
    blocks = []
    for start, stop in pairwise(bounds):
        line = lines[start]
        detail = [d.strip().removeprefix("=> ").strip() for d in lines[start + 1:stop]]
        detail = [d for d in detail if d]
        if _is_event(line):
            facts = "".join(f"<fact>{escape(d)}</fact>" for d in detail[:12])
            blocks.append(f"<observation><type>discovery</type><title>{escape(line[11:].strip()[:150])}</title>"
                          f"<facts>{facts}</facts><narrative>{escape(chr(10).join(detail))}</narrative></observation>")
        elif ended := TURN_END.match(line):
            last = "\n".join([line.split("Claude's final message:", 1)[-1].strip(), *detail]).strip()
            blocks.append(_copied_summary(ended[1], REQUESTS.get(ended[1], ""), last))
    return "\n".join(blocks) or "<nothing/>"


def _is_event(line: str) -> bool:
    return line.startswith("[") and len(line) > 11 and line[9] == "]"


def _copied_summary(number: str, request: str, last: str) -> str:
    named = f' request="{number}"' if number else ""
    return (f"<summary{named}><request>{escape(request)}</request><investigated>{escape(last)}</investigated>"
            f"<learned>{escape(last)}</learned><completed>{escape(last)}</completed><next_steps></next_steps>"
            f"<notes>{escape(last)}</notes></summary>")




def answer(step: dict, message: dict, *, turn: int, session_id: str, model: str) -> None:
    global LAST_EVENTS
    started = time.time()
    text = user_text(message)
    nudged = "Answer again for the same events" in text  # the worker's nudge after an unusable reply
    if not nudged:
        LAST_EVENTS = text
    if step.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    while step.get("hold_until") and not os.path.exists(str(step["hold_until"])):
        time.sleep(0.05)
    if step.get("sleep"):
        time.sleep(float(step["sleep"]))
        log("slept", turn=turn)  # a test that expects the process stopped mid-sleep looks for this line
    if step.get("crash"):
        if step.get("partial"):
            emit(assistant(session_id, model, step["partial"]))
        sys.stderr.write("fake claude: crashing as scripted\n")
        sys.stderr.flush()
        log("crash", turn=turn)
        os._exit(int(step.get("exit_code", 3)))
    if step.get("error"):
        kind, status, prose = ERRORS[step["error"]]
        emit(assistant(session_id, model, prose, error=kind))
        emit(result(session_id, prose, turn=turn, started=started, status=status, is_error=True))
        return
    if "reply_template" in step:
        reply = str(step["reply_template"])
        for key, value in (("{turn}", turn), ("{chars}", len(text)), ("{session_id}", session_id), ("{text}", text)):
            reply = reply.replace(key, str(value))
    elif "reply" in step:
        reply = str(step["reply"])
    elif step.get("copy"):
        reply = copy_reply(LAST_EVENTS if nudged else text)
    elif step.get("per_event"):
        reply = per_event_reply(LAST_EVENTS if nudged else text, f" @{PROJECT}" if step.get("tag_project") else "")
    else:  # echo, the default
        reply = f"ECHO turn={turn} chars={len(text)}\n{text}"
    emit(assistant(session_id, model, reply))
    tokens = (max(1, len(text) // 4), max(1, len(reply) // 4))
    emit(result(session_id, reply, turn=turn, started=started, tokens=tokens))


PROJECT = ""  # from the system prompt: 'the software project "NAME"'
LAST_EVENTS = ""  # the last message answered per_event: a nudge is answered for the same events
REQUESTS: dict[str, str] = {}  # request number -> its text, as this CLI process was shown them


def main() -> int:
    global PROJECT
    argv = sys.argv[1:]
    system = flag(argv, "--system-prompt") or ""
    if 'project "' in system:
        PROJECT = system.split('project "', 1)[1].split('"', 1)[0]
    log("start", argv=argv, cwd=os.getcwd(), env={k: os.environ[k] for k in LOGGED_ENV if k in os.environ})
    if os.environ.get("FAKE_CLAUDE_START_SLEEP"):
        time.sleep(float(os.environ["FAKE_CLAUDE_START_SLEEP"]))
    model = flag(argv, "--model") or os.environ.get("FAKE_CLAUDE_MODEL", "claude-haiku-4-5")
    resume = flag(argv, "--resume")
    session_id = resume or str(uuid.uuid4())
    resume_unknown = bool(resume and SESSIONS and not os.path.exists(os.path.join(SESSIONS, resume)))
    if SESSIONS and not resume_unknown:
        os.makedirs(SESSIONS, exist_ok=True)
        open(os.path.join(SESSIONS, session_id), "a").close()

    turn = 0
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        message = json.loads(line)
        log("recv", message=message)
        kind = message.get("type")
        if kind == "control_request":
            if resume_unknown:
                # Like the real CLI: the error on stderr and as an error result, then exit 1,
                # before the initialize request is ever answered.
                prose = f"No conversation found with session ID: {resume}"
                sys.stderr.write(prose + "\n")
                sys.stderr.flush()
                emit(result(str(uuid.uuid4()), "", turn=0, started=time.time(), is_error=True, subtype="error_during_execution",
                            errors=[prose]) | {"num_turns": 0})
                log("exit", code=1, reason="resume")
                return 1
            emit({"type": "control_response",
                  "response": {"subtype": "success", "request_id": message.get("request_id"), "response": {}}})
        elif kind == "user":
            turn += 1
            emit({"type": "system", "subtype": "init", "cwd": os.getcwd(), "session_id": session_id, "tools": [],
                  "mcp_servers": [], "model": model, "permissionMode": "default", "claude_code_version": VERSION,
                  "uuid": str(uuid.uuid4())})
            index, step = next_step()
            if in_outage():
                step = {"error": "overloaded"}
            log("step", turn=turn, index=index, step=step)
            answer(step, message, turn=turn, session_id=session_id, model=model)
    log("exit", code=0, reason="eof")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError, KeyboardInterrupt):
        sys.exit(main())
