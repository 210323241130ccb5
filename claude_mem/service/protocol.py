"""Where the memory service lives and how it is spoken to. Standard library only: hooks use it.

One request per connection: the client writes one JSON object and a newline, the service answers
one JSON object and a newline, then closes. A request is `{"v": 1, "op": NAME, "args": {...}}`;
an answer is `{"ok": true, "result": ...}` or `{"ok": false, "error": "one line"}`. A request
longer than MAX_REQUEST bytes, not JSON, of another version or of an unknown op gets an error
answer, never a crash.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is slow to import on the hook path
    from typing import Any

VERSION = 2  # 2: search modes keyword/semantic, a search's wait_s (a client meeting a service of 1 stops it)
MAX_REQUEST = 1 << 20  # bytes; a search or an index notice is a few hundred
SOCKET_NAME = "service.sock"
LOCK_NAME = "service.lock"
INFO_NAME = "service.json"
LOG_NAME = "service.log"
# AF_UNIX paths are limited to 108 bytes on Linux (104 on macOS); deep data dirs (pytest's tmp
# folders, long home paths) go past it.
MAX_SOCKET_PATH = 100


def socket_path(data_dir: str) -> str:
    """The service's socket: inside the data dir, or, when that path is too long for AF_UNIX,
    in a 0700 folder of ours under the temp dir, named by a hash of the data dir."""
    path = os.path.join(data_dir, SOCKET_NAME)
    if len(path.encode()) <= MAX_SOCKET_PATH:
        return path
    import hashlib  # only for long paths: ~3 ms a hook need not pay otherwise

    digest = hashlib.sha1(os.path.abspath(data_dir).encode()).hexdigest()[:16]
    base = os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp"
    short = os.path.join(base, f"claude-mem-{os.getuid()}", f"{digest}.sock")
    if len(short.encode()) > MAX_SOCKET_PATH:
        short = os.path.join("/tmp", f"claude-mem-{os.getuid()}", f"{digest}.sock")
    return short


def lock_path(data_dir: str) -> str:
    return os.path.join(data_dir, LOCK_NAME)


def info_path(data_dir: str) -> str:
    return os.path.join(data_dir, INFO_NAME)


# A search's arguments beside its query: recall.search.search's keyword arguments, less the index
# (tests/test_service.py holds the two lists equal, so a new filter cannot be dropped on the way).
SEARCH_ARGS = ("project", "type_", "session_id", "since_ms", "until_ms", "file", "kinds", "limit", "mode", "exclude")


def encode_search(query: str, filters: dict) -> dict:
    """The `search` request's args for `query` and `filters` (recall.search.search's keyword
    arguments): tuples become lists, unset filters are left out, an unknown one is refused."""
    unknown = sorted(set(filters) - set(SEARCH_ARGS))
    if unknown:
        raise TypeError(f"not a search argument: {', '.join(unknown)}")
    args: dict = {key: value for key, value in filters.items() if value is not None}
    if "kinds" in args:
        args["kinds"] = list(args["kinds"])
    if "exclude" in args:
        args["exclude"] = [[kind, row_id] for kind, row_id in args["exclude"]]
    return {"query": query, **args}


def decode_search(args: dict) -> tuple[str, dict]:
    """(query, filters) of a `search` request's args, as recall.search.search takes them; a
    malformed request raises ValueError (an error answer), an unknown argument too."""
    query = args.get("query")
    if not isinstance(query, str):
        raise ValueError("query must be a string")
    unknown = sorted(set(args) - set(SEARCH_ARGS) - {"query", "settings", "wait_s"})
    if unknown:
        raise ValueError(f"not a search argument: {', '.join(unknown)}")
    filters = {key: args[key] for key in SEARCH_ARGS if args.get(key) is not None}
    try:
        if "kinds" in filters:
            filters["kinds"] = tuple(str(kind) for kind in filters["kinds"])
        if "exclude" in filters:  # [kind, id] pairs over JSON
            filters["exclude"] = [(str(kind), int(row_id)) for kind, row_id in filters["exclude"]]
    except (TypeError, ValueError):
        raise ValueError("kinds must be a list of names and exclude a list of [kind, id] pairs") from None
    return query, filters

def parse_request(line: bytes) -> tuple[str, dict[str, Any]]:
    """A request's op and args; ValueError saying, in one line, what is wrong with it."""
    from claude_mem.text.storable import decode, loads

    if not line.strip():
        raise ValueError("empty request")
    try:
        request = loads(decode(line))  # a lone surrogate (escaped or encoded) would fail the search and the answer
    except ValueError:
        raise ValueError("request is not JSON") from None
    if not isinstance(request, dict):
        raise ValueError("request must be a JSON object")
    if request.get("v") != VERSION:
        raise ValueError(f"protocol version {request.get('v')!r} is not {VERSION}")
    op, args = request.get("op"), request.get("args", {})
    if not isinstance(op, str):
        raise ValueError(f"unknown op {op!r}")
    args = {} if args is None else args
    if not isinstance(args, dict):
        raise ValueError("args must be a JSON object")
    return op, args
