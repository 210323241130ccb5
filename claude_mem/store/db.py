"""Open the database, set its pragmas, and migrate it.

Migrations are numbered SQL files (`migrations/NNNN_name.sql`), applied in order, each in its
own transaction together with its record in `schema_migrations`; `PRAGMA user_version` mirrors
the newest applied number, so an up-to-date database is recognised without reading any file.

On the hook path: standard library only.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections import namedtuple

from claude_mem.resources import resource_dir
from claude_mem.text.cjk import TOKENIZER_VERSION, spaced

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from typing import TypeVar

    T = TypeVar("T")


class SchemaTooNewError(RuntimeError):
    """The database is not one this claude-mem may write: a newer claude-mem's (or another
    tool's, see NpmDatabaseError). Nothing in it is changed."""


class NpmDatabaseError(SchemaTooNewError):
    """The database is the npm claude-mem's (thedotmack/claude-mem), found where ours belongs:
    both read CLAUDE_MEM_DATA_DIR and name their database claude-mem.db."""


# Its tables, and our `schema_migrations` absent (ours records migrations there, it in `schema_versions`).
PEER_TABLES = ("schema_versions", "sdk_sessions", "observations")


def is_npm_database(conn: sqlite3.Connection) -> bool:
    """Whether `conn` holds the npm claude-mem's schema, recognised by its tables (any file name)."""
    names = {r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?, ?, 'schema_migrations')", PEER_TABLES)}
    return names == set(PEER_TABLES)


def npm_database_at(path: str) -> bool:
    """Whether the file at `path` is the npm claude-mem's database. Opened immutable: no lock is
    taken and no -wal or -shm file is made beside another tool's database just to look at it."""
    if not os.path.isfile(path):
        return False
    from urllib.parse import quote

    try:
        conn = sqlite3.connect(f"file:{quote(os.path.abspath(path))}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error:
        return False
    try:
        return is_npm_database(conn)
    except sqlite3.Error:
        return False  # not a database at all
    finally:
        conn.close()


def npm_database_message(path: str) -> str:
    """One line: what the file is, and the fix."""
    return (f"{path} is the database of the npm claude-mem (thedotmack/claude-mem), not of this claude-mem;"
            f" set CLAUDE_MEM_DATA_DIR to another folder (or unset it), then `claude-mem import {path}`"
            " brings its memories over")


# A namedtuple, not a dataclass: this module is on the hook path, and dataclasses imports inspect.
class Migration(namedtuple("Migration", "version name path")):
    __slots__ = ()

    def statements(self) -> list[str]:
        with open(self.path, encoding="utf-8") as fh:
            text = fh.read()
        return split_statements(text)


def split_statements(sql: str) -> list[str]:
    """Split a script into statements; sqlite3.complete_statement knows about trigger bodies."""
    statements: list[str] = []
    buffer = ""
    for line in sql.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            statement = buffer.strip()
            if _has_code(statement):
                statements.append(statement)
            buffer = ""
    if _has_code(buffer):
        raise ValueError(f"incomplete SQL statement at end of migration: {buffer.strip()[:80]!r}")
    return statements


def _has_code(text: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in text.splitlines())


def migrations(directory: str | None = None) -> list[Migration]:
    directory = directory or resource_dir("migrations")
    found = []
    for entry in sorted(os.listdir(directory)):
        parsed = _migration_name(entry)
        if parsed:
            found.append(Migration(*parsed, os.path.join(directory, entry)))
    versions = [m.version for m in found]
    if versions != list(range(1, len(found) + 1)):
        raise RuntimeError(f"migrations in {directory} are not numbered 1..N: {versions}")
    return found


def _migration_name(entry: str) -> tuple[int, str] | None:
    """(NNNN, name) of `NNNN_name.sql`, None for any other file. String tests, not a regex:
    every hook connects, and compiling one costs it more than the rest of this module."""
    stem, sql, _ = entry.partition(".sql")
    number, sep, name = stem.partition("_")
    if (sql and not _ and sep and len(number) == 4 and number.isdigit() and number.isascii() and name
            and all(c.isdigit() or c == "_" or "a" <= c <= "z" for c in name)):
        return int(number), name
    return None


def latest_version(directory: str | None = None) -> int:
    return len(migrations(directory))


def connect(path: str, *, busy_timeout_ms: int = 5000, migrate: bool = True,
            migrations_dir: str | None = None) -> sqlite3.Connection:
    """Open (creating 0600 if needed) and migrate the database. Autocommit mode: callers open
    transactions themselves with `BEGIN IMMEDIATE` (see `transaction`)."""
    if not os.path.exists(path):
        # Created by us with 0600 so SQLite (which copies the mode to -wal/-shm) keeps it private.
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)
    conn = sqlite3.connect(path, timeout=busy_timeout_ms / 1000, isolation_level=None,
                           check_same_thread=False)
    conn.row_factory = sqlite3.Row
    # The keyword index's triggers call it (migration cjk_keywords): text/cjk.py.
    conn.create_function("cjk_spaced", 1, spaced, deterministic=True)
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    # Before anything writes (the WAL switch, migrations): the npm claude-mem's database sits where
    # ours belongs when CLAUDE_MEM_DATA_DIR points at its folder. Ours is never at version 0 once
    # migrated, so only a new or foreign file pays for the look at its tables.
    if conn.execute("PRAGMA user_version").fetchone()[0] == 0 and is_npm_database(conn):
        conn.close()
        raise NpmDatabaseError(npm_database_message(path))
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        _enable_wal(conn, busy_timeout_ms)
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    if migrate and apply_migrations(conn, migrations_dir):
        # Migrations write whole tables into the WAL (a rebuild copies every row): fold it back
        # into the database now rather than carry it (and its disk) until the next checkpoint.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    if migrate:
        rebuild_stale_keywords(conn)
    return conn


