"""The seam to the observer model: one long Claude conversation through claude-agent-sdk.

An `Observer` owns one Claude Code CLI child (spawned by `ClaudeSDKClient`) and turns each
`send(text)` into exactly one `Reply`. It never raises for model or transport failures: they come
back as `Reply.error`, a `Failure` (store/outages.py):

  auth        no usable login: "Not logged in", a 401/403, or a billing error. Retrying will not help;
              the worker should report the outage once (the CLI stays up, every turn says the same).
  overloaded  529 / "Overloaded" (after the CLI's own few retries, see DEFAULT_ENV).
  rate_limit  429.
  invalid_request  the API rejected this request itself (400 invalid, 413 too long, other 4xx):
              sending the same events again fails the same way.
  api_error   any other API or CLI error result (500, a refused or reset connection, max turns...).
  timeout     the turn took longer than `turn_timeout_s`.
  killed      the CLI died by a signal (the OOM killer, `pkill claude`), while starting or answering.
  start_failed  the CLI exited while starting (non-zero, or after reporting an error), or did not
              finish the handshake within `start_timeout_s`.
  cannot_start  the CLI cannot be run at all: no binary at the path, or not executable.
  crashed     the CLI exited mid-turn or broke the protocol; also "observer is closed".
  empty       the turn ended without any assistant text.

Only "auth" and "cannot_start" say that waiting will not help (worker/faults.py). After a
failed start, `failed_to_start` is true. After "timeout", "killed" and "crashed" the CLI child has
been stopped and the Observer is closed: every later `send()` returns "crashed" ("observer is
closed ...") at once. To go on, make a new Observer with
`resume=observer.session_id` (the conversation up to the last completed turn, as the CLI saved it),
or without `resume` for a fresh one. Other errors leave the CLI running, but the failed user message
stays in the conversation: the CLI merges it into the next request (and keeps it on a plain
resume), so re-sending the same events would put them twice in front of the model, and a request
the API rejected (400) would poison every later turn. `resume_at` (a `Reply.uuid` of a good turn)
resumes the conversation cut just after that turn, which drops what failed since.

If `resume` names a conversation the CLI does not know, `start()` starts a fresh one instead and
sets `resume_failed` to the CLI's message, so the caller can send a recap (a `resume_at` the CLI
does not know falls back to the plain resume first).

Every CLI child gets a unique CLAUDE_MEM_OBSERVER_ID in its environment, inherited by anything it
spawns; `close()` stops the child (stdin EOF, then SIGTERM, then SIGKILL after `grace_s`) and then
sweeps every process still carrying that id.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import time
import uuid
from dataclasses import dataclass
from typing import Any, Literal

import psutil

from claude_mem.processes.census import OBSERVER_ENV, alive, observer_processes
from claude_mem.store.outages import Failure
from claude_mem.text.shorten import cut
from claude_mem.text.storable import storable
from claude_mem.worker import faults

DETAIL_CHARS = 300  # an error's one-line detail

# The CLI otherwise retries 529s with backoff for minutes; 2 retries absorb a blip (~1.5 s of
# backoff) and leave longer outages to the worker's queue backoff. No update checks or telemetry
# from a background process.
# The reply that needs the most is a full batch (batch_chars of events) answered with an
# observation per event, ~250 tokens each: 8,192 leaves room for ~30. The CLI's default is 32,000.
MAX_OUTPUT_TOKENS = 8192
DEFAULT_ENV = {
    "CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(MAX_OUTPUT_TOKENS),
    "CLAUDE_CODE_MAX_RETRIES": "2",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
}

_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


@dataclass
class Reply:
    text: str  # concatenated assistant text of this turn
    session_id: str | None  # the observer conversation id (for resuming later)
    error: Failure | None
    detail: str = ""  # one-line human description of the error
    status: int | None = None  # the HTTP status of an API error, when the CLI reports one
    uuid: str | None = None  # the turn's last assistant message: where `resume_at` can cut the conversation
    model: str | None = None
    usage: dict | None = None  # input/output tokens if the SDK reports them


class Observer:
    def __init__(self, *, model: str, system_prompt: str, cwd: str, cli_path: str | None = None,
                 resume: str | None = None, resume_at: str | None = None, max_turns: int = 3, env: dict[str, str] | None = None,
                 turn_timeout_s: float = 120, start_timeout_s: float = 60, grace_s: float = 3) -> None:
        # max_turns bounds the CLI's agentic loop per message (not the conversation): with no
        # tools one turn is enough; the margin covers the CLI's own retry of an empty reply.
        self.model = model
        self.system_prompt = system_prompt
        self.cwd = cwd
        self.cli_path = cli_path
        self.resume = resume
        self.resume_at = resume_at if resume else None
        self.max_turns = max_turns
        self.env = dict(env or {})
        self.turn_timeout_s = turn_timeout_s
        self.start_timeout_s = start_timeout_s
        self.grace_s = grace_s
        self.session_id: str | None = resume
        self.resume_failed: str | None = None  # the CLI's message when `resume` could not be resumed
        self.failed_to_start = False  # start() ended without a running CLI
        self.turns = 0  # turns completed (with or without an API error)
        self.observer_id = uuid.uuid4().hex
        self._client: Any = None
        self._proc: psutil.Process | None = None
        self._started = False
        self._closed = False
        self._dead: tuple[Failure, str] | None = None  # (category, detail) once the CLI is gone
        self._closing: asyncio.Future[None] | None = None
        self._lock = asyncio.Lock()
        self._stderr: collections.deque[str] = collections.deque(maxlen=20)

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The CLI child's pid while it runs."""
        return self._proc.pid if self._proc is not None else None

    @property
    def closed(self) -> bool:
        return self._closed

    async def start(self) -> None:
        """Spawn the CLI and complete the SDK handshake. Never raises for CLI failures: they are
        returned by the next `send()`. Idempotent."""
        if self._started or self._closed:
            return
        self._started = True
        failure = await self._connect(self.resume, self.resume_at)
        if failure is not None and self.resume_at and failure[0] == "resume":
            failure = await self._connect(self.resume)
        if failure is not None and self.resume and failure[0] == "resume":
            self.resume_failed = failure[1]
            self.session_id = None
            failure = await self._connect(None)
        if failure is not None:
            self.failed_to_start = True
            category = Failure.START_FAILED if failure[0] == "resume" else failure[0]
            await self._shutdown(category, failure[1], graceful=False)

    async def close(self) -> None:
        """Stop the CLI child for sure. Idempotent; safe to call while a send() is under way."""
        await self._shutdown(Failure.CRASHED, "observer is closed", graceful=True)

    async def __aenter__(self) -> Observer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _options(self, resume: str | None, resume_at: str | None) -> Any:
        from claude_agent_sdk import ClaudeAgentOptions

        env = {**DEFAULT_ENV, **self.env, OBSERVER_ENV: self.observer_id}
        return ClaudeAgentOptions(
            tools=[],  # no tools at all: the observer only reads and writes text
            setting_sources=[],  # never the user's settings or hooks: the observer must not observe itself
            strict_mcp_config=True,  # and no MCP servers from any config
            model=self.model,
            # Observing a tool event needs no deliberation, and a real model bills thinking as
            # output: without this the CLI asks for a 31,999-token thinking budget.
            thinking={"type": "disabled"},
            system_prompt=self.system_prompt,
            max_turns=self.max_turns,
            cwd=self.cwd,  # inside the data dir, so these sessions stay out of the user's `claude --resume`
            resume=resume,
            resume_session_at=resume_at,
            cli_path=self.cli_path or None,
            env=env,
            stderr=self._stderr.append,
        )

    async def _connect(self, resume: str | None, resume_at: str | None = None) -> tuple[Failure | Literal["resume"], str] | None:
        """Connect a client; returns None, or (category, detail) where category "resume" means
        the CLI refused to resume."""
        from claude_agent_sdk import ClaudeSDKClient, ResultError

        client = ClaudeSDKClient(self._options(resume, resume_at))
        # connect() runs as its own task so a hung handshake can be ended by stopping the CLI
        # (the SDK then fails the pending initialize at once) rather than by cancelling it.
        task = asyncio.ensure_future(client.connect())
        done, _ = await asyncio.wait({task}, timeout=self.start_timeout_s)
        if not done:
            await self._kill_tree()
            done, _ = await asyncio.wait({task}, timeout=self.grace_s + 15)
            if done:
                task.exception()  # retrieved, so asyncio does not log it as lost
            else:
                task.cancel()
            await self._disconnect(client)
            await self._kill_tree()
            return Failure.START_FAILED, f"the Claude CLI did not start within {self.start_timeout_s:g}s"
        exc = task.exception()
        if isinstance(exc, ResultError):
            # The CLI reported an error before the first turn and exited; with --resume this
            # is "No conversation found with session ID: ..." (or a title it does not know).
            detail = cut(str("; ".join(exc.errors) or exc.result or exc), DETAIL_CHARS)
            await self._kill_tree()
            return ("resume" if resume else Failure.START_FAILED), detail
        if exc is not None:  # CLINotFoundError, CLIConnectionError, ProcessError, ...
            await self._kill_tree()
            category, what = faults.cli_failure(exc, starting=True)
            return category, self._describe(exc, what)
        if self._closed:  # close() ran while the handshake was under way
            await self._disconnect(client)
            await self._kill_tree()
            return Failure.CRASHED, "observer is closed"
        self._client = client
        self._proc = self._find_child()
        return None

    # --- one turn -------------------------------------------------------------------------------

    async def send(self, text: str) -> Reply:
        """Send one user message and collect the reply of that turn."""
        async with self._lock:
            if not self._started and not self._closed:
                await self.start()
            if self._dead is not None or self._client is None:
                category, detail = self._dead or (Failure.CRASHED, "observer is closed")
                return Reply(text="", session_id=self.session_id, error=category, detail=detail)
            try:
                async with asyncio.timeout(self.turn_timeout_s):
                    reply = await self._turn(text)
            except TimeoutError:
                reply = Reply(text="", session_id=self.session_id, error=Failure.TIMEOUT,
                              detail=f"no reply within {self.turn_timeout_s:g}s; the Claude CLI was stopped")
            except Exception as exc:  # the CLI died or broke the protocol
                category, what = faults.cli_failure(exc, starting=False)
                reply = Reply(text="", session_id=self.session_id, error=category, detail=self._describe(exc, what))
            if reply.error in (Failure.TIMEOUT, Failure.KILLED, Failure.CRASHED):
                await self._shutdown(Failure.CRASHED, f"observer is closed after {reply.error}: {reply.detail}", graceful=False)
            else:
                self.turns += 1
            return reply

    async def _turn(self, text: str) -> Reply:
        from claude_agent_sdk import AssistantMessage, ResultMessage, SystemMessage, TextBlock

        await self._client.query(text)
        texts: list[str] = []
        assistant_errors: list[str] = []
        model: str | None = None
        last_uuid: str | None = None
        result: Any = None
        async for message in self._client.receive_response():
            if isinstance(message, AssistantMessage):
                if message.parent_tool_use_id is not None:
                    continue
                texts.extend(block.text for block in message.content if isinstance(block, TextBlock))
                if message.error:
                    assistant_errors.append(message.error)
                if model is None and message.model and message.model != "<synthetic>":
                    model = message.model
                last_uuid = message.uuid or last_uuid
                self.session_id = message.session_id or self.session_id
            elif isinstance(message, ResultMessage):
                result = message
                self.session_id = message.session_id or self.session_id
            elif isinstance(message, SystemMessage) and message.subtype == "init":
                # Known before the reply: a turn that then times out can still be resumed.
                self.session_id = message.data.get("session_id") or self.session_id
        # The CLI's JSON may carry a lone surrogate (a reply cut inside an emoji): made storable
        # here, or keeping the reply (raw_replies, the rows parsed from it) would fail.
        reply_text = storable("\n".join(t for t in texts if t))
        if result is None:
            # The stream ended without a result: the CLI exited (cleanly or not) mid-turn.
            return Reply(text=reply_text, session_id=self.session_id, error=Failure.CRASHED, model=model,
                         detail=self._describe(None, "the Claude CLI exited before finishing the turn"))
        error, detail = classify(result, assistant_errors, reply_text)
        status = getattr(result, "api_error_status", None)
        return Reply(text=reply_text, session_id=self.session_id, error=error, detail=detail, model=model,
                     usage=_usage(result.usage), status=status if error and isinstance(status, int) else None, uuid=last_uuid)

    # --- stopping the CLI -----------------------------------------------------------------------

    async def _shutdown(self, category: Failure, detail: str, *, graceful: bool) -> None:
        """Mark the Observer dead and stop its CLI. The work runs in one shielded task: a caller
        cancelled meanwhile (SIGTERM in the worker) cannot leave the child half-stopped, and a
        later close() waits for the same task."""
        if self._dead is None:
            self._dead = (category, detail)
        self._closed = True
        self._started = True
        if self._closing is None:
            self._closing = asyncio.ensure_future(self._stop(graceful))
        await asyncio.shield(self._closing)

    async def _stop(self, graceful: bool) -> None:
        client = self._client
        if client is not None:
            if not graceful:
                await self._kill_tree()  # mid-turn or broken: nothing worth flushing
            # stdin EOF lets a healthy CLI flush its transcript and exit by itself; the SDK's
            # disconnect also reaps the child (after a kill too).
            task = asyncio.ensure_future(self._disconnect(client))
            done, _ = await asyncio.wait({task}, timeout=self.grace_s)
            if not done:
                await self._kill_tree()
                await asyncio.wait({task}, timeout=self.grace_s + 15)
            self._client = None
        await self._kill_tree()  # anything the CLI spawned, or a child the SDK lost track of
        self._proc = None

    async def _disconnect(self, client: Any) -> None:
        with contextlib.suppress(Exception):
            await client.disconnect()

    def _find_child(self) -> psutil.Process | None:
        for proc in self._marked_processes(psutil.Process().children()):
            return proc
        return None

    def _marked_processes(self, candidates: Any = None) -> list[psutil.Process]:
        """Processes carrying this observer's id: the CLI child and anything it spawned."""
        return observer_processes(observer_id=self.observer_id, candidates=candidates)

    async def _kill_tree(self) -> None:
        """SIGTERM every process of this observer, SIGKILL what is left after `grace_s`.

        Waiting polls instead of psutil.wait(): reaping the SDK's own child here would leave its
        asyncio child watcher without an exit status."""
        procs = await asyncio.to_thread(self._marked_processes)
        if self._proc is not None and self._proc not in procs:
            procs.append(self._proc)
        procs = [p for p in procs if alive(p)]
        if not procs:
            return
        for sig in ("terminate", "kill"):
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    getattr(proc, sig)()
            deadline = time.monotonic() + (self.grace_s if sig == "terminate" else 5)
            while procs and time.monotonic() < deadline:
                await asyncio.sleep(0.05)
                procs = [p for p in procs if alive(p)]
            if not procs:
                return

    def _describe(self, exc: BaseException | None, prefix: str) -> str:
        parts = [prefix]
        if exc is not None:
            parts.append(f"{type(exc).__name__}: {exc}")
        if self._stderr:
            parts.append(f"stderr: {self._stderr[-1]}")
        return cut(" — ".join(parts), DETAIL_CHARS)


