"""What memory rows are (`KIND`: table, FTS table, columns, project join, ref prefix; `parse_ref`)
and reading observations and summaries back as decoded dicts, filtered: the digest's lists.

Kept apart from memories.py (which defines the dataclasses the worker writes) because the
SessionStart hook reads through here: no dataclasses (which import inspect), no typing, no
hashlib, ~10 ms of the hook's start-up saved. Standard library only. So the reads here give
decoded dicts (`observation_rows`, `summary_rows`: the SessionStart digest's); the rest reads the
same rows as records through store/memory_rows.py.
"""

from __future__ import annotations

import json
import re
import sqlite3

from claude_mem.store.marks import not_superseded
from claude_mem.store.withheld import shown

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

# The sources of a memory a person or the agent stated (kinds.Source.stated; tests/test_writes.py
# holds the two equal): spelt out, as the hooks read through here and need no enum of their own.
STATED_SOURCES = ("person", "agent")
JSON_LIST_COLUMNS = ("facts", "concepts", "files_read", "files_modified", "files_edited", "provenance")
SUMMARY_FIELDS = ("request", "investigated", "learned", "completed", "next_steps", "notes")


class Kind:
    """One kind of memory row: where it is stored and how people, agents and documents name it.
    A constant (see KIND); a plain class because dataclasses cost the hook their import."""

    __slots__ = ("name", "table", "fts", "prefix", "text_columns", "file_columns", "guard_columns", "typed",
                 "project_from_session")

    def __init__(self, name: str, table: str, prefix: str, text_columns: tuple[str, ...],
                 file_columns: tuple[str, ...] = (), guard_columns: tuple[str, ...] = (), *, typed: bool = False,
                 project_from_session: bool = False) -> None:
        self.name = name
        self.table = table
        self.fts = f"{table}_fts"  # its FTS5 table (migration 0001), rowid = the row's id
        self.prefix = prefix  # of its refs (`obs:12`) and of its Chroma document ids
        self.text_columns = text_columns  # what its documents (and FTS5) are made of
        self.file_columns = file_columns  # JSON lists of the paths it names
        self.guard_columns = guard_columns  # what it was made from, what the write guard withheld (issue 47)
        self.typed = typed  # has a `type` (observations only)
        self.project_from_session = project_from_session  # no project column: its session holds it

    def project_column(self, alias: str = "t") -> str:
        """The project of a row in `source(alias)`."""
        return "s.project" if self.project_from_session else f"{alias}.project"

    def session_join(self, alias: str = "t") -> str:
        """What joins a row in `alias` to its session as `s`, when that holds the project."""
        return f" LEFT JOIN sdk_sessions s ON s.claude_session_id = {alias}.session_id" if self.project_from_session else ""

    def source(self, alias: str = "t", hint: str = "") -> str:
        """A FROM clause: the table as `alias` (with `hint`, e.g. NOT INDEXED) and its session_join."""
        return f"{self.table} {alias}" + (f" {hint}" if hint else "") + self.session_join(alias)

    def row_sql(self) -> str:
        """SELECT of what recall reads of rows by id (text, files, type, project, turn, date; an
        observation's scope and concepts: what a stated decision is), with a `{marks}` slot for the ids."""
        columns = ["t.id", "t.session_id", f"{self.project_column()} AS project", "t.prompt_number",
                   "t.created_at_epoch", *(["t.type", "t.scope", "t.concepts"] if self.typed else []),
                   *(f"t.{c}" for c in self.text_columns + self.file_columns + self.guard_columns)]
        return f"SELECT {', '.join(columns)} FROM {self.source()} WHERE t.id IN ({{marks}})"


# What memory rows are, in one place: every table, FTS table, column list, project join and ref
# prefix used by search, the index, the views and the viewer comes from here.
KIND = {
    "observation": Kind("observation", "observations", "obs", ("title", "subtitle", "narrative", "facts"),
                        ("files_read", "files_modified"), ("provenance", "guard_note", "released_at_epoch"), typed=True),
    "summary": Kind("summary", "session_summaries", "sum", SUMMARY_FIELDS, ("files_read", "files_edited"),
                    ("guard_note", "released_at_epoch")),
    "prompt": Kind("prompt", "user_prompts", "prompt", ("prompt_text", "reply_text"), project_from_session=True),
}
KINDS = tuple(KIND)  # ("observation", "summary", "prompt")
TABLES = {name: kind.table for name, kind in KIND.items()}
REF_PREFIX = {name: kind.prefix for name, kind in KIND.items()}
KIND_OF_PREFIX = {prefix: kind for kind, prefix in REF_PREFIX.items()}
TURN_ORDER = ("prompt", "observation", "summary")  # within a turn: asked, done, summed up
TURN_RANK = {name: rank for rank, name in enumerate(TURN_ORDER)}

