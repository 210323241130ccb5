"""Importing the npm claude-mem's database (thedotmack/claude-mem, "the peer").

The peer keeps `~/.claude-mem/claude-mem.db`: `sdk_sessions` (keyed by Claude Code's session id,
`content_session_id`, and by its observer's, `memory_session_id`), `user_prompts`, `observations`
and `session_summaries` (both filed under the observer's session id), FTS and sync tables, and
`schema_versions` (52 at 13.25.3). Its rows become ours here, as `transfer.import_rows` takes
them from an export: sessions by Claude Code's id (the same in both tools), prompts by number,
observations by content hash, summaries by prompt, so importing twice adds nothing.

The peer's file is never opened: a running peer may hold it (WAL, locks), and SQLite checkpoints
a WAL database when its last connection closes. Its database and WAL are copied into a private
folder (again if they changed meanwhile) and the copy is read.

On the way in: types onto our six (the original kept in `raw_type`), dates and files kept,
`<private>` spans and secrets redacted as the hooks do, projects renamed (see `plan_projects`).
A row that cannot become one of ours is skipped with its reason; the rest are imported.

Standard library only.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from claude_mem.kinds import OBSERVATION_TYPES
from claude_mem.store.db import is_npm_database, now_iso
from claude_mem.store.memories import known_type
from claude_mem.store.reads import SUMMARY_FIELDS, json_list
from claude_mem.store.transfer import KINDS, ImportResult, RejectedRow, import_rows, validate_row
from claude_mem.text.caps import clean_text
from claude_mem.text.shorten import cut
from claude_mem.text.storable import decode_lossy, storable

NAME = "the npm claude-mem (thedotmack/claude-mem)"
FIELD_CHARS = 16_000  # per text field: the peer caps nothing, a pasted log may sit in a narrative
TITLE_CHARS = 200  # as the observer's titles are capped; one made from a narrative gets half

# The peer's own types (its modes: code, law-study, email-investigation, ...) that no synonym
# covers. What is not here and not a synonym of ours is a `discovery`: something learned.
PEER_TYPES = {
    "security_alert": "discovery", "security_note": "discovery", "sensitive": "discovery",
    "conclusion": "decision", "argument-structure": "decision", "signal-change": "change", "timeline-event": "change",
}


class NpmImportError(Exception):
    """The file cannot be imported as the peer's database; nothing was imported."""


@dataclass
class Skip:
    kind: str
    ref: str  # the peer's row, e.g. "observation 12"
    reason: str


@dataclass
class PeerProject:
    """One of the peer's projects and where its rows go."""

    peer: str
    project: str
    why: str
    added: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    present: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    skipped: list[Skip] = field(default_factory=list)


@dataclass
class NpmImport:
    path: str
    schema_version: int | None
    projects: dict[str, PeerProject]  # by the peer's name
    result: ImportResult

    @property
    def skipped(self) -> list[Skip]:
        return [s for p in self.projects.values() for s in p.skipped]


# --- reading a copy ------------------------------------------------------------------------------

def _stamp(path: str) -> tuple[tuple[int, int] | None, ...]:
    def one(p: str) -> tuple[int, int] | None:
        try:
            st = os.stat(p)
        except FileNotFoundError:
            return None
        return st.st_size, st.st_mtime_ns

    return one(path), one(path + "-wal")


@contextmanager
def open_copy(path: str, workdir: str | None = None, attempts: int = 5) -> Iterator[sqlite3.Connection]:
    """A private copy of the database at `path` and its WAL, opened; removed afterwards.

    Copying a database another process writes can tear it: the copy is taken again while the
    files' sizes or times moved during it. A WAL frame half written when copied fails its
    checksum and is ignored on opening, as SQLite does after a crash: the copy holds every
    transaction committed before it was taken."""
    if not os.path.isfile(path):
        raise NpmImportError(f"no file {path}")
    folder = tempfile.mkdtemp(prefix=".peer-import-", dir=workdir)  # 0700: it holds memory
    copy = os.path.join(folder, "peer.db")
    try:
        _take_copy(path, copy, attempts)
        try:
            conn = sqlite3.connect(copy, isolation_level=None)
            conn.row_factory = sqlite3.Row
            # Node writes what JavaScript strings hold, lone surrogates (as WTF-8) and all: a row
            # whose text is not UTF-8 is imported with it replaced, not refused.
            conn.text_factory = decode_lossy
            conn.execute("PRAGMA query_only = ON")
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.DatabaseError as exc:
            raise NpmImportError(f"{path} is not a readable SQLite database ({exc})") from None
        try:
            yield conn
        finally:
            conn.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _take_copy(path: str, copy: str, attempts: int) -> None:
    try:
        for _ in range(attempts):
            before = _stamp(path)
            _copy_files(path, copy)
            if _stamp(path) == before:
                return
    except OSError as exc:
        raise NpmImportError(f"cannot copy {path}: {exc.strerror or exc}") from None
    raise NpmImportError(f"{path} kept changing while it was copied; try again when {NAME} is idle")


