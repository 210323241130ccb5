"""The MCP server Claude Code starts for each session (`claude-mem mcp`): standard library only.

Claude Code does not wait for MCP servers: it probes each one with `server/discover` at start
and falls back to a slower legacy handshake when the answer is late, and importing the `mcp`
package alone takes ~1.5 s. So this process loads none of it. It answers what
describes the server (`server/discover`, `initialize`, `tools/list`, `ping`) from the
description the memory service wrote with the real `mcp` library (`<data dir>/mcp-description.json`,
see mcp/host.py), and moves every other message, as bytes, to the MCP server the memory service
hosts for all sessions over its socket (started if absent, as the hooks do). A description
written by other code (another version, another `mcp`) is not used: then every message goes to
the service.

A service killed or restarted mid-session costs at most the call in flight: the next message
reconnects (starting the service), replays the handshake, and the requests that were waiting
for an answer are sent once more (the tools only read). A service that cannot be reached at all
is replaced by the MCP server run in a process of its own (`python -m claude_mem.mcp.server`).
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs a start that must be fast (~4 ms, as the hooks found)
    from typing import Any

    Outgoing = tuple[str | None, bytes, dict[str, Any] | None]  # pending request's key, line, handshake entry it makes

DESCRIPTION_NAME = "mcp-description.json"
CONNECT_S = 20.0  # a cold service imports its model and Chroma first: seconds, more on a loaded machine
REPLAY_ID = "claude-mem-replay"  # the id of a handshake sent again to a new upstream; its answer is dropped
LOCAL_METHODS = ("server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping")
LISTEN = "subscriptions/listen"
# What Claude Code listens for (its `subscriptions/listen` right after the probe, whose
# acknowledgement it waits for before it lists the tools): the acknowledgement is answered here.
LISTEN_FOR = {"toolsListChanged": True, "promptsListChanged": True, "resourcesListChanged": True}
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"


def description_path(data_dir: str) -> str:
    return os.path.join(data_dir, DESCRIPTION_NAME)


# The files whose change changes the description, under claude_mem/: the tools (their registry,
# mcp/server.py, and the patterns and choices it takes from store/reads.py) and the library that
# shapes the answers. A tool added to mcp/server.py needs nothing here.
DESCRIBED_BY = (os.path.join("mcp", "server.py"), os.path.join("mcp", "args.py"), os.path.join("store", "reads.py"))
LIBRARY_FILES = (os.path.join("mcp", "__init__.py"), os.path.join("mcp", "server", "lowlevel", "server.py"),
                 os.path.join("mcp_types", "__init__.py"), os.path.join("mcp_types", "version.py"))


def fingerprint() -> str:
    """The size and time of change of the files the description depends on: a few stat calls
    (walking every module cost ~10 ms of a start that must be fast), so that an upgrade is
    never answered from an older description."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    paths = [os.path.join(package, name) for name in DESCRIBED_BY]
    for folder in sys.path:
        if folder and os.path.isfile(os.path.join(folder, LIBRARY_FILES[0])):
            paths += [os.path.join(folder, name) for name in LIBRARY_FILES]
            break
    parts = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            continue
        parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    return "|".join(parts)


def read_description(data_dir: str) -> dict[str, Any]:
    """The answers written by the service (mcp/host.py describe), when they fit this code; else none."""
    try:
        with open(description_path(data_dir), encoding="utf-8") as f:
            found = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict) or found.get("fingerprint") != fingerprint() or not isinstance(found.get("answers"), dict):
        return {}
    return found["answers"]


def local_key(message: dict[str, Any], legacy_version: str | None) -> str | None:
    """The description's key for a request this process may answer itself, or None. Only the
    plain forms are: anything else (a cursor, another version) goes where the library answers."""
    method, params = message.get("method"), message.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict) or "id" not in message:
        return None
    if method == "initialize":
        version, info = params.get("protocolVersion"), params.get("clientInfo")
        if not isinstance(info, dict) or not isinstance(version, str) or not isinstance(params.get("capabilities"), dict):
            return None
        if not isinstance(info.get("name"), str) or not isinstance(info.get("version"), str):
            return None
        return f"initialize {version}"
    if method == LISTEN and set(params) - {"_meta"} == {"notifications"} and params["notifications"] == LISTEN_FOR:
        pass  # the one listen asked for the same way every time
    elif method not in LOCAL_METHODS or set(params) - {"_meta"}:
        return None
    meta = params.get("_meta") or {}
    if not isinstance(meta, dict):
        return None
    version = meta.get("io.modelcontextprotocol/protocolVersion")
    if version is None:
        return f"{method} {legacy_version}" if legacy_version and method != "server/discover" else None
    return f"{method} {version}" if isinstance(version, str) else None