# A row reference as search rows show it: `obs:12`, `sum:3`, `prompt:7`, or a teammate's memory
# found on a shared Chroma server, `obs:12@laptop-b` (recall/teammates.py). parse_ref also keeps the
# number within 18 digits, in SQLite's integer range.
REF_PATTERN = r"^(obs|sum|prompt):[1-9][0-9]*(@[A-Za-z0-9._-]{1,64})?$"
# A pattern, not a compiled one: every hook imports this module and few parse a ref (re compiles
# on first use and caches).
_REF = r"^(obs|sum|prompt):([1-9][0-9]{0,17})(?:@([A-Za-z0-9._-]{1,64}))?$"
# What people type for a row as well: "12" (an observation), "observation:12", "OBS:12", and what
# document ids hold before their '@': "obs:12:fact:0".
_LOOSE_PREFIX = {**KIND_OF_PREFIX, **{name: name for name in KIND}}


def ref(kind: str, row_id: int, origin: str | None = None) -> str:
    """`obs:12`, or `obs:12@laptop-b` for a teammate's memory (recall/teammates.py)."""
    return f"{REF_PREFIX[kind]}:{row_id}" + (f"@{origin}" if origin else "")


def parse_ref(text: str, *, loose: bool = False) -> tuple[str, int, str | None] | None:
    """(kind, row id, origin) of a ref (`obs:12`; `obs:12@laptop-b` has origin "laptop-b", this
    machine's rows None); None for anything else. `loose` takes what people type and document
    keys instead ("12", "observation:12", "obs:12:fact:0"), never with an origin."""
    text = text.strip()
    if not loose:
        match = re.match(_REF, text)
        return None if match is None else (KIND_OF_PREFIX[match[1]], int(match[2]), match[3])
    if text.isascii() and text.isdigit():
        return "observation", int(text), None
    prefix, sep, rest = text.partition(":")
    number = rest.split(":", 1)[0]
    kind = _LOOSE_PREFIX.get(prefix.lower())
    return (kind, int(number), None) if sep and kind and number.isascii() and number.isdigit() else None


def decode(row: sqlite3.Row | dict[str, Any]) -> dict[str, Any]:
    item = dict(row)
    for key in JSON_LIST_COLUMNS:
        if isinstance(item.get(key), str):
            try:
                item[key] = json.loads(item[key])
            except ValueError:
                item[key] = []
    return item


def json_items(raw: Any) -> list[Any]:
    """A JSON list column (or the list already decoded) as a list; [] for anything else."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw) if raw else []
        except ValueError:
            return []
    return raw if isinstance(raw, list) else []


def json_list(raw: Any) -> list[str]:
    """A JSON list column (or the list already decoded) as strings; [] for anything else, and
    blank or nested items dropped: model output lands in these columns."""
    return [str(i) for i in json_items(raw) if isinstance(i, str | int | float) and str(i).strip()]


def row_files(kind: str, row: sqlite3.Row | dict[str, Any]) -> list[str]:
    """The paths a row names (read, then modified or edited), each once."""
    return list(dict.fromkeys(path for column in KIND[kind].file_columns for path in json_list(row[column])))


def like_escape(text: str) -> str:
    """`text` inside a `LIKE ? ESCAPE '\\'` pattern, its own %, _ and \\ matching themselves."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def file_clause(file: str, columns: tuple[str, ...]) -> tuple[str, list[Any]]:
    """Rows whose JSON file lists (`columns`, e.g. "t.files_read") hold a path containing `file`."""
    ors = " OR ".join(f"EXISTS (SELECT 1 FROM json_each({c}) WHERE value LIKE ? ESCAPE '\\')" for c in columns)
    return f"({ors})", ["%" + like_escape(file) + "%"] * len(columns)


