"""Export and import: memory as JSON Lines.

The first line is a header (`{"kind": "header", "format": "claude-mem", "version": 1, ...}`);
every other line is one row with a `kind` of session, prompt, observation or summary, holding
every column of its table except the surrogate `id` (rows refer to their session by Claude
Code's session id, which is the same on every machine). A session's line comes before its
rows. Then the marks between the exported observations (`kind` mark: which observation
supersedes or repeats which, who said so; each named by its session and content hash), and the
versions edits replaced (`kind` revision, store/revisions.py). The queue, raw replies and worker
bookkeeping are not memory and are not exported.

Import validates every line before writing anything, then writes in one transaction, so a file
with one bad line imports nothing. It is idempotent: a session is matched by its Claude session
id, a prompt by (session, prompt number), an observation by (session, content hash) and a
summary by (session, prompt number), a mark by its pair, a revision by all it holds; rows already
present are left as they are. An export of any earlier version imports (the columns it lacks take
their defaults; it has no revisions).

Standard library only.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TextIO

from claude_mem.guard.screen import Context, screen_fields
from claude_mem.kinds import OBSERVATION_TYPES, Provenance, Source
from claude_mem.store import marks, revisions
from claude_mem.store.db import latest_version, now_iso
from claude_mem.store.memories import OBSERVATION_TEXT, Observation
from claude_mem.store.overview import session_scope
from claude_mem.store.reads import STATED_SOURCES, SUMMARY_FIELDS
from claude_mem.store.records import STATED_HOST
from claude_mem.text.storable import dumps_line, storable, storable_value

if TYPE_CHECKING:
    from claude_mem.progress import Progress

FORMAT = "claude-mem"
VERSION = 1
KINDS = ("session", "prompt", "observation", "summary")
COUNTED = (*KINDS, "mark", "revision")


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # text | int | list (of strings)
    required: bool = False
    nullable: bool = False
    default: Any = None
    choices: tuple[str, ...] = ()


def _text(name: str, default: str = "", **kw: Any) -> Field:
    return Field(name, "text", default=default, **kw)


def _opt_text(name: str) -> Field:
    return Field(name, "text", nullable=True)


def _opt_int(name: str) -> Field:
    return Field(name, "int", nullable=True)


def _list(name: str) -> Field:
    return Field(name, "list", default=[])


# One spec per kind, column for column (tests/test_transfer.py checks it against the schema, so a
# migration that adds a column fails a test until the export carries it).
SPECS: dict[str, tuple[Field, ...]] = {
    "session": (
        Field("claude_session_id", "text", required=True), Field("project", "text", required=True),
        _opt_text("sdk_session_id"), _opt_text("cwd"), _opt_text("transcript_path"), _opt_text("user_prompt"),
        _text("status", "ended", choices=("active", "completed", "failed", "ended")),
        Field("prompt_counter", "int", default=0), _opt_text("started_at"), Field("started_at_epoch", "int", required=True),
        _opt_int("updated_at_epoch"), _opt_int("completed_at_epoch"), _opt_text("observer_error"),
        _opt_int("observer_error_at_epoch"), _opt_text("synthesizer"), _opt_int("outage_since_epoch"),
        Field("outage_failures", "int", default=0), _opt_text("sdk_resume_at"),
        _text("host", "claude-code", choices=("claude-code", "codex", STATED_HOST)),
    ),
    "prompt": (
        Field("session_id", "text", required=True), Field("prompt_number", "int", required=True),
        Field("prompt_text", "text", required=True), _opt_text("prompt_id"), _opt_text("created_at"),
        Field("created_at_epoch", "int", required=True), _text("reply_text"),
    ),
    "observation": (
        Field("session_id", "text", required=True), _opt_text("project"),
        Field("type", "text", required=True, choices=OBSERVATION_TYPES), _opt_text("raw_type"),
        Field("title", "text", required=True), _text("subtitle"), _text("narrative"), _list("facts"), _list("concepts"),
        _list("files_read"), _list("files_modified"), Field("prompt_number", "int", default=0),
        _text("source", "import", choices=tuple(Source)), _opt_text("model"), _opt_text("content_hash"),
        _opt_text("created_at"), Field("created_at_epoch", "int", required=True),
        _list("provenance"), _text("guard_note"), _opt_int("released_at_epoch"), _text("scope"), _text("withheld_text"),
    ),
    "summary": (
        Field("session_id", "text", required=True), _opt_text("project"), _text("request"), _text("investigated"),
        _text("learned"), _text("completed"), _text("next_steps"), _list("files_read"), _list("files_edited"), _text("notes"),
        Field("prompt_number", "int", default=0), _text("source", "import", choices=("model", "derived", "heuristic", "import")),
        _opt_text("model"), _opt_text("created_at"), Field("created_at_epoch", "int", required=True),
        _text("guard_note"), _opt_int("released_at_epoch"), _text("withheld_text"),
    ),
}
TABLES = {"session": "sdk_sessions", "prompt": "user_prompts", "observation": "observations", "summary": "session_summaries"}
_ORDER = {
    "prompt": "prompt_number, id",
    "observation": "prompt_number, created_at_epoch, id",
    "summary": "prompt_number, id",
}


class BadImportLine(ValueError):
    """A line of an import file is not valid; `line` is its 1-based number."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line


