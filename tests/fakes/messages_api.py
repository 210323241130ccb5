"""A fake Anthropic Messages API on 127.0.0.1, for driving the real Claude Code CLI (or the
observer through claude-agent-sdk) without a network.

    with FakeMessagesAPI([write(...), read(...), bash(...)]) as api:
        env["ANTHROPIC_BASE_URL"] = api.url
        ... run `claude -p` ...
        api.requests        # every request, body decoded
        api.issued_tool_use_ids

Who is asking: requests with a non-empty `tools` list come from the main agent; those without
(an observer run with `tools=[]`, or the CLI's own side requests such as title generation) do
not. A list script answers the main agent by conversation position (the number of assistant
turns already in `messages`), not by arrival order, so the CLI's retries and its side requests
running in parallel cannot shift it. A callable script sees every request and decides alone.

Note: the CLI puts hook output (SessionStart's additionalContext) and its environment block in
a `role: "system"` entry of `messages`, not only in the top-level `system` field;
`ApiRequest.system_text()` reads both.
"""

from __future__ import annotations

import gzip
import itertools
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    return f"{prefix}_fake{next(_ids):06d}{threading.get_ident() % 10000:04d}"


# --- replies ----------------------------------------------------------------------------------

@dataclass
class Reply:
    """One assistant message: Anthropic content blocks and why it stopped."""

    content: list[dict[str, Any]]
    stop_reason: str = "end_turn"


@dataclass
class ApiError:
    """An error response. It always carries `x-should-retry: false`: the CLI otherwise retries
    overloaded/5xx answers with backoff for minutes."""

    status: int = 529
    type: str = "overloaded_error"
    message: str = "fake API: scripted error"


def text(message: str) -> Reply:
    return Reply([{"type": "text", "text": message}])


def tool_use(name: str, tool_input: dict[str, Any], *, tool_use_id: str | None = None,
             preface: str | None = None) -> Reply:
    blocks: list[dict[str, Any]] = []
    if preface:
        blocks.append({"type": "text", "text": preface})
    blocks.append({"type": "tool_use", "id": tool_use_id or _new_id("toolu"), "name": name, "input": tool_input})
    return Reply(blocks, stop_reason="tool_use")


def write(path: str, content: str) -> Reply:
    return tool_use("Write", {"file_path": path, "content": content})


def read(path: str) -> Reply:
    return tool_use("Read", {"file_path": path})


def edit(path: str, old: str, new: str) -> Reply:
    return tool_use("Edit", {"file_path": path, "old_string": old, "new_string": new})


def bash(command: str, description: str = "Run a command") -> Reply:
    return tool_use("Bash", {"command": command, "description": description})


# --- requests ---------------------------------------------------------------------------------

