"""Guarding the viewer: a pure ASGI wrapper around the whole app (so the event stream is not
buffered) that checks the Host header and the token, and adds the security headers.

- On a loopback address the Host header must name a loopback host: otherwise any web page
  could read memory through DNS rebinding (its own name re-pointed at 127.0.0.1).
- With a token, every request carries it: `Authorization: Bearer`, the cookie the page gets
  when opened as `/?token=...` (EventSource cannot send headers), or `?token=` for scripts.
  Tokens are compared in constant time and never logged (uvicorn's access log is off).
"""

from __future__ import annotations

import hmac
import ipaddress
from urllib.parse import parse_qsl, urlencode

from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

TOKEN_COOKIE = "claude_mem_viewer_token"
SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
                                 b" connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]


class BadRequest(Exception):
    """A request refused with a status and a one-line reason (the app answers it as JSON)."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # any other name may resolve to a reachable address


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
            return error(421, "this viewer answers only to a loopback host name (127.0.0.1, localhost, [::1])")
        if self.token is None:
            return None
        given = _bearer(request) or request.cookies.get(TOKEN_COOKIE) or request.query_params.get("token") or ""
        if hmac.compare_digest(given.encode(), self.token.encode()):
            return None
        if request.url.path.startswith("/api/"):
            return error(401, "missing or wrong token: open the address `claude-mem viewer` printed (it ends in ?token=...)")
        return PlainTextResponse("This claude-mem viewer needs its token: open the address `claude-mem viewer` printed"
                                 " (it ends in ?token=...).\n", status_code=401)


def _bearer(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    return value.strip() if scheme.lower() == "bearer" else None


def error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers={"cache-control": "no-store"})
