"""The viewer's HTTP side: the static page, JSON endpoints and a server-sent event stream, behind
the guard (guard.py: Host and token checks, security headers).

The writes (POST: a mark or its undo, a memory to remember, an edit or its undo, a forget) are
changes.py's: a JSON body from this viewer's own page, carrying its per-launch token.

The stream polls `PRAGMA data_version` (a counter SQLite bumps when another connection commits;
reading it costs microseconds) and sends the rows past the client's cursor when it moves.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from claude_mem.kinds import OBSERVATION_TYPES, SearchMode
from claude_mem.logs import log_line
from claude_mem.store import stream
from claude_mem.store.db import data_version
from claude_mem.store.reads import KINDS, parse_ref
from claude_mem.viewer import data
from claude_mem.viewer.changes import TOKEN_SLOT, Changes, checked_body, page_with_token
from claude_mem.viewer.guard import BadRequest, Guard, error

if TYPE_CHECKING:
    from claude_mem.index.semantic_index import Index
    from claude_mem.settings import Config

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
POLL_S = 0.25
HEALTH_EVERY_S = 5.0
HEALTH_MIN_GAP_S = 1.0  # a burst of commits sends one health update, not one per commit
REVIVE_EVERY_S = 10.0  # how often health looks for events no worker is left to take
MAX_QUERY_CHARS = 1000


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


def _mode(request: Request) -> SearchMode:
    """The search mode asked for (hybrid by default; fts and vector, the names before 0.2.0, too)."""
    try:
        return SearchMode.named(_text(request, "mode") or SearchMode.HYBRID)
    except ValueError as exc:
        raise BadRequest(str(exc)[:120]) from None


def _cursor(raw: str, name: str) -> data.Cursor:
    try:
        return data.Cursor.parse(raw)
    except ValueError as exc:
        raise BadRequest(f"{name}: {exc}") from None


# -- the app ------------------------------------------------------------------------------------

def create_app(config: Config, *, token: str | None = None, loopback_only: bool = True, index: Index | None = None,
               use_index: bool = True, poll_s: float = POLL_S, stopping: threading.Event | None = None,
               project: str | None = None) -> ASGIApp:
    """The viewer for the database in `config`. `loopback_only` turns on the Host check; the
    searches go to the memory service (keywords alone when it cannot answer in time), or to
    `index` in this process when one is given, or to keywords alone when `use_index` is False
    (service/search.py decides). Event streams end once `stopping` is set, so a server shutting
    down need not wait them out. `project`: where a memory remembered here goes when the page
    names none (default: the project of the current folder)."""
    from claude_mem.project import project_for

    viewer = Viewer(config, index=index, use_index=use_index, poll_s=poll_s, stopping=stopping or threading.Event(),
                    changes=Changes(config, project or project_for(os.getcwd())))
    routes = [
        Route("/", viewer.page),
        Route("/api/projects", viewer.api_projects),
        Route("/api/feed", viewer.api_feed),
        Route("/api/stream", viewer.api_stream),
        Route("/api/search", viewer.api_search),
        Route("/api/observation/{observation_id}", viewer.api_observation),
        Route("/api/session/{session_id:path}", viewer.api_session),
        Route("/api/remote/{ref}", viewer.api_remote),
        Route("/api/marks", viewer.api_marks, methods=["POST"]),
        Route("/api/release", viewer.api_release, methods=["POST"]),
        Route("/api/remember", viewer.api_remember, methods=["POST"]),
        Route("/api/observation/{observation_id}/edit", viewer.api_edit, methods=["POST"]),
        Route("/api/observation/{observation_id}/forget", viewer.api_forget, methods=["POST"]),
        Route("/api/health", viewer.api_health),
        Route("/api/stats", viewer.api_stats),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]
    handlers: dict[Any, Callable[[Request, Exception], Awaitable[Response]]] = {
        BadRequest: viewer.bad_request, HTTPException: viewer.http_error, data.DatabaseMissing: viewer.missing_db,
        Exception: viewer.server_error}
    app = Starlette(routes=routes, exception_handlers=handlers)
    return Guard(app, token=token, loopback_only=loopback_only)


class Viewer:
    """The endpoints, over the database of one configuration."""

    def __init__(self, config: Config, *, index: Index | None, use_index: bool, poll_s: float, stopping: threading.Event,
                 changes: Changes) -> None:
        self.config = config
        self.changes = changes
        self.write_token = secrets.token_urlsafe(24)  # this launch's: written into the page, asked of every write
        with open(os.path.join(STATIC_DIR, "index.html"), encoding="utf-8") as fh:
            self.template = fh.read()
        assert TOKEN_SLOT in self.template
        self.db_path = config.db_path
        self.index = index
        self.in_process = not use_index
        self.poll_s = poll_s
        self.stopping = stopping
        self.revived_at = 0.0

    def read(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        with data.reader(self.db_path) as conn:
            return fn(conn, *args, **kwargs)

    def health_of(self, conn: Any) -> dict[str, Any]:
        # The viewer may be what runs next: events no worker is left to take get one.
        if time.monotonic() - self.revived_at >= REVIVE_EVERY_S:
            self.revived_at = time.monotonic()
            from claude_mem.worker import stranded

            stranded.revive(self.config, conn)
        return data.health(self.config, conn)

    def page(self, request: Request) -> Response:
        return HTMLResponse(page_with_token(self.template, self.write_token), headers={"cache-control": "no-store"})

    def api_projects(self, request: Request) -> Response:
        return _json({"projects": self.read(stream.projects)})

    def api_feed(self, request: Request) -> Response:
        items, cursor = self.read(data.feed, project=_text(request, "project"), limit=_int(request, "limit", 50, 1, 500))
        return _json({"items": items, "cursor": str(cursor)})

    def api_search(self, request: Request) -> Response:
        from claude_mem.recall.views import superseded_notes
        from claude_mem.service.search import search_memory

        query = _text(request, "q", MAX_QUERY_CHARS)
        if query is None:
            raise BadRequest("q is required: the words to search for")
        kinds = tuple(k for k in (_text(request, "kinds") or ",".join(KINDS)).split(",") if k)
        unknown = [k for k in kinds if k not in KINDS]
        if unknown or not kinds:
            raise BadRequest(f"kinds must be a comma-separated list of {', '.join(KINDS)}, got {','.join(unknown)[:60]!r}")
        mode = _mode(request)
        filters: dict[str, Any] = {"project": _text(request, "project"), "type_": _choice(request, "type", OBSERVATION_TYPES),
                                   "kinds": kinds, "limit": _int(request, "limit", 20, 1, 100)}
        result = self.read(lambda conn: search_memory(self.config, conn, query, index=self.index, in_process=self.in_process,
                                                      mode=mode, **filters))
        notes = self.read(superseded_notes, result.hits)
        hits = [{**asdict(h), "mark": notes.get(h.id, "") if h.kind == "observation" and h.origin is None else ""}
                for h in result.hits]
        return _json({"query": query, "mode": result.mode, "note": result.note, "hits": hits})

    def api_observation(self, request: Request) -> Response:
        row_id = _observation_id(request)
        found = self.read(data.observation_detail, row_id)
        if found is None:
            raise BadRequest(f"no observation {row_id}", 404)
        return _json(found)

    def api_remote(self, request: Request) -> Response:
        """A teammate's memory (a search hit from a shared Chroma server), from its documents."""
        from claude_mem.index.chroma import IndexUnavailable
        from claude_mem.service.search import NoSharedServer, remote_record

        raw = request.path_params["ref"]
        kind, row_id, origin = parse_ref(raw) or ("", 0, None)
        if origin is None:
            raise BadRequest(f"a teammate's memory is named like obs:12@laptop-b, got {raw[:80]!r}")
        try:
            found = remote_record(self.config, kind, row_id, origin, index=self.index, in_process=self.in_process)
        except NoSharedServer:
            raise BadRequest("no shared Chroma server is set up here (setting chroma_url)", 404) from None
        except IndexUnavailable as exc:
            raise BadRequest(str(exc), 503) from None
        except LookupError as exc:
            raise BadRequest(str(exc), 409) from None
        if found is None:
            raise BadRequest(f"no {raw} on the shared server", 404)
        return _json(found)

    def api_session(self, request: Request) -> Response:
        session_id = request.path_params["session_id"]
        if len(session_id) > 500:
            raise BadRequest("a session id is at most 500 characters")
        found = self.read(data.session_timeline, session_id)
        if found is None:
            raise BadRequest(f"no session {session_id[:80]!r}", 404)
        return _json(found)

    async def _body(self, request: Request) -> dict[str, Any]:
        return checked_body(request.headers, await request.body(), self.write_token)

    async def api_marks(self, request: Request) -> Response:
        """A person says an observation is no longer true (or takes that back)."""
        return _json(await run_in_threadpool(self.changes.mark, await self._body(request)))

    async def api_remember(self, request: Request) -> Response:
        """A person states a memory: {"text": ..., "type"?, "project"?, "files"?, "supersedes"?}."""
        return _json(await run_in_threadpool(self.changes.remember, await self._body(request)))

    async def api_edit(self, request: Request) -> Response:
        """A person edits an observation ({"title"?, "text"?, "facts"?, "type"?}) or undoes the last edit ({"undo": true})."""
        body = await self._body(request)
        return _json(await run_in_threadpool(self.changes.edit, _observation_id(request), body))

    async def api_forget(self, request: Request) -> Response:
        """A person forgets an observation (the page asked them to confirm)."""
        await self._body(request)
        return _json(await run_in_threadpool(self.changes.forget, _observation_id(request)))

    async def api_release(self, request: Request) -> Response:
        """A person releases a memory the write guard withheld ({"kind": "observation" | "summary",
        "id": N}) or withholds it again ({"undo": true})."""
        return _json(await run_in_threadpool(self.changes.release, await self._body(request)))

    def api_health(self, request: Request) -> Response:
        return _json(self.read(self.health_of))

    def api_stats(self, request: Request) -> Response:
        return _json(self.read(data.costs_of, _text(request, "project"), _int(request, "limit", 50, 1, 500)))

    async def api_stream(self, request: Request) -> Response:
        project = _text(request, "project")
        resume = request.headers.get("last-event-id") or request.query_params.get("after")
        # Fixed before the response starts: a row stored once the client has its headers is news.
        cursor = _cursor(resume, "after") if resume else await run_in_threadpool(self.read, data.current_cursor)
        return StreamingResponse(self.events(cursor, project), media_type="text/event-stream",
                                 headers={"cache-control": "no-store", "x-accel-buffering": "no"})

    async def events(self, cursor: data.Cursor, project: str | None) -> AsyncIterator[str]:
        # Opened here, not in the endpoint: a generator that never starts never runs its `finally`.
        conn = await run_in_threadpool(data.open_reader, self.db_path)
        try:
            yield "retry: 2000\n\n"
            version: int | None = None
            health_sent = 0.0
            health_due = True
            while not self.stopping.is_set():
                current = data_version(conn)
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
                    yield _sse("health", await run_in_threadpool(self.health_of, conn), None)
                    health_sent, health_due = now, False
                await asyncio.sleep(self.poll_s)
        finally:
            conn.close()

    # -- errors ---------------------------------------------------------------------------------

    async def bad_request(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, BadRequest)
        return error(exc.status, str(exc))

    async def http_error(self, request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        message = {404: f"nothing at {request.url.path[:200]}", 405: f"{request.method} is not allowed here"}.get(exc.status_code,
                                                                                                            str(exc.detail))
        return error(exc.status_code, message)

    async def server_error(self, request: Request, exc: Exception) -> Response:
        # The exception only, never the request: its query string may hold a token or search words.
        detail = f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
        log_line(self.config.logs_dir, "viewer", f"error: {request.url.path[:100]} failed: {detail}")
        return error(500, f"the viewer failed ({detail}); see `claude-mem logs`")

    async def missing_db(self, request: Request, exc: Exception) -> Response:
        return error(503, f"{exc}: was the data dir removed? Restart the viewer once claude-mem has captured something")


def _observation_id(request: Request) -> int:
    raw = request.path_params["observation_id"]
    if not raw.isdigit() or len(raw) > 18:
        raise BadRequest(f"an observation id is a positive whole number, got {raw[:40]!r}")
    return int(raw)


def _json(body: Any) -> JSONResponse:
    return JSONResponse(body, headers={"cache-control": "no-store"})


def _sse(event: str, body: Any, event_id: str | None) -> str:
    lines = [f"event: {event}"]
    if event_id is not None:
        lines.append(f"id: {event_id}")
    # json.dumps never emits a raw newline, so one data line carries the whole object.
    lines.append("data: " + json.dumps(body, ensure_ascii=False, default=str))
    return "\n".join(lines) + "\n\n"