def _enable_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
    """Switch a new database to WAL. SQLite answers "database is locked" at once, without
    waiting for busy_timeout, when another connection is switching it too (or writes to it in
    rollback mode): two processes opening a new database together would fail. Retry instead."""
    deadline = time.monotonic() + busy_timeout_ms / 1000
    delay = 0.005
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def apply_migrations(conn: sqlite3.Connection, directory: str | None = None) -> list[str]:
    """Bring the schema up to date; returns the names applied. Safe against racing processes:
    each step re-reads the version after taking the write lock."""
    known = migrations(directory)
    latest = len(known)
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    if current > latest:
        raise SchemaTooNewError(
            f"the database is at schema version {current}, newer than this claude-mem knows "
            f"({latest}); upgrade claude-mem (pip install -U claude-mem)"
        )
    applied: list[str] = []
    # A migration that rebuilds a table (SQLite's way to change a CHECK) drops the old one: with
    # foreign keys on, the drop would delete every row referring to it (marks cascade). They are
    # off while a migration runs, which SQLite allows only outside a transaction, and checked
    # before it commits.
    foreign_keys = conn.execute("PRAGMA foreign_keys").fetchone()[0]
    if current < latest and foreign_keys:
        conn.execute("PRAGMA foreign_keys = OFF")
    try:
        while current < latest:
            applied_one = _apply_next(conn, known, latest)
            if applied_one is None:
                break
            applied.append(f"{applied_one.version:04d}_{applied_one.name}")
            current = applied_one.version
    finally:
        if foreign_keys:
            conn.execute("PRAGMA foreign_keys = ON")
    return applied