class RejectedRow(ValueError):
    """The database refused a row (`label` names it: a line number, a row of another database)."""

    def __init__(self, label: Any, message: str) -> None:
        super().__init__(message)
        self.label = label


@dataclass
class ImportResult:
    added: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))  # and "mark" when the file has marks
    present: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    present_labels: set[Any] = field(default_factory=set)  # the rows (by label) that were already here

    @property
    def total_added(self) -> int:
        return sum(self.added.values())


# --- export ---------------------------------------------------------------------------------------

def _row_object(kind: str, row: sqlite3.Row) -> dict[str, Any]:
    obj: dict[str, Any] = {"kind": kind}
    for f in SPECS[kind]:
        value = row[f.name]
        if f.type == "list":
            try:
                value = json.loads(value or "[]")
            except ValueError:
                value = []
        obj[f.name] = value
    return obj


def export_objects(conn: sqlite3.Connection, *, project: str | None = None,
                   session_id: str | None = None) -> Iterator[dict[str, Any]]:
    """The header, then each session (oldest first) followed by its prompts, observations and
    summaries."""
    yield {"kind": "header", "format": FORMAT, "version": VERSION, "schema_version": latest_version(),
           "exported_at": now_iso(), "filters": {"project": project, "session": session_id}}
    where, params = session_scope(project=project, session_id=session_id)
    exported: set[int] = set()
    for session in conn.execute(f"SELECT s.* FROM sdk_sessions s{where} ORDER BY s.started_at_epoch, s.id", params).fetchall():
        yield _row_object("session", session)
        sid = session["claude_session_id"]
        for kind in ("prompt", "observation", "summary"):
            for row in conn.execute(f"SELECT * FROM {TABLES[kind]} WHERE session_id = ? ORDER BY {_ORDER[kind]}", (sid,)):
                exported.update([row["id"]] if kind == "observation" else [])
                yield _row_object(kind, row)
    yield from marks.export_marks(conn, exported)
    yield from revisions.export_revisions(conn, exported)


def write_export(conn: sqlite3.Connection, out: TextIO, *, project: str | None = None,
                 session_id: str | None = None) -> dict[str, int]:
    """Write the export to `out`; returns how many rows of each kind it holds."""
    counts = dict.fromkeys(KINDS, 0)
    # One read transaction: a worker storing rows meanwhile cannot tear the export.
    conn.execute("BEGIN")
    try:
        for obj in export_objects(conn, project=project, session_id=session_id):
            out.write(dumps_line(obj) + "\n")
            if obj["kind"] in COUNTED:
                counts[obj["kind"]] = counts.get(obj["kind"], 0) + 1
    finally:
        conn.execute("COMMIT")
    return counts


# --- validation ----------------------------------------------------------------------------------

def _check_value(f: Field, value: Any) -> str | None:
    """Why `value` does not fit `f`, or None."""
    if value is None:
        return None if f.nullable else f"{f.name!r} must not be null"
    if f.type == "text" and not isinstance(value, str):
        return f"{f.name!r} must be a string, got {json.dumps(value)[:40]}"
    if f.type == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        return f"{f.name!r} must be an integer, got {json.dumps(value)[:40]}"
    if f.type == "int" and value < 0:
        return f"{f.name!r} must not be negative"
    if f.type == "list" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return f"{f.name!r} must be a list of strings"
    if f.choices and value not in f.choices:
        return f"{f.name!r} is {value!r}, not one of {', '.join(f.choices)}"
    return None