class Upstream:
    """One way to the real MCP server: the service's socket, or a process of its own."""

    def __init__(self, send: Any, lines: Any, close: Any) -> None:
        self.send, self.lines, self.close = send, lines, close


def connect_service(data_dir: str, hello: dict[str, Any], timeout_s: float) -> Upstream:
    """The MCP server the memory service hosts, over a connection of its own; raises OSError."""
    from claude_mem.service import client, protocol

    deadline = time.monotonic() + timeout_s
    try:
        sock = client.connect(data_dir, timeout_s=timeout_s)
    except client.ServiceUnavailable as exc:
        raise OSError(str(exc)) from None
    try:
        sock.sendall(json.dumps({"v": protocol.VERSION, "op": "mcp", "args": hello}, default=str).encode() + b"\n")
        sock.settimeout(max(deadline - time.monotonic(), 1.0))
        reader = sock.makefile("rb")
        answer = json.loads(reader.readline() or b"{}")
        if not isinstance(answer, dict) or not answer.get("ok"):
            raise OSError(f"the memory service hosts no MCP server: {answer.get('error') if isinstance(answer, dict) else answer}")
        sock.settimeout(None)
    except (OSError, ValueError) as exc:
        sock.close()
        raise OSError(str(exc)) from None
    return Upstream(sock.sendall, iter(reader.readline, b""), sock.close)


def spawn_own(env: dict[str, str]) -> Upstream:
    """The MCP server in a process of its own (the `mcp` import paid here): when no service can be had."""
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "claude_mem.mcp.server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    stdin = proc.stdin

    def send(data: bytes) -> None:
        stdin.write(data)
        stdin.flush()

    def close() -> None:
        try:
            stdin.close()
            proc.wait(5)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()

    return Upstream(send, iter(proc.stdout.readline, b""), close)


