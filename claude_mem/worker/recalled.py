"""What memory already holds about a batch, told to the observer in the batch message (a few
`obs:ID date title` lines), so that a new observation can say which older one it makes no longer
true, `<supersedes>obs:ID</supersedes>`, at no extra call. And the check of what it says: an id
this conversation was shown, of the same project, recorded before the new observation.

Small on purpose (model input per event is the cost that matters): at most MAX_LINES lines a
batch, each observation shown once per worker, only current ones of other sessions, and only
those naming a file the batch touches or, when a new request starts, sharing its words.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import asdict

from claude_mem.file_paths import place
from claude_mem.store import marking, marks, observation_files, records, titles
from claude_mem.text.clock import local_day
from claude_mem.text.shorten import cut
from claude_mem.text.terms import fts_match, query_terms
from claude_mem.worker.events import Event, files_touched

MAX_LINES = 4
TITLE_CHARS = 90
FILE_CANDIDATES = 40
SUBJECT_MIN_WORDS = 2  # a request's words an observation's title must share to be shown for it
HEADER = ("Memory already holds (earlier sessions; in a new observation add <supersedes>obs:ID</supersedes> only if it"
          " makes that one's main claim no longer true):")


class Recalled:
    def __init__(self, conn: sqlite3.Connection, session_id: str, log: Callable[[str], None] | None = None) -> None:
        self.conn = conn
        self.session_id = session_id
        self.log = log or (lambda message: None)
        self.shown: set[int] = set()
        self._offered: list[int] = []  # in the message being sent; shown once the model has answered it

    def _session(self) -> tuple[str, str | None] | None:
        """(project, folder) of this session, None before its row exists."""
        row = records.get_session(self.conn, self.session_id)
        return (row.project, row.cwd) if row else None

    def block(self, events: list[Event], request: str = "") -> str:
        """The lines to put before the batch's events ("" when memory holds nothing new about it)."""
        session = self._session()
        if session is None:
            return ""
        project, cwd = session
        rows = self._about_files(project, cwd, events)
        if request and len(rows) < MAX_LINES:
            rows += self._about_request(project, request)
        fresh = [r for r in dict((r["id"], r) for r in rows).values() if r["id"] not in self.shown]
        gone = marks.superseded_ids(self.conn, [r["id"] for r in fresh])
        kept = sorted((r for r in fresh if r["id"] not in gone), key=lambda r: -r["created_at_epoch"])[:MAX_LINES]
        self._offered = [r["id"] for r in kept]
        if not kept:
            return ""
        lines = [f"obs:{r['id']} {local_day(r['created_at_epoch'])} {cut(r['title'], TITLE_CHARS)}" for r in kept]
        return "\n".join([HEADER, *lines]) + "\n\n"

    def _about_files(self, project: str, cwd: str | None, events: list[Event]) -> list[dict]:
        tools = [e for e in events if e.kind == "tool"]
        read, edited = files_touched(tools)
        # A batch is one session's: its events' folder, else the session's, reads a relative path.
        cwd = next((e.cwd for e in tools if e.cwd), None) or cwd
        files = [place(p, cwd) for p in dict.fromkeys(edited + read)]
        return observation_files.naming(self.conn, project, files, limit=FILE_CANDIDATES, other_than_session=self.session_id)

    def _about_request(self, project: str, request: str) -> list[dict]:
        terms = query_terms(request)
        if len(terms) < SUBJECT_MIN_WORDS:
            return []
        wanted = set(terms)
        found = titles.matching(self.conn, project, f"title : ({fts_match(terms)})", other_than_session=self.session_id, limit=10)
        return [asdict(t) for t in found if len(wanted & set(query_terms(t.title))) >= SUBJECT_MIN_WORDS]

    def answered(self) -> None:
        """The message built by the last `block()` got its reply: its lines count as shown. A
        message that failed is cut from the conversation when it resumes, so its lines are offered
        again with the next batch (under load a failed first try had hidden them for good)."""
        self.shown.update(self._offered)
        self._offered = []

    def accept(self, new_id: int, claimed: list[int], model: str | None, relation: str = "supersedes") -> list[int]:
        """Record the marks the model gave the observation `new_id` (inside the caller's
        transaction), keeping only ids it was shown, of the same project, recorded before it.
        `relation`: "supersedes" (<supersedes>), or "conflicts" (<conflicts>: rival decisions, issue 51)."""
        made: list[int] = []
        for old_id in claimed:
            if old_id not in self.shown or not marking.earlier_of_project(self.conn, old_id, new_id):
                self.log(f"ignored <{relation}>obs:{old_id}</{relation}> of obs:{new_id}: not an earlier observation"
                         " of this project shown to the model")
                continue
            if marks.add(self.conn, old_id, new_id, relation, "model", rule=model or "", reason="the observer said so"):
                made.append(old_id)
        return made