def validate_row(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    """The row with defaults filled in; raises ValueError naming the first problem."""
    spec = SPECS[kind]
    unknown = sorted(set(obj) - {f.name for f in spec} - {"kind"})
    if unknown:
        raise ValueError(f"{kind}: unknown field {unknown[0]!r}")
    row: dict[str, Any] = {}
    for f in spec:
        if f.name not in obj:
            if f.required:
                raise ValueError(f"{kind}: {f.name!r} is missing")
            row[f.name] = list(f.default) if isinstance(f.default, list) else f.default
            continue
        problem = _check_value(f, obj[f.name])
        if problem:
            raise ValueError(f"{kind}: {problem}")
        value = obj[f.name]
        # Made storable here, where the row's values are walked anyway (checking every line's text
        # for an escape first cost more): a lone surrogate becomes U+FFFD instead of failing the import.
        if f.type == "text" and value is not None:
            value = storable(value)
        elif f.type == "list":
            value = [storable(v) for v in value]
        row[f.name] = value
    for name in ("claude_session_id", "session_id", "project", "title"):
        if name in row and row[name] is not None and not row[name].strip():
            raise ValueError(f"{kind}: {name!r} must not be empty")
    return row


def _check_header(obj: Any) -> None:
    if not isinstance(obj, dict) or obj.get("kind") != "header" or obj.get("format") != FORMAT:
        raise ValueError(f'the first line must be the header {{"kind": "header", "format": "{FORMAT}", "version": {VERSION}}}'
                         " (is this a claude-mem export?)")
    version = obj.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError("header: 'version' must be an integer")
    if version > VERSION:
        raise ValueError(f"header: format version {version} is newer than this claude-mem reads ({VERSION}); upgrade claude-mem")


def parse_lines(lines: Iterable[str], known_sessions: set[str] | None = None,
                stated: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> dict[str, list[tuple[int, dict[str, Any]]]]:
    """Every row of an export, validated, by kind (with its line number). Raises BadImportLine
    for the first bad line. Rows must belong to a session in the file or in `known_sessions`.
    `stated` checks a memory a person or the agent stated (writes/checks.stated_row: what every
    stated write passes), raising ValueError for one it refuses."""
    rows: dict[str, list[tuple[int, dict[str, Any]]]] = {kind: [] for kind in COUNTED}
    header_seen = False
    number = 0
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise BadImportLine(number, f"not valid JSON ({exc})") from None
        try:
            if not header_seen:
                _check_header(obj)
                header_seen = True
                continue
            if not isinstance(obj, dict):
                raise ValueError("expected a JSON object")
            kind = obj.get("kind")
            if kind not in COUNTED:
                raise ValueError(f"'kind' is {kind!r}, not one of {', '.join(COUNTED)}")
            row = _checked(kind, obj)
            if stated is not None and kind == "observation" and row["source"] in STATED_SOURCES:
                row = stated(row)
            rows[kind].append((number, row))
        except ValueError as exc:
            raise BadImportLine(number, str(exc)) from None
    if not header_seen:
        raise BadImportLine(1, "the file is empty: no header line")
    sessions = {r["claude_session_id"] for _, r in rows["session"]} | (known_sessions or set())
    for kind in ("prompt", "observation", "summary"):
        for line, row in rows[kind]:
            if row["session_id"] not in sessions:
                raise BadImportLine(line, f"{kind}: session {row['session_id']!r} is neither in the file nor in the database")
    for kind, sides in (("mark", ("old", "new")), ("revision", ("observation",))):
        for line, row in rows[kind]:
            for side in sides:
                if row[side]["session_id"] not in sessions:
                    raise BadImportLine(line, f"{kind}: session {row[side]['session_id']!r} is neither in the file nor in the database")
    return rows


def _checked(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    if kind == "mark":
        return storable_value(marks.check_mark(obj))
    if kind == "revision":
        return storable_value(revisions.check_revision(obj))
    return validate_row(kind, obj)


# --- import -----------------------------------------------------------------------------------------

def _insert(conn: sqlite3.Connection, table: str, row: dict[str, Any]) -> bool:
    names = list(row)
    values = [json.dumps(v, ensure_ascii=False) if isinstance(v, list) else v for v in row.values()]
    # Any uniqueness conflict means "already here": that is what makes importing twice a no-op.
    cur = conn.execute(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
                       " ON CONFLICT DO NOTHING", values)
    return bool(cur.rowcount)


def _complete(kind: str, row: dict[str, Any], projects: dict[str, str]) -> dict[str, Any]:
    """Fill what a hand-written line may leave out from what it has."""
    row = dict(row)
    if kind == "session":
        row["started_at"] = row["started_at"] or now_iso(row["started_at_epoch"])
        row["updated_at_epoch"] = row["updated_at_epoch"] if row["updated_at_epoch"] is not None else row["started_at_epoch"]
        return row
    row["created_at"] = row["created_at"] or now_iso(row["created_at_epoch"])
    if kind in ("observation", "summary") and not row["project"]:
        row["project"] = projects[row["session_id"]]
    if kind == "observation" and not row["content_hash"]:
        row["content_hash"] = Observation(type=row["type"], title=row["title"], subtitle=row["subtitle"],
                                          narrative=row["narrative"], facts=row["facts"]).content_hash()
    if kind in GUARDED:
        _guard(kind, row)
    return row


# What the write guard screens in an imported row (issue 47): a file is outside text, whoever
# wrote it, and whatever it says about what was withheld or released before.
GUARDED = {"observation": OBSERVATION_TEXT, "summary": SUMMARY_FIELDS}


def _guard(kind: str, row: dict[str, Any]) -> None:
    record = SimpleNamespace(**{name: row[name] for name in GUARDED[kind]})
    note, original = screen_fields(record, GUARDED[kind], Context(made_from=row.get("provenance") or [Provenance.IMPORT]))
    if note:
        row.update(vars(record), guard_note=note, withheld_text=original, released_at_epoch=None)


def import_lines(conn: sqlite3.Connection, lines: Iterable[str], *, dry_run: bool = False,
                 progress: Progress | None = None, stated: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> ImportResult:
    """Validate every line (stated memories with `stated` too, see parse_lines), then add the rows
    not already present, all in one transaction (rolled back with `dry_run`, which still counts what
    would be added)."""
    # Reading and checking a large file takes seconds: done before taking the write lock, which
    # hooks wait on (then spool). A session removed meanwhile fails its rows' inserts below.
    known = {r[0] for r in conn.execute("SELECT claude_session_id FROM sdk_sessions")}
    rows = parse_lines(lines, known, stated)
    try:
        return import_rows(conn, rows, dry_run=dry_run, progress=progress)
    except RejectedRow as exc:
        raise BadImportLine(exc.label, str(exc)) from None


def import_rows(conn: sqlite3.Connection, rows: dict[str, list[tuple[Any, dict[str, Any]]]], *,
                dry_run: bool = False, progress: Progress | None = None) -> ImportResult:
    """Add validated rows (`(label, row)` by kind, sessions before the rows that refer to them)
    that are not already present, in one transaction (rolled back with `dry_run`, or by an
    interrupt: all or nothing). Raises RejectedRow, with nothing added, when the database
    refuses one. `progress` grows by the rows and advances as they go in."""
    result = ImportResult()
    if progress is not None:
        progress.grow(sum(len(r) for r in rows.values()))
    conn.execute("BEGIN IMMEDIATE")
    try:
        projects = dict(conn.execute("SELECT claude_session_id, project FROM sdk_sessions").fetchall())
        projects.update({r["claude_session_id"]: r["project"] for _, r in rows.get("session", ())})
        for kind in KINDS:  # sessions first: the other rows refer to them
            for label, row in rows.get(kind, ()):
                try:
                    added = _insert(conn, TABLES[kind], _complete(kind, row, projects))
                except sqlite3.IntegrityError as exc:
                    raise RejectedRow(label, f"{kind}: rejected by the database ({exc})") from None
                result.added[kind] += added
                result.present[kind] += not added
                if not added:
                    result.present_labels.add(label)
                if progress is not None:
                    progress.advance()
        for label, mark in rows.get("mark", ()):  # after the observations they name
            marked = marks.import_mark(conn, mark)
            if marked is None:
                raise RejectedRow(label, "mark: an observation it names is neither in the file nor in the database")
            result.added["mark"] = result.added.get("mark", 0) + marked
            result.present["mark"] = result.present.get("mark", 0) + (not marked)
        for label, revision in rows.get("revision", ()):
            kept = revisions.import_revision(conn, revision)
            if kept is None:
                raise RejectedRow(label, "revision: its observation is neither in the file nor in the database")
            result.added["revision"] = result.added.get("revision", 0) + kept
            result.present["revision"] = result.present.get("revision", 0) + (not kept)
        # A later prompt in an imported session must not reuse an imported prompt's number.
        touched = {r["session_id"] for _, r in rows.get("prompt", ())} | {r["claude_session_id"] for _, r in rows.get("session", ())}
        conn.executemany(
            "UPDATE sdk_sessions SET prompt_counter = max(prompt_counter,"
            " (SELECT coalesce(max(prompt_number), 0) FROM user_prompts WHERE session_id = ?)) WHERE claude_session_id = ?",
            [(sid, sid) for sid in sorted(touched)])
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("ROLLBACK" if dry_run else "COMMIT")
    return result
