"""A memory a person or the agent states (`claude-mem remember`, the viewer's box, the MCP tool
`remember`): stored at once, with no model and no queue, as an observation of the project's
stated session (store/records.stated_session) whose source and provenance say who stated it.

Its text is checked (checks.py) before anything is written; the row, its mark and the marking
rules' marks are one transaction; the index is told once it commits.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from claude_mem.kinds import OBSERVATION_TYPES, Provenance, Source
from claude_mem.logs import log_line
from claude_mem.marks.apply import mark_stored_guarded
from claude_mem.marks.rules import Mark
from claude_mem.settings import Config
from claude_mem.store import marks
from claude_mem.store import writes as stored
from claude_mem.store.db import transaction
from claude_mem.store.memories import Observation, guarded, insert_observation
from claude_mem.store.records import stated_session
from claude_mem.writes.checks import Missing, Refused, checked, headline
from claude_mem.writes.index import follow

DEFAULT_TYPE = "discovery"  # a fact learnt; a stated decision says --type decision
MAX_FILES = 20
FILE_CHARS = 1000


@dataclass
class Remembered:
    id: int
    project: str
    created: bool  # False: the project's stated memories held the same text already
    superseded: int | None = None  # what --supersedes marked
    marks: list[Mark] = field(default_factory=list)  # what the marking rules marked


def _files(files: Any) -> list[str]:
    kept = list(dict.fromkeys(f.strip() for f in files if isinstance(f, str) and f.strip()))
    if len(kept) > MAX_FILES or any(len(f) > FILE_CHARS for f in kept):
        raise Refused(f"name at most {MAX_FILES} files, each at most {FILE_CHARS} characters; nothing was stored")
    return [checked(f, FILE_CHARS, "file path") for f in kept]


def remember(config: Config, conn: sqlite3.Connection, text: str, *, project: str, type_: str = DEFAULT_TYPE,
             files: Any = (), supersedes: int | None = None, author: Source = Source.PERSON,
             own: Iterable[str] = ()) -> Remembered:
    """Store `text` as a memory of `project` stated by `author` (a person or the agent). With
    `supersedes`, that observation is marked superseded by it (by the same author); otherwise the
    marking rules run on it as on any stored observation. The agent's word passes the write guard
    (`own`: what the user said, which may be repeated); a person's is theirs. Raises Refused (bad
    input) or Missing (no such observation to supersede), with nothing stored."""
    if not author.stated:
        raise ValueError(f"{author} does not state memories")
    body = checked(text, config.remember_chars)
    if type_ not in OBSERVATION_TYPES:
        raise Refused(f"type must be one of {', '.join(OBSERVATION_TYPES)}, not {str(type_)[:40]!r}")
    if not isinstance(project, str) or not project.strip():
        raise Refused("no project to remember it in")
    paths = _files(files)
    observation = guarded(Observation(type_, headline(body), narrative=body, files_read=paths), author, own)
    with transaction(conn):
        if supersedes is not None and not stored.existing(conn, [supersedes]):
            raise Missing(f"no observation obs:{supersedes} to supersede; nothing was stored")
        session_id = stated_session(conn, project)
        new_id = insert_observation(conn, session_id, project, observation, prompt_number=0, source=author,
                                    provenance=[Provenance(author.value)])
        created = new_id is not None
        if new_id is None:  # the same text again: the memory it is
            new_id = stored.same_text(conn, session_id, observation.content_hash())
        done = Remembered(new_id, project, created)
        if supersedes is not None and supersedes != new_id:
            marks.add(conn, supersedes, new_id, "supersedes", author.value, reason="replaced by a stated memory")
            done.superseded = supersedes
        elif created:
            done.marks = mark_stored_guarded(conn, [new_id], lambda line: log_line(config.logs_dir, "remember", line))
    follow(config, [new_id])
    return done
