"""`claude-mem viewer`: serve the web viewer (claude_mem/viewer) with uvicorn."""

from __future__ import annotations

import os
import re
import secrets
import socket
import sys
import threading
from types import FrameType

import click

from claude_mem.cli.app import AppContext, cli, pass_app

DEFAULT_PORT = 37777
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9._~-]{8,200}")  # safe in a URL and a cookie as it is


def _url(host: str, port: int) -> str:
    bare = host.strip("[]")
    return f"http://[{bare}]:{port}/" if ":" in bare else f"http://{bare}:{port}/"


def _listen(host: str, port: int) -> socket.socket:
    """Bind before starting uvicorn, so a busy port is one clear line and --port 0 can report
    the port it got."""
    bare = host.strip("[]")
    try:
        infos = socket.getaddrinfo(bare, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise click.BadParameter(f"cannot resolve {host!r}: {exc.strerror}", param_hint="--host") from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise click.ClickException(f"cannot listen on {host} port {port} ({exc.strerror}): pass --port with another number, "
                                   "or --port 0 for any free one") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _has_display() -> bool:
    """Whether a browser window can open. Without one, webbrowser falls back to text browsers
    (lynx, w3m) that would take over the terminal the server runs in."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


@cli.command("viewer")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port to listen on (0: any free port).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on. Only loopback unless --allow-remote.")
@click.option("--allow-remote", is_flag=True,
              help="Allow a --host other machines can reach. A token is then required (one is generated if --token is not given).")
@click.option("--token", help="Require this token on every request (8+ characters of A-Z a-z 0-9 . _ ~ -).")
@click.option("--no-open", is_flag=True, help="Do not open a browser.")
@pass_app
def viewer(app: AppContext, port: int, host: str, allow_remote: bool, token: str | None, no_open: bool) -> None:
    """Serve the web viewer: a live feed of what is stored, search, details, queue and worker health;
    remember something, edit, forget or mark a memory.

    Its changes come from its own page only (each carries the page's token of this launch). Listens
    on 127.0.0.1 unless --host and --allow-remote say otherwise. Stop it with Ctrl-C.
    """
    from claude_mem.viewer.guard import is_loopback

    loopback = is_loopback(host)
    if not loopback and not allow_remote:
        raise click.UsageError(f"refusing to listen on {host}: anyone who can reach it could read your memory. Use the default "
                               "127.0.0.1, or add --allow-remote (a token is then required).")
    if token is not None and not _TOKEN_SHAPE.fullmatch(token):
        raise click.BadParameter("a token is 8 to 200 characters of A-Z a-z 0-9 . _ ~ -", param_hint="--token")
    generated = token is None and not loopback
    if generated:
        token = secrets.token_urlsafe(24)

    app.db()  # a missing database is a clear error now, not a failing page later; migrates an old one
    import uvicorn

    from claude_mem.viewer.app import create_app

    sock = _listen(host, port)
    url = _url(host, sock.getsockname()[1])
    open_url = f"{url}?token={token}" if token else url
    click.echo(f"claude-mem viewer: {open_url if generated else url}")
    if generated:
        click.echo("(the token in this address is required on every request; it changes on each start)")
    click.echo("Ctrl-C stops it.")
    sys.stdout.flush()
    if not no_open and _has_display():
        import webbrowser

        webbrowser.open(open_url)
    stopping = threading.Event()

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            stopping.set()  # open event streams end at their next poll instead of holding up the exit
            super().handle_exit(sig, frame)

    if app.config.semantic_index:
        from claude_mem.service.client import ensure_started

        ensure_started(app.config.data_dir)  # warm by the first search
    asgi = create_app(app.config, token=token, loopback_only=loopback, stopping=stopping)
    # The access log is off: request lines would carry ?token= and search words.
    server = Server(uvicorn.Config(asgi, log_level="warning", access_log=False, timeout_graceful_shutdown=2, lifespan="off"))
    server.run(sockets=[sock])
