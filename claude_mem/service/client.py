"""Asking the memory service, and starting it when it is missing. Standard library only: the
hooks use this, and a hook never waits for the service beyond its own budget.

`call()` returns the service's answer or raises `ServiceUnavailable` (not running, starting,
too slow) or `ServiceError` (it answered with an error). A missing service is started detached
for next time; the caller is never made to wait for it.
"""

from __future__ import annotations

import json
import os
import time

from claude_mem.processes import lock_held, spawn_detached
from claude_mem.service import protocol

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from typing import Any


WAIT_STEP_S = 0.05
# A waiting client starts the service again this often while none answers: the one it started
# first may have found the lock held by a service exiting (idle) at that moment, and left.
RESTART_S = 2.0


class ServiceUnavailable(Exception):
    """The service did not answer in time (or is not running); it has been asked to start."""


class ServiceError(Exception):
    """The service answered the request with an error."""


def call(data_dir: str, op: str, args: dict[str, Any] | None = None, *, timeout_s: float, start: bool = True,
         wait: bool = False) -> Any:
    """Send one request and return its result within `timeout_s` seconds (connect included).
    With `wait` (the CLI, the MCP server, the viewer) a service that is starting is waited for
    within the same deadline; hooks never wait."""
    deadline = time.monotonic() + timeout_s
    sock = _connect(data_dir, deadline, start=start, wait=wait)
    try:
        line = _encoded(json.dumps({"v": protocol.VERSION, "op": op, "args": args or {}}, ensure_ascii=False)) + b"\n"
        try:
            sock.sendall(line)
            reply = _read_line(sock, deadline)
        except OSError as exc:
            raise ServiceUnavailable(f"the memory service did not answer {op} in time ({exc or 'timeout'})") from None
    finally:
        sock.close()
    try:
        answer = json.loads(reply)
    except ValueError:
        raise ServiceError(f"the memory service answered {op} with something that is not JSON") from None
    if not isinstance(answer, dict):
        raise ServiceError(f"the memory service answered {op} with {type(answer).__name__}")
    if not answer.get("ok"):
        error = str(answer.get("error") or "error")
        if error.startswith("protocol version") and start and wait and _retire(data_dir, deadline):
            # A service an earlier release started (an upgrade): it was asked to stop, a new one answers.
            return call(data_dir, op, args, timeout_s=max(deadline - time.monotonic(), 0.1), start=True, wait=True)
        raise ServiceError(error)
    return answer.get("result")


def _retire(data_dir: str, deadline: float) -> bool:
    """Stop a service that speaks another protocol version (SIGTERM to the pid in its lock file),
    within the deadline; True once it is gone. Hooks never do this: they do not wait."""
    import signal

    try:
        with open(protocol.lock_path(data_dir), encoding="ascii") as fh:
            os.kill(int(fh.read().strip()), signal.SIGTERM)
    except (OSError, ValueError):
        return False
    while running(data_dir):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def connect(data_dir: str, *, timeout_s: float, start: bool = True) -> socket.socket:
    """A connection to the service, started (and waited for) when it is missing: for a
    conversation of more than one request (the MCP server, mcp/shim.py)."""
    return _connect(data_dir, time.monotonic() + timeout_s, start=start, wait=True)


def _encoded(request: str) -> bytes:
    try:
        return request.encode()
    except UnicodeEncodeError:
        # A query holding a lone surrogate (an MCP argument's escape, argv's undecodable bytes) is
        # still searched; the module is loaded only then (hooks call this).
        from claude_mem.text.storable import storable

        return storable(request).encode()


def _connect(data_dir: str, deadline: float, *, start: bool, wait: bool) -> socket.socket:
    import socket  # here: the SessionStart hook imports this module only to start the service

    path = protocol.socket_path(data_dir)
    started: float | None = None
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            sock.connect(path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            if start and (started is None or time.monotonic() - started >= RESTART_S):
                ensure_started(data_dir)
                started = time.monotonic()
            if not wait or time.monotonic() + WAIT_STEP_S >= deadline:
                why = "starting it" if started is not None else exc.strerror
                raise ServiceUnavailable(f"the memory service is not running ({why})") from None
            time.sleep(WAIT_STEP_S)
        except OSError as exc:  # a timeout, or a socket path we cannot reach
            sock.close()
            raise ServiceUnavailable(f"the memory service did not accept the connection ({exc})") from None


def _read_line(sock: socket.socket, deadline: float) -> bytes:
    chunks: list[bytes] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("timeout")
        sock.settimeout(left)
        chunk = sock.recv(65536)
        if not chunk:
            break
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            break
    data = b"".join(chunks)
    if not data:
        raise ConnectionResetError("the connection closed without an answer")
    return data


NOTIFY_TIMEOUT_S = 0.5  # telling the memory service about new rows; an undelivered notice is kept for it


def notify_index(config: Any, observation_ids: list[int], summary_ids: list[int], prompt_ids: list[int], *,
                 wait_s: float = 0.0) -> bool:
    """Tell the memory service what a worker committed; True when it took the notice and, with
    `wait_s`, indexed the rows within that time (a service that is not running is not waited for:
    it is started, and catches up). It finds new rows by their ids and catches up on start; rows
    rewritten in place (a summary replaced, a prompt given its reply) it learns of here, so a
    notice it did not take in time is kept for it (service/notices.py) rather than dropped."""
    args: dict[str, Any] = {"observations": observation_ids, "summaries": summary_ids, "prompts": prompt_ids,
                            "settings": index_settings(config)}
    if wait_s > 0:
        args["wait_s"] = wait_s
    try:
        # A service that is loading is waited for, within the same time; one that is not running
        # is started and not waited for (it catches up on start): a service that cannot start
        # would hold every batch.
        answer = call(config.data_dir, "index", args, timeout_s=NOTIFY_TIMEOUT_S + wait_s,
                      wait=wait_s > 0 and running(config.data_dir))
    except (ServiceUnavailable, ServiceError):
        from claude_mem.service import notices

        notices.keep(config.data_dir, observation_ids, summary_ids, prompt_ids)
        return False
    return not wait_s or bool(isinstance(answer, dict) and answer.get("indexed"))


def index_settings(config: Any) -> dict[str, Any]:
    """What a request tells the service about the index this client is configured for."""
    return {"chroma_url": config.chroma_url or "", "semantic_index": bool(config.semantic_index), "embedder": config.embedder}


def running(data_dir: str) -> bool:
    """True while a service process holds the data folder's service lock (it may still be loading)."""
    return lock_held(protocol.lock_path(data_dir))


def ensure_started(data_dir: str) -> int | None:
    """Start the service detached unless one holds the lock; returns the new pid, if any. Two
    racing starters are harmless: the second service finds the lock taken and exits at once."""
    if not os.path.isdir(data_dir) or running(data_dir):
        return None
    log_file = os.path.join(data_dir, "logs", protocol.LOG_NAME)
    # The service finds its data folder in the environment: name the one asked about, whatever
    # this process's own environment says.
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": data_dir}
    try:
        return spawn_detached(data_dir, log_file, ["service"], env)
    except OSError:
        return None
