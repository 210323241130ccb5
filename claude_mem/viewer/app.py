"""The viewer's HTTP side: the static page, JSON endpoints and a server-sent event stream.

Guarding (a pure ASGI wrapper, so the event stream is not buffered):
- On a loopback address the Host header must name a loopback host: otherwise any web page
  could read memory through DNS rebinding (its own name re-pointed at 127.0.0.1).
- With a token, every request carries it: `Authorization: Bearer`, the cookie the page gets
  when opened as `/?token=...` (EventSource cannot send headers), or `?token=` for scripts.
  Tokens are compared in constant time and never logged (uvicorn's access log is off).

The one write, a person's mark or undo (POST /api/marks), takes a JSON body: a web page of
another origin cannot send one without the browser asking first (CORS preflight, which is not
answered), and a request whose Origin names another host is refused.

The stream polls `PRAGMA data_version` (a counter SQLite bumps when another connection commits;
reading it costs microseconds) and sends the rows past the client's cursor when it moves.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import os
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from claude_mem.store.memories import OBSERVATION_TYPES
from claude_mem.store.reads import parse_ref
from claude_mem.viewer import data

if TYPE_CHECKING:
    from claude_mem.recall.index import Index
    from claude_mem.settings import Config

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
TOKEN_COOKIE = "claude_mem_viewer_token"
POLL_S = 0.25
HEALTH_EVERY_S = 5.0
HEALTH_MIN_GAP_S = 1.0  # a burst of commits sends one health update, not one per commit
REVIVE_EVERY_S = 10.0  # how often health looks for events no worker is left to take
MAX_QUERY_CHARS = 1000
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
                                 b" connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # any other name may resolve to a reachable address


class BadRequest(Exception):
    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


# -- guarding -----------------------------------------------------------------------------------

class Guard:
    """Host check, token check and security headers around the whole app."""

    def __init__(self, app: ASGIApp, *, token: str | None, loopback_only: bool) -> None:
        self.app = app
        self.token = token
        self.loopback_only = loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        request = Request(scope)
        refusal = self._refusal(request)
        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
            return
        query_token = request.query_params.get("token")
        if self.token and query_token and request.method == "GET" and not scope["path"].startswith("/api/"):
            # Trade the token in the address bar for a cookie, and drop it from the address
            # (history, screenshots) with a redirect.
            rest = urlencode([(k, v) for k, v in parse_qsl(scope.get("query_string", b"").decode()) if k != "token"])
            response = RedirectResponse(scope["path"] + ("?" + rest if rest else ""), status_code=303)
            response.set_cookie(TOKEN_COOKIE, self.token, httponly=True, samesite="strict", path="/")
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _refusal(self, request: Request) -> Response | None:
        if self.loopback_only and not is_loopback(request.url.hostname or ""):
            return _error(421, "this viewer answers only to a loopback host name (127.0.0.1, localhost, [::1])")
        if self.token is None:
            return None
        given = _bearer(request) or request.cookies.get(TOKEN_COOKIE) or request.query_params.get("token") or ""
        if hmac.compare_digest(given.encode(), self.token.encode()):
            return None
        if request.url.path.startswith("/api/"):
            return _error(401, "missing or wrong token: open the address `claude-mem viewer` printed (it ends in ?token=...)")
        return PlainTextResponse("This claude-mem viewer needs its token: open the address `claude-mem viewer` printed"
                                 " (it ends in ?token=...).\n", status_code=401)


def _bearer(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers={"cache-control": "no-store"})


# -- parameters ---------------------------------------------------------------------------------

def _int(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name} must be a whole number from {low} to {high}, got {raw[:40]!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"{name} must be from {low} to {high}, got {value}")
    return value


def _text(request: Request, name: str, limit: int = 500) -> str | None:
    value = (request.query_params.get(name) or "").strip()
    if len(value) > limit:
        raise BadRequest(f"{name} is longer than {limit} characters")
    return value or None


def _choice(request: Request, name: str, choices: tuple[str, ...]) -> str | None:
    value = _text(request, name)
    if value is not None and value not in choices:
        raise BadRequest(f"{name} must be one of {', '.join(choices)}, got {value[:40]!r}")
    return value


def _cursor(raw: str, name: str) -> data.Cursor:
    try:
        return data.Cursor.parse(raw)
    except ValueError as exc:
        raise BadRequest(f"{name}: {exc}") from None


# -- the app ------------------------------------------------------------------------------------

def create_app(config: Config, *, token: str | None = None, loopback_only: bool = True, index: Index | None = None,
               use_index: bool = True, poll_s: float = POLL_S, stopping: threading.Event | None = None) -> ASGIApp:
    """The viewer for the database in `config`. `loopback_only` turns on the Host check; the
    searches go to the memory service (keywords alone when it cannot answer in time), or to
    `index` in this process when one is given, or to keywords alone when `use_index` is False. Event streams end once
    `stopping` is set, so a server shutting down need not wait them out."""
    stopping = stopping or threading.Event()
    db_path = config.db_path

    def read(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with data.reader(db_path) as conn:
            return fn(conn, *args, **kwargs)

    revived_at = [0.0]

    def health_of(conn: Any) -> dict[str, Any]:
        # The viewer may be what runs next: events no worker is left to take get one (issue 11).
        if time.monotonic() - revived_at[0] >= REVIVE_EVERY_S:
            revived_at[0] = time.monotonic()
            from claude_mem.worker import stranded

            stranded.revive(config, conn)
        return data.health(config, conn)

    def page(request: Request) -> Response:
        return FileResponse(os.path.join(STATIC_DIR, "index.html"), headers={"cache-control": "no-store"})

    def api_projects(request: Request) -> Response:
        return _json({"projects": read(data.projects)})

    def api_feed(request: Request) -> Response:
        items, cursor = read(data.feed, project=_text(request, "project"), limit=_int(request, "limit", 50, 1, 500))
        return _json({"items": items, "cursor": str(cursor)})

    def api_search(request: Request) -> Response:
        from claude_mem.recall.search import KINDS, MODES, search

        query = _text(request, "q", MAX_QUERY_CHARS)
        if query is None:
            raise BadRequest("q is required: the words to search for")
        kinds = tuple(k for k in (_text(request, "kinds") or ",".join(KINDS)).split(",") if k)
        unknown = [k for k in kinds if k not in KINDS]
        if unknown or not kinds:
            raise BadRequest(f"kinds must be a comma-separated list of {', '.join(KINDS)}, got {','.join(unknown)[:60]!r}")
        mode = _choice(request, "mode", MODES) or "hybrid"
        filters = {"project": _text(request, "project"), "type_": _choice(request, "type", OBSERVATION_TYPES), "kinds": kinds,
                   "limit": _int(request, "limit", 20, 1, 100)}
        if index is not None:
            result = read(search, query, index=index, mode=mode, **filters)
        elif use_index:
            from claude_mem.recall.through_service import search_memory

            result = read(lambda conn: search_memory(config, conn, query, mode=mode, **filters))
        else:
            result = read(search, query, index=None, mode=mode, **filters)
        note = result.note
        from claude_mem.recall.views import replaced_notes

        notes = read(replaced_notes, result.hits)
        hits = [{**asdict(h), "mark": notes.get(h.id, "") if h.kind == "observation" and h.origin is None else ""}
                for h in result.hits]
        return _json({"query": query, "mode": result.mode, "note": note, "hits": hits})

    def api_observation(request: Request) -> Response:
        raw = request.path_params["observation_id"]
        if not raw.isdigit() or len(raw) > 18:
            raise BadRequest(f"an observation id is a positive whole number, got {raw[:40]!r}")
        found = read(data.observation_detail, int(raw))
        if found is None:
            raise BadRequest(f"no observation {int(raw)}", 404)
        return _json(found)

    def api_remote(request: Request) -> Response:
        """A teammate's memory (a search hit from a shared Chroma server), from its documents."""
        from claude_mem.recall import remote
        from claude_mem.recall.index import IndexUnavailable

        raw = request.path_params["ref"]
        parsed = parse_ref(raw)
        if parsed is None or parsed[2] is None:
            raise BadRequest(f"a teammate's memory is named like obs:12@laptop-b, got {raw[:80]!r}")
        if index is None and use_index:  # through the memory service, which holds the Chroma client
            from claude_mem.recall.through_service import remote_record

            if not config.chroma_url:
                raise BadRequest("no shared Chroma server is set up here (setting chroma_url)", 404)
            try:
                found = remote_record(config, *parsed)
            except LookupError as exc:
                raise BadRequest(str(exc), 409) from None
        else:
            if index is None or not index.url:
                raise BadRequest("no shared Chroma server is set up here (setting chroma_url)", 404)
            try:
                found = remote.find_record(index, *parsed)
            except IndexUnavailable as exc:
                raise BadRequest(str(exc), 503) from None
            except LookupError as exc:
                raise BadRequest(str(exc), 409) from None
        if found is None:
            raise BadRequest(f"no {raw} on the shared server", 404)
        return _json(found)

    def api_session(request: Request) -> Response:
        session_id = request.path_params["session_id"]
        if len(session_id) > 500:
            raise BadRequest("a session id is at most 500 characters")
        found = read(data.session_timeline, session_id)
        if found is None:
            raise BadRequest(f"no session {session_id[:80]!r}", 404)
        return _json(found)

    async def api_marks(request: Request) -> Response:
        """A person says an observation is no longer true (or takes that back)."""
        body = _mark_request(request.headers, await request.body())
        try:
            done = await run_in_threadpool(data.change_mark, db_path, body["old"], body.get("new"), undo=bool(body.get("undo")),
                                           duplicate=bool(body.get("duplicate")), reason=body["reason"])
        except data.MarkRefused as exc:
            raise BadRequest(str(exc), 409) from None
        return _json(done)

    def api_health(request: Request) -> Response:
        return _json(read(health_of))

    def api_stats(request: Request) -> Response:
        return _json(read(data.costs_of, _text(request, "project"), _int(request, "limit", 50, 1, 500)))

    async def api_stream(request: Request) -> Response:
        project = _text(request, "project")
        resume = request.headers.get("last-event-id") or request.query_params.get("after")
        # Fixed before the response starts: a row stored once the client has its headers is news.
        cursor = _cursor(resume, "after") if resume else await run_in_threadpool(read, data.current_cursor)
        return StreamingResponse(_events(cursor, project), media_type="text/event-stream",
                                 headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    async def _events(cursor: data.Cursor, project: str | None) -> AsyncIterator[str]:
        # Opened here, not in the endpoint: a generator that never starts never runs its `finally`.
        conn = await run_in_threadpool(data.open_reader, db_path)
        try:
            yield "retry: 2000\n\n"
            version: int | None = None
            health_sent = 0.0
            health_due = True
            while not stopping.is_set():
                current = conn.execute("PRAGMA data_version").fetchone()[0]
                if current != version:
                    version = current
                    items, cursor, more = await run_in_threadpool(data.new_since, conn, cursor, project)
                    for n, item in enumerate(items):
                        # Only the batch's last event carries the cursor: a client cut off mid-batch
                        # resumes from the one before and gets the whole batch again (it skips repeats).
                        yield _sse("item", item, str(cursor) if n == len(items) - 1 else None)
                    if more:
                        version = None
                    health_due = True
                now = time.monotonic()
                if (health_due and now - health_sent >= HEALTH_MIN_GAP_S) or now - health_sent >= HEALTH_EVERY_S:
                    yield _sse("health", await run_in_threadpool(health_of, conn), None)
                    health_sent, health_due = now, False
                await asyncio.sleep(poll_s)
        finally:
            conn.close()

    async def bad_request(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, BadRequest)
        return _error(exc.status, str(exc))

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        message = {404: f"nothing at {request.url.path[:200]}", 405: f"{request.method} is not allowed here"}.get(exc.status_code,
                                                                                                            str(exc.detail))
        return _error(exc.status_code, message)

    async def server_error(request: Request, exc: Exception) -> Response:
        from claude_mem.logs import log_line

        # The exception only, never the request: its query string may hold a token or search words.
        detail = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
        log_line(config.logs_dir, "viewer", f"error: {request.url.path[:100]} failed: {detail}")
        return _error(500, f"the viewer failed ({detail}); see `claude-mem logs`")

    async def missing_db(request: Request, exc: Exception) -> Response:
        return _error(503, f"{exc}: was the data dir removed? Restart the viewer once claude-mem has captured something")

    routes = [
        Route("/", page),
        Route("/api/projects", api_projects),
        Route("/api/feed", api_feed),
        Route("/api/stream", api_stream),
        Route("/api/search", api_search),
        Route("/api/observation/{observation_id}", api_observation),
        Route("/api/session/{session_id:path}", api_session),
        Route("/api/remote/{ref}", api_remote),
        Route("/api/marks", api_marks, methods=["POST"]),
        Route("/api/health", api_health),
        Route("/api/stats", api_stats),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        BadRequest: bad_request, HTTPException: http_error, data.DatabaseMissing: missing_db, Exception: server_error}
    app = Starlette(routes=routes, exception_handlers=handlers)
    return Guard(app, token=token, loopback_only=loopback_only)


def _mark_request(headers: Any, raw: bytes) -> dict[str, Any]:
    """The checked body of a mark request, from this viewer's own page only."""
    origin = headers.get("origin")
    if origin and urlsplit(origin).netloc != headers.get("host", ""):
        raise BadRequest("marks are changed from this viewer's own page only", 403)
    if headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise BadRequest("send the mark as a JSON body (content-type application/json)", 415)
    try:
        body = json.loads(raw)
    except ValueError:
        raise BadRequest("the body is not JSON") from None
    if not isinstance(body, dict):
        raise BadRequest('the body is a JSON object: {"old": ID, "new": ID} ("undo": true to take a mark back)')
    for name in ("old", "new"):
        value = body.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63):
            raise BadRequest(f"{name} must be an observation id (a positive whole number)")
    if body.get("old") is None:
        raise BadRequest("old is required: the observation that is no longer true")
    reason = body.get("reason") or ""
    if not isinstance(reason, str) or len(reason) > 300:
        raise BadRequest("reason is a short text (at most 300 characters)")
    return {**body, "reason": reason.strip()}


def _json(body: Any) -> JSONResponse:
    return JSONResponse(body, headers={"cache-control": "no-store"})


def _sse(event: str, body: Any, event_id: str | None) -> str:
    lines = [f"event: {event}"]
    if event_id is not None:
        lines.append(f"id: {event_id}")
    # json.dumps never emits a raw newline, so one data line carries the whole object.
    lines.append("data: " + json.dumps(body, ensure_ascii=False, default=str))
    return "\n".join(lines) + "\n\n"
