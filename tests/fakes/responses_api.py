"""A fake OpenAI Responses API on 127.0.0.1, for driving the real Codex CLI without a network.

Codex speaks only `POST /v1/responses` with `stream: true`: each answer is a server-sent event
stream (`response.created`, one `response.output_item.done` per output item, `response.completed`).

    with FakeResponsesAPI(script) as api:
        ... codex exec -c model_providers.fake.base_url=api.url ...
        api.requests        # every request body, decoded

`script(request, n)` sees every request (its body and how many came before it) and returns the
output items to stream: `shell(...)` for a tool call, `say(...)` for the assistant's message.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_ids = itertools.count(1)

Script = Callable[[dict[str, Any], int], list[dict[str, Any]]]


def say(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "id": f"msg_{next(_ids)}",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}


def shell(command: str, call_id: str | None = None) -> dict[str, Any]:
    """A call of Codex's `exec_command` tool (its hooks name it "Bash")."""
    return {"type": "function_call", "id": f"fc_{next(_ids)}", "call_id": call_id or f"call_{next(_ids)}",
            "name": "exec_command", "arguments": json.dumps({"cmd": command})}


def has_tool_output(request: dict[str, Any]) -> bool:
    """The request carries a tool's result: the model's turn goes on after a call."""
    return any(isinstance(i, dict) and i.get("type") == "function_call_output" for i in request.get("input", []))


def developer_text(request: dict[str, Any]) -> str:
    """Every developer message of a request, joined: where Codex puts hook additionalContext."""
    parts = []
    for item in request.get("input", []):
        if isinstance(item, dict) and item.get("role") == "developer":
            content = item.get("content")
            for c in content if isinstance(content, list) else [{"text": content}]:
                if isinstance(c, dict) and isinstance(c.get("text"), str):
                    parts.append(c["text"])
    return "\n".join(parts)


class FakeResponsesAPI:
    def __init__(self, script: Script) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> FakeResponsesAPI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        with self._lock:
            n = len(self.requests)
            self.requests.append(body)
        return self.script(body, n)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # /v1/models and the like: nothing to offer
                self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.endswith("/responses"):
                    self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})
                    return
                items = api._answer(json.loads(raw or b"{}"))
                rid = f"resp_{next(_ids)}"
                events = [{"type": "response.created", "response": {"id": rid}}]
                events += [{"type": "response.output_item.done", "output_index": i, "item": item}
                           for i, item in enumerate(items)]
                events.append({"type": "response.completed", "response": {
                    "id": rid, "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0},
                                         "output_tokens": 5, "output_tokens_details": {"reasoning_tokens": 0},
                                         "total_tokens": 15}}})
                stream = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(stream)))
                self.end_headers()
                self.wfile.write(stream)

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