def _copy_files(path: str, copy: str) -> None:
    shutil.copyfile(path, copy)
    if os.path.exists(path + "-wal"):
        shutil.copyfile(path + "-wal", copy + "-wal")
    elif os.path.exists(copy + "-wal"):
        os.unlink(copy + "-wal")


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}


def check_schema(conn: sqlite3.Connection, path: str) -> int | None:
    """The peer's schema version; raises NpmImportError for anything else."""
    if not is_npm_database(conn):
        if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'schema_migrations'").fetchone():
            raise NpmImportError(f"{path} is a database of this claude-mem, not {NAME}'s: run `claude-mem export -o FILE`"
                                  " with CLAUDE_MEM_DATA_DIR set to its folder, then import FILE")
        raise NpmImportError(f"{path} is an SQLite database but not {NAME}'s (it has no schema_versions, sdk_sessions"
                              " and observations tables)")
    if not {"content_session_id", "memory_session_id"} <= _columns(conn, "sdk_sessions"):
        raise NpmImportError(f"{path} is from an old version of {NAME}, before content_session_id: start the npm"
                              " claude-mem 13 once (it upgrades its database), then import")
    row = conn.execute("SELECT max(version) FROM schema_versions").fetchone()
    return row[0] if row else None


# --- projects -----------------------------------------------------------------------------------

def _base(peer_project: str) -> str:
    # The peer names a worktree "<repository>/<worktree>"; ours files a worktree under its repository.
    return peer_project.split("/", 1)[0] if "/" in peer_project else peer_project