class Shim:
    def __init__(self, data_dir: str, db_path: str, hello: dict[str, Any], answers: dict[str, Any], out: Any) -> None:
        self.data_dir, self.db_path, self.hello, self.answers, self.out = data_dir, db_path, hello, answers, out
        self.out_lock = threading.Lock()
        self.lock = threading.Lock()  # upstream, pending, handshake
        self.upstream: Upstream | None = None
        self.handshake: list[dict[str, Any]] = []  # what a new upstream must hear first
        self.legacy_version: str | None = None  # set when initialize was answered here
        self.pending: dict[str, tuple[bytes, int]] = {}  # request id (as JSON) -> its line, times sent upstream
        self.outbox: queue.Queue[Outgoing | None] = queue.Queue()
        self.service_failed = False

    def write(self, message: dict[str, Any] | bytes) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message, ensure_ascii=False).encode() + b"\n"
        with self.out_lock:
            self.out.write(data)
            self.out.flush()

    def handle(self, line: bytes) -> None:
        """One line from Claude Code: answered here when the description has it, else sent on."""
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if not isinstance(message, dict):
            self.outbox.put((None, line, None))  # the upstream's parser says what is wrong with it
            return
        method = message.get("method")
        key = local_key(message, self.legacy_version)
        answer = self.answers.get(key) if key else None
        replay = {**message, "id": REPLAY_ID} if method == "initialize" else message if method == "notifications/initialized" else None
        if answer is not None and method == LISTEN:
            # The stream stays open with nothing on it: the tools never change while the code runs.
            ack = json.loads(json.dumps(answer))
            ack.setdefault("params", {}).setdefault("_meta", {})[SUBSCRIPTION_ID] = message["id"]
            self.write(ack)
            return
        if answer is not None:
            if method == "initialize":
                self.legacy_version = answer.get("protocolVersion")
                self.add_handshake(replay)
            self.write({"jsonrpc": "2.0", "id": message["id"], "result": answer})
            return
        if method == "notifications/initialized" and self.legacy_version is not None:
            self.add_handshake(message)  # after an initialize answered here: it goes with it
            return
        pending = None
        if "id" in message and method is not None:
            pending = json.dumps(message["id"])
            with self.lock:
                self.pending[pending] = (line, 0)
        self.outbox.put((pending, line, replay))

    def add_handshake(self, entry: dict[str, Any] | None) -> None:
        assert entry is not None
        with self.lock:
            self.handshake.append(entry)
            if self.upstream is not None:
                self.outbox.put((None, _line(entry), None))

    def forward(self) -> None:
        """Send what waits in the outbox, connecting (again) when there is no upstream."""
        while True:
            item = self.outbox.get()
            if item is None:
                break
            pending, line, replay = item
            upstream = self.upstream or self.reconnect()
            if upstream is None or not line.strip():
                continue
            with self.lock:
                if pending is not None and pending in self.pending:
                    self.pending[pending] = (line, self.pending[pending][1] + 1)
                if replay is not None:
                    self.handshake.append(replay)
            try:
                upstream.send(line if line.endswith(b"\n") else line + b"\n")
            except OSError:
                self.lost(upstream)

    def reconnect(self) -> Upstream | None:
        upstream = None
        # Nothing captured yet: no service to start (it would create the database a read must not);
        # the server in a process of its own says so, as it always did.
        if not self.service_failed and os.path.exists(self.db_path):
            try:
                upstream = connect_service(self.data_dir, self.hello, CONNECT_S)
            except OSError as exc:
                self.service_failed = True
                self.log(f"the memory service cannot host this session's tools ({exc}): they run in a process of their own")
        if upstream is None:
            try:
                upstream = spawn_own({**os.environ, "CLAUDE_MEM_DATA_DIR": self.data_dir})
            except OSError as exc:
                self.fail_pending(f"the memory tools cannot start: {exc}")
                return None
        with self.lock:
            self.upstream = upstream
            lines = [_line(m) for m in self.handshake]
            for key, (line, sent) in list(self.pending.items()):
                if sent >= 1:  # sent to an upstream that went away: once more
                    self.pending[key] = (line, sent + 1)
                    lines.append(line)
        threading.Thread(target=self.relay, args=(upstream,), daemon=True).start()
        try:
            for line in lines:
                upstream.send(line)
        except OSError:
            self.lost(upstream)
            return None
        return upstream

    def relay(self, upstream: Upstream) -> None:
        """Answers from the upstream to Claude Code, until it goes away."""
        try:
            for line in upstream.lines:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                if isinstance(message, dict) and message.get("id") == REPLAY_ID:
                    continue
                if isinstance(message, dict) and "id" in message and "method" not in message:
                    with self.lock:
                        self.pending.pop(json.dumps(message["id"]), None)
                self.write(line if line.endswith(b"\n") else line + b"\n")
        except (OSError, ValueError):
            pass
        self.lost(upstream)

    def lost(self, upstream: Upstream) -> None:
        """The upstream went away (a killed or restarted service): what waited on it is sent
        once more to the next one; what was sent twice already gets an error."""
        with self.lock:
            if self.upstream is not upstream:
                return
            self.upstream = None
            twice = [k for k, (_, sent) in self.pending.items() if sent >= 2]
            again = sum(sent == 1 for _, sent in self.pending.values())
        upstream.close()
        if again or twice:  # (a service leaving between two calls costs nothing: not worth a line)
            self.log(f"the MCP server went away while answering: {again} request(s) sent again to the next one,"
                     f" {len(twice)} failed (sent twice already)")
        self.fail_pending("the memory service went away while answering", only=twice)
        if again:
            self.outbox.put((None, b"", None))  # wakes the forwarder, which reconnects and sends them again

    def log(self, message: str) -> None:
        """A line in claude-mem.log: rare events (a lost upstream), so a session's tool call that
        waited can be explained afterwards."""
        from claude_mem.logs import log_line

        log_line(os.path.join(self.data_dir, "logs"), "mcp", message)

    def fail_pending(self, why: str, only: list[str] | None = None) -> None:
        with self.lock:
            keys = list(self.pending) if only is None else only
            failed = [(k, self.pending.pop(k)) for k in keys if k in self.pending]
        for key, _ in failed:
            self.write({"jsonrpc": "2.0", "id": json.loads(key), "error": {"code": -32603, "message": why}})


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False).encode() + b"\n"


def serve() -> int:
    """Run on stdio until Claude Code closes stdin."""
    import signal

    from claude_mem import settings
    from claude_mem.service import client

    for sig in (signal.SIGINT, signal.SIGTERM):  # Claude Code ends its servers so: at once, nothing to save
        signal.signal(sig, lambda *_: os._exit(0))
    config = settings.load(strict=False)
    data_dir = config.data_dir
    hello = {"cwd": os.getcwd(), "session_id": os.environ.get("CLAUDE_CODE_SESSION_ID") or "",
             "project_dir": os.environ.get("CLAUDE_PROJECT_DIR") or "", "settings": config.values}
    shim = Shim(data_dir, config.db_path, hello, read_description(data_dir), sys.stdout.buffer)
    if os.path.exists(config.db_path):
        client.ensure_started(data_dir)  # warm by the first tool call
    sender = threading.Thread(target=shim.forward, daemon=True)
    sender.start()
    for line in sys.stdin.buffer:
        if line.strip():
            shim.handle(line)
    shim.outbox.put(None)
    sender.join(5)
    if shim.upstream is not None:
        shim.upstream.close()
    return 0