def classify(result: Any, assistant_errors: list[str], text: str) -> tuple[Failure | None, str]:
    """Map a finished turn to (error category or None, one-line detail).

    The CLI reports an API failure as an assistant message with `error` set (authentication_failed,
    rate_limit, server_error, billing_error, invalid_request, unknown) whose text is the prose
    ("API Error: 529 Overloaded..."), followed by a result with is_error and api_error_status."""
    status = getattr(result, "api_error_status", None)
    if not getattr(result, "is_error", False) and not assistant_errors:
        if not text.strip():
            return Failure.EMPTY, "the model returned no text"
        return None, ""
    prose = getattr(result, "result", None) or "; ".join(getattr(result, "errors", None) or []) or text
    prose = prose or getattr(result, "subtype", "") or "error result"
    detail = cut(str(prose), DETAIL_CHARS)
    kind = assistant_errors[-1] if assistant_errors else ""
    lowered = prose.lower()
    if kind in ("authentication_failed", "billing_error") or status in (401, 403) or "not logged in" in lowered:
        return Failure.AUTH, detail
    if status == 529 or "overloaded" in lowered:
        return Failure.OVERLOADED, detail
    if status == 429 or kind == "rate_limit":
        return Failure.RATE_LIMIT, detail
    # 408 (request timeout) and 409 (conflict) say nothing about the request's content.
    if (isinstance(status, int) and 400 <= status < 500 and status not in (408, 409)) or kind == "invalid_request":
        return Failure.INVALID_REQUEST, detail
    return Failure.API_ERROR, detail


def _usage(raw: Any) -> dict | None:
    if not isinstance(raw, dict):
        return None
    usage = {k: raw[k] for k in _TOKEN_FIELDS if isinstance(raw.get(k), int)}
    return usage or None
