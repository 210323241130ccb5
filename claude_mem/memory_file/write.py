"""Writing the memory file: which file (the `memory_file` setting, at the project's root and never
in a subfolder of its own choosing), the section rebuilt from what is stored, and the write
itself: atomic, under a lock (a session's worker and the command may meet), skipped when the
bytes would not change.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass

from claude_mem.jsonfile import write_bytes_atomic
from claude_mem.memory_file.choose import choose
from claude_mem.memory_file.section import HEADER_LINES, START_PREFIX, MemoryFileError, render, splice
from claude_mem.processes import take_lock
from claude_mem.project import find_git_root, project_for
from claude_mem.settings import Config
from claude_mem.store import project_memory

OFF = ("", "off")
NEW_FILE_MODE = 0o644  # a file of the project, read by the user's tools and teammates: not our 0600
LOCK_WAIT_S = 10.0


@dataclass(frozen=True)
class Outcome:
    path: str
    changed: bool
    text: str  # the whole file as it is (or, on a dry run, would be) after the write
    section_lines: int  # lines between the markers


def is_off(setting: str) -> bool:
    return setting.strip().lower() in OFF


def project_root(start_dir: str) -> str:
    """The root of the project `start_dir` is in: its git work tree's root, else the folder itself."""
    found = find_git_root(start_dir)
    return found[0] if found else os.path.abspath(start_dir)


def target(setting: str, start_dir: str) -> str:
    """The file the setting names (validated as a path inside the root when it was read)."""
    return os.path.join(project_root(start_dir), setting.strip())


def update(conn: sqlite3.Connection, *, setting: str, lines: int, start_dir: str, data_dir: str,
           project: str | None = None, dry_run: bool = False) -> Outcome | None:
    """Rewrite the section of the memory file of the project `start_dir` is in; None when the
    setting is off, or when there is no memory and no file to keep in step."""
    if is_off(setting):
        return None
    path = target(setting, start_dir)
    project = project or project_for(start_dir)
    body = render(project, choose(conn, project, lines - HEADER_LINES))
    lock = None if dry_run else take_lock(os.path.join(data_dir, "memory-file.lock"), LOCK_WAIT_S)
    if not dry_run and lock is None:
        raise MemoryFileError("another claude-mem process kept the memory file locked; try again")
    try:
        return _write(path, body, dry_run)
    finally:
        if lock is not None:
            os.close(lock)


def _write(path: str, body: list[str], dry_run: bool) -> Outcome | None:
    real = os.path.realpath(path)  # a CLAUDE.md linked to AGENTS.md: the link is kept, its target written
    try:
        with open(real, "rb") as fh:
            old: bytes | None = fh.read()
    except FileNotFoundError:
        old = None
    except OSError as exc:
        raise MemoryFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(body) <= HEADER_LINES and (old is None or START_PREFIX not in old):
        return None  # nothing remembered yet: no file made, no empty section added
    new = splice(old, body)
    changed = new != old
    if changed and not dry_run:
        if not os.path.isdir(os.path.dirname(real)):
            raise MemoryFileError(f"cannot write {path}: its folder does not exist")
        try:
            write_bytes_atomic(real, new, mode=NEW_FILE_MODE, keep_mode=True)
        except OSError as exc:
            raise MemoryFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    return Outcome(path, changed, new.decode("utf-8", errors="replace"), len(body))


def for_session(conn: sqlite3.Connection, config: Config, session_id: str) -> Outcome | None:
    """Rewrite the memory file of the project an ended session worked in (its worker calls this
    once the session's events, its summary included, are stored); None when off or nothing to do."""
    if is_off(config.memory_file):
        return None
    place = project_memory.session_place(conn, session_id)
    if place is None or not place.cwd or not os.path.isdir(place.cwd):
        return None
    return update(conn, setting=config.memory_file, lines=config.memory_file_lines, start_dir=place.cwd,
                  data_dir=config.data_dir, project=place.project)


def after_session(conn: sqlite3.Connection, config: Config, session_id: str, log: Callable[[str], None]) -> None:
    """for_session from a worker whose session ended: what happened goes to its log, never up."""
    try:
        outcome = for_session(conn, config, session_id)
    except (MemoryFileError, sqlite3.Error, OSError) as exc:
        log(f"memory file not written: {exc}")
        return
    if outcome is not None and outcome.changed:
        log(f"memory file {outcome.path}: {outcome.section_lines} lines")
