"""What a person changes from the viewer: a mark or its undo, a memory to remember, an edit or
its undo, a forget, a withheld memory's release. Each is the core function the CLI calls (claude_mem/writes/, store/marks.py),
on a connection of its own (the viewer's readers are query-only).

Every write route takes a JSON body from this viewer's own page and nowhere else: a request whose
Origin names another site is refused (403), and one without the page's per-launch token (sent
as a header, which another site's page cannot add without the browser asking first) is refused
even on loopback (401): any page can POST a form to 127.0.0.1 without a preflight. The token is
made when the viewer starts and written into its page only (`page_with_token`).
"""

from __future__ import annotations

import hmac
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from claude_mem.kinds import Source
from claude_mem.logs import log_line
from claude_mem.settings import Config
from claude_mem.store import marks, withheld
from claude_mem.store import writes as stored
from claude_mem.store.db import connect, transaction
from claude_mem.store.reads import ref
from claude_mem.viewer.data import DatabaseMissing
from claude_mem.viewer.guard import BadRequest
from claude_mem.writes import edit as edit_mod
from claude_mem.writes.checks import Missing, Refused, observation_id
from claude_mem.writes.forget import forget
from claude_mem.writes.index import released_text
from claude_mem.writes.remember import DEFAULT_TYPE, remember

TOKEN_HEADER = "x-claude-mem-token"
TOKEN_SLOT = "{{write-token}}"  # in index.html: <meta name="claude-mem-write-token" content="{{write-token}}">


def page_with_token(template: str, token: str) -> str:
    return template.replace(TOKEN_SLOT, token)


def checked_body(headers: Any, raw: bytes, token: str) -> dict[str, Any]:
    """The JSON object a write route was sent, from this viewer's own page only."""
    origin = headers.get("origin")
    if origin and urlsplit(origin).netloc != headers.get("host", ""):
        raise BadRequest("memory is changed from this viewer's own page only", 403)
    if not hmac.compare_digest(headers.get(TOKEN_HEADER, "").encode(), token.encode()):
        raise BadRequest("a change must come from this viewer's own page, which carries this launch's token: reload it", 401)
    if headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise BadRequest("send a JSON body (content-type application/json)", 415)
    try:
        body = json.loads(raw)
    except ValueError:
        raise BadRequest("the body is not JSON") from None
    if not isinstance(body, dict):
        raise BadRequest("the body is a JSON object")
    return body


@contextmanager
def _writing(db_path: str) -> Iterator[sqlite3.Connection]:
    if not os.path.exists(db_path):
        raise DatabaseMissing(f"no database at {db_path}")
    conn = connect(db_path, migrate=False)
    try:
        yield conn
    except Refused as exc:
        raise BadRequest(str(exc)) from None
    except Missing as exc:
        raise BadRequest(str(exc), 404) from None
    finally:
        conn.close()


def _text(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is not None and not isinstance(value, str):
        raise BadRequest(f"{name} is text")
    return value


class Changes:
    """The write routes' work, over the database of one configuration. `project`: where a memory
    goes when the page names none (the project of the folder the viewer was started in)."""

    def __init__(self, config: Config, project: str) -> None:
        self.config = config
        self.project = project

    def mark(self, body: dict[str, Any]) -> dict[str, Any]:
        """A person's mark (`new` makes `old` no longer true) or its undo."""
        for name in ("old", "new"):
            value = body.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63):
                raise BadRequest(f"{name} must be an observation id (a positive whole number)")
        old_id, new_id = body.get("old"), body.get("new")
        if old_id is None:
            raise BadRequest("old is required: the observation that is no longer true")
        reason = body.get("reason") or ""
        if not isinstance(reason, str) or len(reason) > 300:
            raise BadRequest("reason is a short text (at most 300 characters)")
        with _writing(self.config.db_path) as conn:
            wanted = [i for i in (old_id, new_id) if i is not None]
            known = stored.existing(conn, wanted)
            missing = [i for i in wanted if i not in known]
            if missing:
                raise BadRequest(f"no observation obs:{missing[0]}", 409)
            with transaction(conn):
                if body.get("undo"):
                    undone = marks.undo(conn, old_id, new_id)
                    if not undone:
                        raise BadRequest(f"obs:{old_id} has no mark to undo", 409)
                    return {"old": old_id, "undone": undone}
                if new_id is None or new_id == old_id:
                    raise BadRequest("name the newer observation that supersedes this one (not itself)", 409)
                relation = "duplicates" if body.get("duplicate") else "supersedes"
                marks.add(conn, old_id, new_id, relation, "person", reason=reason.strip())
                return {"old": old_id, "new": new_id, "relation": relation}

    def remember(self, body: dict[str, Any]) -> dict[str, Any]:
        files = body.get("files") or []
        if not isinstance(files, list):
            raise BadRequest("files is a list of paths")
        with _writing(self.config.db_path) as conn:
            supersedes = observation_id(body["supersedes"]) if body.get("supersedes") else None
            done = remember(self.config, conn, _text(body, "text") or "", project=_text(body, "project") or self.project,
                            type_=_text(body, "type") or DEFAULT_TYPE, files=files, supersedes=supersedes, author=Source.PERSON)
        return {"ref": f"obs:{done.id}", "id": done.id, "project": done.project, "created": done.created,
                "marked": [f"obs:{m.old_id}" for m in done.marks] + ([f"obs:{done.superseded}"] if done.superseded else [])}

    def edit(self, row_id: int, body: dict[str, Any]) -> dict[str, Any]:
        facts = body.get("facts")
        if facts is not None and not (isinstance(facts, list) and all(isinstance(f, str) for f in facts)):
            raise BadRequest("facts is a list of texts")
        with _writing(self.config.db_path) as conn:
            if body.get("undo"):
                done = edit_mod.undo(self.config, conn, row_id)
            else:
                done = edit_mod.edit(self.config, conn, row_id, title=_text(body, "title"), text=_text(body, "text"),
                                     facts=facts, type_=_text(body, "type"), author=Source.PERSON)
        return {"ref": f"obs:{row_id}", "changed": done.changed, "undone": done.undone}

    def release(self, body: dict[str, Any]) -> dict[str, Any]:
        """A person releases what the write guard withheld (its text as written back), or withholds it again."""
        kind, row_id = body.get("kind"), body.get("id")
        if kind not in withheld.TABLES or isinstance(row_id, bool) or not isinstance(row_id, int) or not 0 < row_id < 2**63:
            raise BadRequest('the body is {"kind": "observation" | "summary", "id": N} ("undo": true to withhold it again)')
        undo = bool(body.get("undo"))
        with _writing(self.config.db_path) as conn:
            try:
                with transaction(conn):
                    row = withheld.release(conn, kind, row_id, undo=undo)
            except withheld.NotWithheld as exc:
                raise BadRequest(f"{ref(kind, row_id)}: {exc}", 409) from None
        if row is None:
            raise BadRequest(f"no {ref(kind, row_id)}", 404)
        log_line(self.config.logs_dir, "release", f"{ref(kind, row_id)} {'withheld again' if undo else 'released'} by a person (viewer)")
        released_text(self.config, kind, row_id)
        return {"ref": ref(kind, row_id), "released": not undo}

    def forget(self, row_id: int) -> dict[str, Any]:
        with _writing(self.config.db_path) as conn:
            return {"ref": f"obs:{row_id}", **forget(self.config, conn, row_id)}