def filter_clauses(kind: str, *, alias: str = "t", project: str | None = None, type_: str | None = None,
                   session_id: str | None = None, since_ms: int | None = None, until_ms: int | None = None,
                   file: str | None = None) -> tuple[list[str], list[Any]] | None:
    """WHERE clauses and their parameters for rows of `kind` in `KIND[kind].source(alias)`, or
    None when the filters exclude the kind entirely (a type for a kind without one, a file for
    prompts). The same SQL serves lists, keyword search and the checks of the semantic side."""
    described = KIND[kind]
    if (type_ and not described.typed) or (file and not described.file_columns):
        return None
    clauses: list[str] = []
    params: list[Any] = []
    for column, value in ((described.project_column(alias), project), (f"{alias}.type", type_),
                          (f"{alias}.session_id", session_id)):
        if value:
            clauses.append(f"{column} = ?")
            params.append(value)
    if since_ms is not None:
        clauses.append(f"{alias}.created_at_epoch >= ?")
        params.append(int(since_ms))
    if until_ms is not None:
        clauses.append(f"{alias}.created_at_epoch < ?")
        params.append(int(until_ms))
    if file:
        clause, more = file_clause(file, tuple(f"{alias}.{c}" for c in described.file_columns))
        clauses.append(clause)
        params.extend(more)
    return clauses, params


def observation_rows(conn: sqlite3.Connection, *, session_id: str | None = None, project: str | None = None,
                     type_: str | None = None, since_ms: int | None = None, until_ms: int | None = None,
                     file: str | None = None, limit: int | None = None, newest_first: bool = False,
                     current: bool = False, other_than: str | None = None, stated: bool | None = None,
                     given: bool = False, columns: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Observations passing the filters, as decoded dicts: the SessionStart digest's read (the
    hook does without the records' module); memory_rows.list_observations gives them as records.
    `current`: only those no mark supersedes (store/marks.py); `other_than`: none of that session's;
    `stated`: only those a person or the agent stated (True), or none of them (False); `given`: only
    those memory may give unasked (none the write guard withheld: store/withheld.py); `columns`:
    only these (all by default): the digest shows a few, and decoding the JSON lists it does not
    show was half its time at 100k observations."""
    where = filter_clauses("observation", project=project, type_=type_, session_id=session_id, since_ms=since_ms,
                           until_ms=until_ms, file=file)
    if current and where is not None:
        where[0].append(not_superseded("t"))
    if stated is not None and where is not None:
        where[0].append(f"t.source {'' if stated else 'NOT '}IN ({', '.join(repr(s) for s in STATED_SOURCES)})")
    return _list(conn, "observation", _other_than(where, other_than, given), limit, newest_first, columns)


def summary_rows(conn: sqlite3.Connection, *, session_id: str | None = None, project: str | None = None,
                 since_ms: int | None = None, until_ms: int | None = None, file: str | None = None,
                 limit: int | None = None, newest_first: bool = False, other_than: str | None = None,
                 given: bool = False) -> list[dict[str, Any]]:
    """Summaries passing the filters (as `observation_rows`), as decoded dicts: the digest's read
    (memory_rows.list_summaries gives them as records)."""
    where = filter_clauses("summary", project=project, session_id=session_id, since_ms=since_ms, until_ms=until_ms,
                           file=file)
    return _list(conn, "summary", _other_than(where, other_than, given), limit, newest_first)


def _other_than(where: tuple[list[str], list[Any]] | None, session_id: str | None,
                given: bool = False) -> tuple[list[str], list[Any]] | None:
    if where is not None and session_id:
        where[0].append("t.session_id != ?")
        where[1].append(session_id)
    if where is not None and given:
        where[0].append(shown("t"))
    return where


def _list(conn: sqlite3.Connection, kind: str, where: tuple[list[str], list[Any]] | None, limit: int | None,
          newest_first: bool, columns: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    clauses, params = where or ([], [])
    order = "DESC" if newest_first else "ASC"
    selected = ", ".join(f"t.{c}" for c in columns) if columns else "t.*"
    sql = (f"SELECT {selected} FROM {KIND[kind].source()}" + (" WHERE " + " AND ".join(clauses) if clauses else "")
           + f" ORDER BY t.created_at_epoch {order}, t.id {order}")
    if limit:
        sql += f" LIMIT {int(limit)}"
    return [decode(r) for r in conn.execute(sql, params)]


def session_hosts(conn: sqlite3.Connection, session_ids: list[str]) -> dict[str, str]:
    """The agent each session ran in ("claude-code" | "codex"), by session id."""
    ids = list(dict.fromkeys(session_ids))
    if not ids:
        return {}
    return dict(conn.execute(f"SELECT claude_session_id, host FROM sdk_sessions"
                             f" WHERE claude_session_id IN ({','.join('?' * len(ids))})", ids).fetchall())