def _apply_next(conn: sqlite3.Connection, known: list[Migration], latest: int) -> Migration | None:
    """Apply the migration after the database's version, in one transaction; None when another
    process brought it up to date meanwhile."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = conn.execute("PRAGMA user_version").fetchone()[0]
        if current >= latest:
            conn.execute("COMMIT")
            return None
        migration = known[current]
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
        )
        # Compared, not required empty: a store that already held a dangling reference still upgrades.
        dangling = len(conn.execute("PRAGMA foreign_key_check").fetchall())
        for statement in migration.statements():
            conn.execute(statement)
        broken = conn.execute("PRAGMA foreign_key_check").fetchall()
        if len(broken) > dangling:
            raise RuntimeError(f"migration {migration.version:04d}_{migration.name} would leave "
                               f"{len(broken) - dangling} references dangling (one: {tuple(broken[-1])})")
        conn.execute(
            "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
            (migration.version, migration.name, now_iso()),
        )
        conn.execute(f"PRAGMA user_version = {migration.version}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return migration


# The keyword index's tables and the columns each indexes, as migration 0009 made them.
KEYWORD_COLUMNS = {
    "observations": ("title", "subtitle", "narrative", "facts", "concepts"),
    "session_summaries": ("request", "investigated", "learned", "completed", "next_steps", "notes"),
    "user_prompts": ("prompt_text", "reply_text"),
}


def rebuild_stale_keywords(conn: sqlite3.Connection) -> bool:
    """Rebuild the keyword index when it was built by another `cjk_spaced` than this code's
    (migration 0011_store_meta says why); True when it did. One small read when it was not."""
    version = TOKENIZER_VERSION
    stamp = "SELECT value FROM store_meta WHERE key = 'keyword_tokenizer'"
    try:
        if conn.execute(stamp).fetchone()[0] == str(version):
            return False
    except (sqlite3.OperationalError, TypeError):
        return False  # a schema from before the stamp (tests apply old migrations on purpose)
    with transaction(conn):
        if conn.execute(stamp).fetchone()[0] == str(version):
            return False  # another process rebuilt it meanwhile
        for table, columns in KEYWORD_COLUMNS.items():
            conn.execute(f"INSERT INTO {table}_fts ({table}_fts) VALUES ('delete-all')")
            conn.execute(f"INSERT INTO {table}_fts (rowid, {', '.join(columns)})"
                         f" SELECT id, {', '.join(f'cjk_spaced({c})' for c in columns)} FROM {table}")
        conn.execute("UPDATE store_meta SET value = ? WHERE key = 'keyword_tokenizer'", (str(version),))
    return True


class transaction:
    """`with transaction(conn):` runs a BEGIN IMMEDIATE ... COMMIT block (ROLLBACK on error).

    IMMEDIATE takes the write lock up front: a deferred transaction that reads and then writes
    can fail with SQLITE_BUSY at once in WAL mode, without waiting for busy_timeout.
    """

    BEGIN = "BEGIN IMMEDIATE"

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute(self.BEGIN)
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass


class savepoint:
    """`with savepoint(conn, "name"):` inside a transaction: what the block wrote is undone when
    it raises (the exception goes on), and the rest of the transaction kept."""

    def __init__(self, conn: sqlite3.Connection, name: str) -> None:
        self.conn = conn
        self.name = name

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute(f"SAVEPOINT {self.name}")
        return self.conn

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.conn.execute(f"ROLLBACK TO {self.name}")
        self.conn.execute(f"RELEASE {self.name}")


class snapshot(transaction):
    """`with snapshot(conn):` one read transaction, so that what is read in it agrees (a cursor
    and the rows listed with it). Deferred: it takes no write lock."""

    BEGIN = "BEGIN"


def query_only(conn: sqlite3.Connection) -> sqlite3.Connection:
    """The connection, made to refuse every write (SQLite's own `query_only`)."""
    conn.execute("PRAGMA query_only = ON")
    return conn


def schema_version(conn: sqlite3.Connection) -> int:
    """The newest migration applied (mirrored in `PRAGMA user_version`)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def quick_check(conn: sqlite3.Connection) -> str:
    """SQLite's `PRAGMA quick_check`: "ok", or the first problem it found."""
    return str(conn.execute("PRAGMA quick_check").fetchone()[0])


def chunks(items: Sequence[T], size: int = 500) -> Iterator[Sequence[T]]:
    """`items` in pieces of at most `size`: what one statement (SQLite's limit on bound
    parameters) or one Chroma call takes."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def now_ms() -> int:
    return int(time.time() * 1000)


def now_iso(epoch_ms: int | None = None) -> str:
    seconds = (epoch_ms if epoch_ms is not None else now_ms()) / 1000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{int(seconds * 1000) % 1000:03d}Z"


def data_version(conn: sqlite3.Connection) -> int:
    """Moves whenever another connection commits: a cheap "anything new?" between polls."""
    return int(conn.execute("PRAGMA data_version").fetchone()[0])
