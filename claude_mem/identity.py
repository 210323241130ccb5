"""Who this installation is, for a team sharing one Chroma server.

Two installations recording into one collection must not write the same document ids (each
would overwrite the other's, and a `reindex` on one would delete the other's documents). Every
installation therefore has an identity: a random id made once and kept in the data dir
(`<data dir>/installation-id`, 0600), which goes into every document id and its metadata so that
nothing collides and everything that deletes can delete only its own; and a readable name
(setting `installation_name`, default the host name) that teammates see beside what it shared
(`obs:12@laptop-b`).

Standard library only.
"""

from __future__ import annotations

import os
import re
import secrets
import socket
from dataclasses import dataclass

ID_FILE = "installation-id"
_ID = re.compile(r"^[0-9a-f]{16}$")
_NAME_JUNK = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class Installation:
    id: str    # 16 hex digits, random, never changes for a data dir
    name: str  # what teammates see: letters, digits, '.', '_' and '-' only (it ends refs: obs:12@name)


def clean_name(raw: str) -> str:
    """A name usable at the end of a ref: other characters become '-', ends trimmed, at most 40."""
    return _NAME_JUNK.sub("-", raw or "").strip("-.")[:40]


def default_name() -> str:
    return clean_name(socket.gethostname().split(".")[0]) or "unnamed"


def installation_id(data_dir: str) -> str:
    """The id kept in the data dir, made on first use. Two processes making it at once agree:
    the file is linked into place only if none is there yet, and the loser reads the winner's."""
    path = os.path.join(data_dir, ID_FILE)
    found = _read_id(path)
    if found:
        return found
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(8) + "\n")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)
    found = _read_id(path)
    if not found:
        raise OSError(f"{path} does not hold an installation id (16 hex digits); remove it to make a new one")
    return found


def _read_id(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            text = fh.read().strip()
    except FileNotFoundError:
        return None
    return text if _ID.match(text) else None


def installation_for(data_dir: str, name: str = "") -> Installation:
    return Installation(installation_id(data_dir), clean_name(name) or default_name())