@dataclass
class ApiRequest:
    method: str
    path: str  # without the query string
    query: str
    headers: dict[str, str]
    body: Any  # decoded JSON, or None

    @property
    def is_messages(self) -> bool:
        return self.method == "POST" and self.path.rstrip("/") == "/v1/messages"

    @property
    def tools(self) -> list[Any]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        return tools if isinstance(tools, list) else []

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages") if isinstance(self.body, dict) else None
        return messages if isinstance(messages, list) else []

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and self.body.get("stream") is True

    def assistant_turns(self) -> int:
        return sum(1 for m in self.messages if isinstance(m, dict) and m.get("role") == "assistant")

    def system_text(self) -> str:
        """The top-level `system` plus every `role: "system"` message, as one string."""
        parts = [_flatten(self.body.get("system"))] if isinstance(self.body, dict) else []
        parts += [_flatten(m.get("content")) for m in self.messages if isinstance(m, dict) and m.get("role") == "system"]
        return "\n".join(p for p in parts if p)

    def all_text(self) -> str:
        return "\n".join([self.system_text(), *(_flatten(m.get("content")) for m in self.messages if isinstance(m, dict))])

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result block in the conversation, oldest first."""
        return [block for m in self.messages if isinstance(m, dict) and isinstance(m.get("content"), list)
                for block in m["content"] if isinstance(block, dict) and block.get("type") == "tool_result"]


def _flatten(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_flatten(item) for item in content)
    if isinstance(content, dict):
        if isinstance(content.get("text"), str):
            return content["text"]
        return _flatten(content.get("content"))
    return ""


Answer = Reply | ApiError | str | None
Script = Callable[[ApiRequest], Answer]


class AgentScript:
    """Answers the main agent by conversation position: with n assistant turns already in the
    request, reply `steps[n]`; after the last step, `final`. Everything without tools gets
    `side` (a string, or a callable deciding per request)."""

    def __init__(self, steps: Sequence[Reply | ApiError | str], *, final: str = "All done.",
                 side: str | Script = "OK") -> None:
        self.steps = list(steps)
        self.final = final
        self.side = side

    def __call__(self, request: ApiRequest) -> Answer:
        if not request.tools:
            return self.side(request) if callable(self.side) else self.side
        n = request.assistant_turns()
        return self.steps[n] if n < len(self.steps) else self.final


# --- the server -------------------------------------------------------------------------------

class FakeMessagesAPI:
    """Context manager running the fake on a free port of 127.0.0.1 in a daemon thread.

    `script`: a callable `(ApiRequest) -> Reply | ApiError | str | None` for every
    `POST /v1/messages` (None means `text`), or a list of main-agent steps (see AgentScript);
    `text` answers requests without tools when a list is given. A script that raises becomes a
    500 error (with `x-should-retry: false`) and is kept in `script_errors`.
    """

    def __init__(self, script: Script | Sequence[Reply | ApiError | str] | None = None, *,
                 text: str | Script = "OK", final_text: str = "All done.") -> None:
        if script is None:
            script = []
        self.script: Script = script if callable(script) else AgentScript(script, final=final_text, side=text)
        self.default_text = text if isinstance(text, str) else "OK"
        self.requests: list[ApiRequest] = []
        self.replies: list[tuple[ApiRequest, Reply | ApiError]] = []
        self.script_errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle
    def start(self) -> FakeMessagesAPI:
        handler = type("Handler", (_Handler,), {"api": self})
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="fake-messages-api", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeMessagesAPI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return self._server.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # what was asked and answered
    def messages_requests(self) -> list[ApiRequest]:
        with self._lock:
            return [r for r in self.requests if r.is_messages]

    def agent_requests(self) -> list[ApiRequest]:
        return [r for r in self.messages_requests() if r.tools]

    def side_requests(self) -> list[ApiRequest]:
        return [r for r in self.messages_requests() if not r.tools]

    @property
    def issued_tool_use_ids(self) -> list[str]:
        """Distinct tool_use ids sent to the client, in order (a retried step re-sends its id)."""
        seen: dict[str, None] = {}
        with self._lock:
            for _, reply in self.replies:
                if isinstance(reply, Reply):
                    for block in reply.content:
                        if block.get("type") == "tool_use":
                            seen.setdefault(block["id"], None)
        return list(seen)

    # used by the handler
    def _record(self, request: ApiRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _answer(self, request: ApiRequest) -> Reply | ApiError:
        try:
            answer = self.script(request)
        except Exception as exc:  # a broken script must show up in the test, not hang the CLI
            with self._lock:
                self.script_errors.append(exc)
            answer = ApiError(500, "api_error", f"fake API script failed: {exc!r}")
        if answer is None:
            answer = self.default_text
        reply = text(answer) if isinstance(answer, str) else answer
        with self._lock:
            self.replies.append((request, reply))
        return reply


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client killed mid-request is a test's doing
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    api: FakeMessagesAPI
    protocol_version = "HTTP/1.1"  # keep-alive, as the CLI's HTTP client expects
    timeout = 60  # an idle keep-alive connection frees its thread eventually

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output clean; the requests are recorded instead

    def do_POST(self) -> None:
        request = self._read_request()
        if request.is_messages:
            self._messages(request)
        elif request.path.rstrip("/") == "/v1/messages/count_tokens":
            self._send_json(200, {"input_tokens": max(1, len(json.dumps(request.body or {})) // 4)})
        else:
            self._send_json(200, {})

    def do_GET(self) -> None:
        self._read_request()
        self._send_json(200, {})

    def do_HEAD(self) -> None:
        self._read_request()
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _read_request(self) -> ApiRequest:
        parts = urlsplit(self.path)
        raw = b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = self._read_chunked()
        else:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            raw = gzip.decompress(raw)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = ApiRequest(self.command, parts.path, parts.query, {k.lower(): v for k, v in self.headers.items()}, body)
        self.api._record(request)
        return request

    def _read_chunked(self) -> bytes:
        chunks = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                self.rfile.readline()
                return b"".join(chunks)
            chunks.append(self.rfile.read(size))
            self.rfile.readline()

    def _messages(self, request: ApiRequest) -> None:
        reply = self.api._answer(request)
        if isinstance(reply, ApiError):
            self._send_json(reply.status, {"type": "error", "error": {"type": reply.type, "message": reply.message}},
                            extra={"x-should-retry": "false"})
            return
        body = request.body if isinstance(request.body, dict) else {}
        message = {
            "id": _new_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": body.get("model") or "claude-fake",
            "content": reply.content,
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            # About what the API would count (characters / 4): the observer renews its
            # conversation by the size its requests report.
            "usage": {"input_tokens": max(1, len(json.dumps([body.get("system"), body.get("messages")])) // 4),
                      "output_tokens": max(1, len(json.dumps(reply.content)) // 4),
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        }
        if request.stream:
            self._send(200, _sse(message), "text/event-stream; charset=utf-8")
        else:
            self._send_json(200, message)

    def _send_json(self, status: int, data: Any, extra: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps(data).encode(), "application/json", extra)

    def _send(self, status: int, payload: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.send_header("request-id", _new_id("req"))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. it was killed); nothing to tell it


def _sse(message: dict[str, Any]) -> bytes:
    """The whole event stream for one message. Sent at once: the client parses events, not
    timing, and a known Content-Length keeps the connection reusable."""
    events: list[tuple[str, dict[str, Any]]] = []
    start = {**message, "content": [], "stop_reason": None, "usage": {**message["usage"], "output_tokens": 1}}
    events.append(("message_start", {"type": "message_start", "message": start}))
    for index, block in enumerate(message["content"]):
        kind = block.get("type")
        if kind == "text":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {"type": "text", "text": ""}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": block["text"]}}))
        elif kind == "tool_use":
            events.append(("content_block_start", {"type": "content_block_start", "index": index,
                                                   "content_block": {**block, "input": {}}}))
            events.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta",
                                                             "partial_json": json.dumps(block["input"])}}))
        else:  # e.g. a thinking block: sent whole
            events.append(("content_block_start", {"type": "content_block_start", "index": index, "content_block": block}))
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": message["usage"]["output_tokens"]}}))
    events.append(("message_stop", {"type": "message_stop"}))
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()

