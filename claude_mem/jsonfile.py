"""JSON files: one that must hold an object (ours and Claude Code's settings), read without ever
being taken for something else; and any JSON (or other bytes) written so that a reader sees the old file or the
new one, whole, never half of it.

Standard library only: a hook reads its settings file (when there is one) and spools events
through here.
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any


class JSONFileError(ValueError):
    """A file that cannot be read as a JSON object; the message names it, on one line."""


def read_json_object(path: str) -> tuple[dict[str, Any], bool]:
    """(content, existed) of a file that must hold a JSON object. Missing or empty is {};
    anything else raises JSONFileError: a file that could not be parsed is never rewritten."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except FileNotFoundError:
        return {}, False
    except OSError as exc:
        raise JSONFileError(f"cannot read {path}: {exc.strerror}") from None
    if not text.strip():
        return {}, True
    try:
        return json_object(text), True
    except ValueError as exc:
        raise JSONFileError(f"{path} is {exc}") from None


def json_object(text: str) -> dict[str, Any]:
    """`text` as a JSON object (a hook's payload, a settings file); anything else raises
    ValueError saying what it is instead: "not valid JSON (...)", "a JSON list, not a JSON object"."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"a JSON {type(data).__name__}, not a JSON object")
    return data


def write_json_atomic(path: str, data: Any, *, mode: int = 0o600, keep_mode: bool = False, indent: int | None = None,
                      sort_keys: bool = False) -> None:
    """Write `data` as JSON through a temporary file renamed over `path`, created with `mode`.
    `keep_mode` keeps the permissions of the file it replaces, and writes a symlink's target so
    the link survives (dotfile managers link settings files)."""
    text = json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=False) + "\n"
    write_bytes_atomic(path, text.encode("utf-8"), mode=mode, keep_mode=keep_mode)


def write_bytes_atomic(path: str, data: bytes, *, mode: int = 0o600, keep_mode: bool = False) -> None:
    """`data` written through a temporary file renamed over `path` (see write_json_atomic)."""
    if keep_mode:
        import stat

        path = os.path.realpath(path)
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            pass
    with replaced_atomically(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, mode)  # the umask may have taken some away


class replaced_atomically:
    """`with replaced_atomically(path) as tmp:` gives a path beside `path` to write (by this
    process or a child); when the block ends without an error it is renamed over `path`, else
    removed. A class, not contextlib's decorator: the hook path does not load contextlib."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.tmp = f"{path}.tmp-{os.getpid()}"

    def __enter__(self) -> str:
        return self.tmp

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            os.replace(self.tmp, self.path)
            return
        try:
            os.unlink(self.tmp)
        except OSError:
            pass