def plan_projects(peer_projects: set[str], ours: set[str], project_map: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Where each of the peer's projects goes, and why: `project_map` first (by the peer's name,
    or its repository's for a worktree), else our project of the same name, else the one of ours
    whose name ends in it (ours are `github.com/owner/repo` where the peer has `repo`) when only
    one does, else the peer's name."""
    by_base: dict[str, list[str]] = {}
    for project in ours:
        by_base.setdefault(project.rsplit("/", 1)[-1].lower(), []).append(project)
    plan = {}
    for peer in sorted(peer_projects):
        base = _base(peer)
        if peer in project_map or base in project_map:
            project, why = project_map.get(peer) or project_map[base], "--project-map"
        elif base in ours:
            project, why = base, "a project of that name is here"
        elif len(by_base.get(base.lower(), [])) == 1:
            project, why = by_base[base.lower()][0], "the project here with that folder name"
        elif by_base.get(base.lower()):
            project, why = base, (f"kept: several projects here end in {base!r} ({', '.join(sorted(by_base[base.lower()]))});"
                                  " choose one with --project-map")
        else:
            project, why = base, "kept: no project here has that name"
        plan[peer] = (project, f"a worktree of {base}; {why}" if peer != base else why)
    return plan


def our_projects(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT project FROM sdk_sessions UNION SELECT project FROM observations")}


def peer_projects(conn: sqlite3.Connection) -> set[str]:
    names = {r[0] for r in conn.execute("SELECT project FROM sdk_sessions")}
    for table in ("observations", "session_summaries"):
        names |= {r[0] for r in conn.execute(f"SELECT project FROM {table}")}
    return {n for n in names if isinstance(n, str) and n.strip()}


# --- rows -----------------------------------------------------------------------------------------

def _clean(value: Any) -> str:
    # storable: a JSON list column's items may hold escaped lone surrogates.
    return storable(clean_text(value, FIELD_CHARS).strip()) if isinstance(value, str) else ""


def _clean_list(raw: Any) -> list[str]:
    # A JSON list; a bare text (older rows) is one item rather than nothing.
    items = [raw] if isinstance(raw, str) and raw.strip() and not raw.lstrip().startswith("[") else json_list(raw)
    return [c for c in (_clean(item) for item in items) if c]


def map_type(raw: str | None) -> tuple[str, str | None]:
    """Our type for the peer's, and the peer's when it is not one of ours verbatim."""
    raw = (raw or "").strip()
    kind = raw if raw in OBSERVATION_TYPES else PEER_TYPES.get(raw.lower()) or known_type(raw) or "discovery"
    return kind, (None if kind == raw else raw or None)


@dataclass
class _Rows:
    """The peer's rows as ours, with the peer's project of each (by label) for the report."""

    rows: dict[str, list[tuple[str, dict[str, Any]]]] = field(default_factory=lambda: {k: [] for k in KINDS})
    peer_project: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, list[Skip]] = field(default_factory=dict)

    def add(self, kind: str, label: str, peer_project: str, row: dict[str, Any]) -> bool:
        try:
            self.rows[kind].append((label, validate_row(kind, {"kind": kind, **row})))
        except ValueError as exc:  # a shape this import did not foresee: say so, keep the rest
            self.skip(kind, label, peer_project, f"not importable ({exc})")
            return False
        self.peer_project[label] = peer_project
        return True

    def skip(self, kind: str, label: str, peer_project: str, reason: str) -> None:
        self.skipped.setdefault(peer_project, []).append(Skip(kind, label, reason))


class _Reader:
    def __init__(self, conn: sqlite3.Connection, plan: dict[str, tuple[str, str]]) -> None:
        self.conn = conn
        self.plan = plan
        self.out = _Rows()
        self.sessions: dict[int, dict[str, Any]] = {}  # the peer's session row id -> {key, project, peer}
        self.by_memory_id: dict[str, dict[str, Any]] = {}
        self.by_content_id: dict[str, dict[str, Any]] = {}

    def project(self, peer_project: str | None) -> str:
        return self.plan[peer_project][0] if peer_project in self.plan else (peer_project or "unknown")

    def read(self) -> _Rows:
        self.read_sessions()
        self.read_prompts()
        self.read_observations()
        self.read_summaries()
        return self.out

    def read_sessions(self) -> None:
        cwds = self._cwds()
        for s in map(dict, self.conn.execute("SELECT * FROM sdk_sessions ORDER BY started_at_epoch, id")):
            platform = s.get("platform_source") or "claude"
            # Claude Code's session id is the same in both tools; another agent's ids get its name.
            key = s["content_session_id"] if platform == "claude" else f"{platform}:{s['content_session_id']}"
            started = int(s["started_at_epoch"])
            ended = s.get("completed_at_epoch")
            peer_project = s["project"] or "unknown"
            added = self.out.add("session", f"session {s['id']}", peer_project, {
                "claude_session_id": key, "project": self.project(peer_project), "cwd": cwds.get(s["content_session_id"]),
                "user_prompt": _clean(s.get("user_prompt")) or None,
                "status": s["status"] if s.get("status") in ("completed", "failed") else "ended",
                "started_at": now_iso(started), "started_at_epoch": started,
                "updated_at_epoch": int(ended) if ended else started, "completed_at_epoch": int(ended) if ended else None,
            })
            info = {"key": key if added else None, "peer": peer_project, "label": f"session {s['id']}"}
            self.sessions[s["id"]] = info
            if s.get("memory_session_id"):
                self.by_memory_id[s["memory_session_id"]] = info
            self.by_content_id.setdefault(s["content_session_id"], info)

    def _cwds(self) -> dict[str, str]:
        """The folder each session worked in, where the peer noted one (its tool_uses)."""
        if "cwd" not in _columns(self.conn, "tool_uses"):
            return {}
        return {r[0]: r[1] for r in self.conn.execute(
            "SELECT content_session_id, cwd FROM tool_uses WHERE cwd IS NOT NULL AND cwd != '' ORDER BY id DESC")}

    def read_prompts(self) -> None:
        if not _columns(self.conn, "user_prompts"):
            return
        seen: set[tuple[str, int]] = set()
        for p in map(dict, self.conn.execute("SELECT * FROM user_prompts ORDER BY created_at_epoch, id")):
            label = f"prompt {p['id']}"
            session = self.sessions.get(p.get("session_db_id") or 0) or self.by_content_id.get(p["content_session_id"])
            if session is None or session["key"] is None:
                self.out.skip("prompt", label, session["peer"] if session else "(no session)",
                              f"its {session['label']} was skipped" if session else
                              f"its session {p['content_session_id']} is not in the database")
                continue
            number = int(p["prompt_number"] or 0)
            text = _clean(p.get("prompt_text"))
            if (session["key"], number) in seen:
                self.out.skip("prompt", label, session["peer"], f"a second prompt numbered {number} in its session;"
                              " the first is kept")
            elif not text:
                self.out.skip("prompt", label, session["peer"], "empty once <private> parts and secrets are removed")
            else:
                seen.add((session["key"], number))
                self.out.add("prompt", label, session["peer"], {
                    "session_id": session["key"], "prompt_number": number, "prompt_text": text,
                    "created_at": now_iso(int(p["created_at_epoch"])), "created_at_epoch": int(p["created_at_epoch"])})

    def _session_of(self, kind: str, label: str, row: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        """The session a row is filed under (by the peer's observer session id), and the peer's
        project of the row: a worktree's rows adopted by its repository say so in merged_into_project."""
        peer_project = row.get("merged_into_project") or row.get("project") or "unknown"
        session = self.by_memory_id.get(row.get("memory_session_id") or "")
        if session is None:
            self.out.skip(kind, label, peer_project, f"its session ({row.get('memory_session_id')}) is not in the database")
        elif session["key"] is None:
            self.out.skip(kind, label, peer_project, f"its {session['label']} was skipped")
            return None, peer_project
        return session, peer_project

    def read_observations(self) -> None:
        for o in map(dict, self.conn.execute("SELECT * FROM observations ORDER BY created_at_epoch, id")):
            label = f"observation {o['id']}"
            session, peer_project = self._session_of("observation", label, o)
            if session is None:
                continue
            narrative = _clean(o.get("narrative")) or _clean(o.get("text"))  # `text`: the peer's rows before titles
            title = cut(_clean(o.get("title")), TITLE_CHARS) or cut(_clean(o.get("subtitle")) or narrative, TITLE_CHARS // 2)
            if not title:
                self.out.skip("observation", label, peer_project, "empty: no title, text or narrative")
                continue
            kind, raw_type = map_type(o.get("type"))
            created = int(o["created_at_epoch"])
            self.out.add("observation", label, peer_project, {
                "session_id": session["key"], "project": self.project(peer_project), "type": kind, "raw_type": raw_type,
                "title": title, "subtitle": _clean(o.get("subtitle")), "narrative": narrative,
                "facts": _clean_list(o.get("facts")), "concepts": _clean_list(o.get("concepts")),
                "files_read": _clean_list(o.get("files_read")), "files_modified": _clean_list(o.get("files_modified")),
                "prompt_number": int(o.get("prompt_number") or 0), "source": "import", "model": o.get("generated_by_model"),
                "created_at": now_iso(created), "created_at_epoch": created})

    def read_summaries(self) -> None:
        # Ours keep one summary per prompt; the peer may hold several: the latest wins, as in ours.
        rows = list(map(dict, self.conn.execute("SELECT * FROM session_summaries ORDER BY created_at_epoch DESC, id DESC")))
        kept: set[tuple[str, int]] = set()
        for s in rows:
            label = f"summary {s['id']}"
            session, peer_project = self._session_of("summary", label, s)
            if session is None:
                continue
            number = int(s.get("prompt_number") or 0)
            fields = {name: _clean(s.get(name)) for name in SUMMARY_FIELDS}
            if (session["key"], number) in kept:
                self.out.skip("summary", label, peer_project, f"an earlier summary of prompt {number}; the latest is kept")
            elif not any(fields.values()):
                self.out.skip("summary", label, peer_project, "empty once <private> parts and secrets are removed")
            else:
                kept.add((session["key"], number))
                created = int(s["created_at_epoch"])
                self.out.add("summary", label, peer_project, {
                    "session_id": session["key"], "project": self.project(peer_project), **fields,
                    "files_read": _clean_list(s.get("files_read")), "files_edited": _clean_list(s.get("files_edited")),
                    "prompt_number": number, "source": "import", "created_at": now_iso(created), "created_at_epoch": created})
        self.out.rows["summary"].reverse()  # oldest first, like everything else


# --- the import -------------------------------------------------------------------------------------

def import_npm(conn: sqlite3.Connection, path: str, *, project_map: dict[str, str] | None = None,
                workdir: str | None = None, dry_run: bool = False, progress: Any = None) -> NpmImport:
    """Import the peer's database at `path` into ours (`conn`); see the module docstring.
    `progress` (a progress.Progress) follows the rows going in."""
    project_map = project_map or {}
    with open_copy(path, workdir) as peer:
        version = check_schema(peer, path)
        names = peer_projects(peer)
        unknown = sorted(set(project_map) - names - {_base(n) for n in names})
        if unknown:
            raise NpmImportError(f"--project-map {unknown[0]}=...: no project of that name in {path}"
                                  f" (its projects: {', '.join(sorted(names)) or 'none'})")
        plan = plan_projects(names, our_projects(conn), project_map)
        read = _Reader(peer, plan).read()
    try:
        result = import_rows(conn, read.rows, dry_run=dry_run, progress=progress)
    except RejectedRow as exc:
        raise NpmImportError(f"{exc.label} of {path}: {exc}") from None
    projects = {name: PeerProject(name, *where) for name, where in plan.items()}

    def report(name: str) -> PeerProject:  # rows of no named project (an empty name) get a line too
        return projects.setdefault(name, PeerProject(name, name, "kept"))

    for kind, labelled in read.rows.items():
        for label, _ in labelled:
            counts = report(read.peer_project[label])
            (counts.present if label in result.present_labels else counts.added)[kind] += 1
    for peer_project, skips in read.skipped.items():
        report(peer_project).skipped.extend(skips)
    return NpmImport(path, version, projects, result)


def is_sqlite_file(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False
