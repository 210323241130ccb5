"""Marks (migrations 0010, 0015, 0017): "B supersedes A", "B duplicates A" and "A and B conflict",
with who said so (the observer model, a rule, a person, the agent through the MCP tool
`remember`), why, and when.

The words, the same everywhere: a *mark* is one such row; the older observation of an active
supersedes or duplicates mark is *superseded* (a duplicate too: its newest copy stands for it),
and one nothing supersedes is *current*. A superseded observation is never pushed and leaves the
digest and the memory file; search ranks it right after what superseded it; every view says so.
A *conflict* (issue 51) is two current observations with rival claims on one subject, neither
replacing the other (old_id the earlier): it supersedes nothing, and every reader shows both with
the conflict said, or neither, never one as fact (`conflicting`). Nothing is deleted, and a
person's undo keeps its row so that no rule marks the pair again. Readers ask about many ids in
one query: the hooks call `superseded_ids`, search `superseded_by`.

On the hook path: standard library only.
"""

from __future__ import annotations

import sqlite3
import time
from collections import namedtuple

from claude_mem.store.db import chunks
from claude_mem.text.clock import local_day

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    from typing import Any

RELATIONS = ("supersedes", "duplicates", "conflicts")
AUTHORS = ("model", "rule", "person", "agent")
ACTIVE = "undone_at_epoch IS NULL"
# An active mark that makes its older side no longer current: a conflict leaves both current.
REPLACING = "undone_at_epoch IS NULL AND relation != 'conflicts'"


def not_superseded(alias: str = "o") -> str:
    """SQL that holds for a current observation (in `alias`): no active mark supersedes it."""
    return f"NOT EXISTS (SELECT 1 FROM marks l WHERE l.old_id = {alias}.id AND l.{ACTIVE} AND l.relation != 'conflicts')"


# What superseded an observation: the newer one, how (supersedes | duplicates), who said so, and
# when the newer one was recorded (what views show: "superseded by obs:N, DATE").
SupersededBy = namedtuple("SupersededBy", "new_id relation author created_at_epoch")


def add(conn: sqlite3.Connection, old_id: int, new_id: int, relation: str, author: str, *, rule: str = "",
        reason: str = "", now_ms: int | None = None) -> bool:
    """Record that `new_id` supersedes (or duplicates) `old_id`; True when a mark was made.

    A pair already marked, or once undone by a person, is left as it is: a rule or the model never
    overrides a person. A person's own mark replaces whatever was there (and revives an undone one).
    """
    if relation not in RELATIONS or author not in AUTHORS or old_id == new_id:
        raise ValueError(f"not a mark: {relation!r} by {author!r} of {old_id} -> {new_id}")
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    if author == "person":
        cur = conn.execute(
            "INSERT INTO marks (old_id, new_id, relation, author, rule, reason, created_at_epoch)"
            " VALUES (?, ?, ?, 'person', ?, ?, ?) ON CONFLICT (old_id, new_id) DO UPDATE SET relation = excluded.relation,"
            " author = 'person', rule = excluded.rule, reason = excluded.reason, created_at_epoch = excluded.created_at_epoch,"
            " undone_at_epoch = NULL", (old_id, new_id, relation, rule, reason, now))
        return bool(cur.rowcount)
    cur = conn.execute(
        "INSERT INTO marks (old_id, new_id, relation, author, rule, reason, created_at_epoch)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (old_id, new_id) DO NOTHING",
        (old_id, new_id, relation, author, rule, reason[:300], now))
    return bool(cur.rowcount)


def undo(conn: sqlite3.Connection, old_id: int, new_id: int | None = None, *, now_ms: int | None = None,
         relation: str | None = None) -> list[int]:
    """A person takes back the marks on `old_id` (only the one by `new_id` when given, only of
    `relation` when given); returns the ids of the newer observations whose marks were undone."""
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    pair = " AND new_id = ?" if new_id is not None else ""
    params: list[Any] = [now, old_id] + ([new_id] if new_id is not None else []) + ([relation] if relation else [])
    kind = " AND relation = ?" if relation else ""
    rows = conn.execute(f"UPDATE marks SET undone_at_epoch = ? WHERE old_id = ?{pair}{kind} AND {ACTIVE} RETURNING new_id",
                        params).fetchall()
    return sorted(int(r[0]) for r in rows)


def marked(conn: sqlite3.Connection, old_id: int, new_id: int) -> bool:
    """Whether the pair has a mark, active or undone (a rule never marks it again either way)."""
    return conn.execute("SELECT 1 FROM marks WHERE old_id = ? AND new_id = ?", (old_id, new_id)).fetchone() is not None


def supersedes_any(conn: sqlite3.Connection, new_id: int) -> bool:
    """Whether `new_id` is the newer side of a "supersedes" mark (a rule's `changed` then stays quiet)."""
    return conn.execute("SELECT 1 FROM marks WHERE new_id = ? AND relation = 'supersedes' LIMIT 1", (new_id,)).fetchone() is not None


def superseding_ids(conn: sqlite3.Connection, project: str) -> set[int]:
    """The project's observations an active "supersedes" mark names as the newer side."""
    return {int(r[0]) for r in conn.execute(
        "SELECT DISTINCT m.new_id FROM marks m JOIN observations o ON o.id = m.new_id"
        f" WHERE o.project = ? AND m.relation = 'supersedes' AND m.{ACTIVE}", (project,))}


def superseded_ids(conn: sqlite3.Connection, ids: list[int]) -> set[int]:
    """Those of `ids` an active mark supersedes (one query per 500 ids)."""
    found: set[int] = set()
    for chunk in chunks(sorted({int(i) for i in ids})):
        found.update(r[0] for r in conn.execute(
            f"SELECT DISTINCT old_id FROM marks WHERE {REPLACING} AND old_id IN ({','.join('?' * len(chunk))})", chunk))
    return found


def superseded_by(conn: sqlite3.Connection, ids: list[int]) -> dict[int, list[SupersededBy]]:
    """For each of `ids` that is superseded, what superseded it (newest first)."""
    found: dict[int, list[SupersededBy]] = {}
    for chunk in chunks(sorted({int(i) for i in ids})):
        rows = conn.execute(
            "SELECT l.old_id, l.new_id, l.relation, l.author, o.created_at_epoch FROM marks l"
            f" JOIN observations o ON o.id = l.new_id WHERE l.{REPLACING} AND l.old_id IN ({','.join('?' * len(chunk))})"
            " ORDER BY o.created_at_epoch DESC, l.new_id DESC", chunk)
        for old_id, new_id, relation, author, created in rows:
            found.setdefault(int(old_id), []).append(SupersededBy(int(new_id), relation, author, int(created)))
    return found


def newest_heads(conn: sqlite3.Connection, ids: list[int], depth: int = 8) -> dict[int, list[int]]:
    """For each superseded id, the current observations at the end of its chains (A superseded by
    B, B by C: C). One query per step of the chains, at most `depth` steps."""
    direct = superseded_by(conn, ids)
    heads: dict[int, list[int]] = {old: [r.new_id for r in reps] for old, reps in direct.items()}
    for _ in range(depth):
        pending = {n for news in heads.values() for n in news}
        more = superseded_by(conn, list(pending))
        if not more:
            break
        heads = {old: list(dict.fromkeys(h for n in news for h in ([r.new_id for r in more[n]] if n in more else [n])))
                 for old, news in heads.items()}
    return heads


def conflicting(conn: sqlite3.Connection, ids: list[int]) -> dict[int, list[int]]:
    """For each of `ids` in an active conflict, the current observations it conflicts with (either
    side of the mark), oldest first. A rival that something superseded since is no rival any more."""
    found: dict[int, list[int]] = {}
    for chunk in chunks(sorted({int(i) for i in ids})):
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(
            "SELECT l.old_id, l.new_id FROM marks l"
            f" WHERE l.relation = 'conflicts' AND l.{ACTIVE} AND (l.old_id IN ({marks}) OR l.new_id IN ({marks}))"
            " ORDER BY l.old_id, l.new_id", [*chunk, *chunk]).fetchall()
        gone = superseded_ids(conn, [i for r in rows for i in r])
        wanted = set(chunk)
        for old_id, new_id in rows:
            if old_id in gone or new_id in gone:
                continue
            for this, other in ((old_id, new_id), (new_id, old_id)):
                if this in wanted and other not in found.get(this, []):
                    found.setdefault(int(this), []).append(int(other))
    return found


def conflict_text(others: list[int]) -> str:
    """What every view says of an observation in conflict: `conflicts with obs:40 (neither replaces the other)`."""
    return f"conflicts with {', '.join(f'obs:{o}' for o in others)} (neither replaces the other)" if others else ""


def repeats(conn: sqlite3.Connection, ids: list[int]) -> dict[int, tuple[int, int]]:
    """For each of `ids` that others fold under as copies of the same claim: (how many times the
    claim was recorded, counting this one; when it was first)."""
    found: dict[int, tuple[int, int]] = {}
    for chunk in chunks(sorted({int(i) for i in ids})):
        rows = conn.execute(
            "WITH RECURSIVE folded(root, id) AS ("
            f" SELECT new_id, old_id FROM marks WHERE relation = 'duplicates' AND {ACTIVE}"
            f" AND new_id IN ({','.join('?' * len(chunk))})"
            " UNION SELECT f.root, l.old_id FROM marks l JOIN folded f ON l.new_id = f.id"
            f" WHERE l.relation = 'duplicates' AND l.{ACTIVE})"
            " SELECT f.root, count(DISTINCT f.id), min(o.created_at_epoch) FROM folded f JOIN observations o ON o.id = f.id"
            " GROUP BY f.root", chunk)
        for root, count, first in rows:
            found[int(root)] = (int(count) + 1, int(first))
    return found


def superseded_text(reps: list[SupersededBy]) -> str:
    """What every view says of a superseded observation: `superseded by obs:12, 2026-03-03`."""
    parts = [f"obs:{r.new_id}, {local_day(r.created_at_epoch)}" + (" (the same claim again)" if r.relation == "duplicates" else "")
             for r in reps]
    return "superseded by " + "; ".join(parts) if parts else ""


def repeats_text(count: int, first_epoch_ms: int) -> str:
    """What the newest copy of a repeated claim says: `seen 3 times since 2026-01-08`."""
    return f"seen {count} times since {local_day(first_epoch_ms)}"


def list_marks(conn: sqlite3.Connection, *, project: str | None = None, ids: list[int] | None = None,
               include_undone: bool = False, limit: int | None = None) -> list[dict]:
    """Marks with both observations' titles and dates, newest mark first."""
    clauses = [] if include_undone else [f"l.{ACTIVE}"]
    params: list = []
    if project:
        clauses.append("n.project = ?")
        params.append(project)
    if ids:
        marks = ",".join("?" * len(ids))
        clauses.append(f"(l.old_id IN ({marks}) OR l.new_id IN ({marks}))")
        params += list(ids) * 2
    sql = ("SELECT l.*, o.title AS old_title, o.created_at_epoch AS old_epoch, n.title AS new_title,"
           " n.created_at_epoch AS new_epoch, n.project AS project FROM marks l"
           " JOIN observations o ON o.id = l.old_id JOIN observations n ON n.id = l.new_id"
           + (" WHERE " + " AND ".join(clauses) if clauses else "") + " ORDER BY l.created_at_epoch DESC, l.id DESC")
    if limit:
        sql += f" LIMIT {int(limit)}"
    return [dict(r) for r in conn.execute(sql, params)]


def notes(conn: sqlite3.Connection, ids: list[int]) -> dict[int, tuple[list[str], list[str], str]]:
    """What views say of each observation, by id: the refs of what superseded it ([] while
    current), the refs of its current rivals, and `mark`: "superseded by obs:12, 2026-03-03",
    "seen 3 times since 2026-01-08", "conflicts with obs:40 (neither replaces the other)", or "".
    A few queries for all the ids."""
    superseded = superseded_by(conn, ids)
    seen = repeats(conn, ids)
    rivals = conflicting(conn, ids)
    found: dict[int, tuple[list[str], list[str], str]] = {}
    for i in ids:
        reps = superseded.get(i, [])
        said = [superseded_text(reps)] if reps else []
        if i in seen:
            said.append(repeats_text(*seen[i]))
        if i in rivals:
            said.append(conflict_text(rivals[i]))
        found[i] = ([f"obs:{x.new_id}" for x in reps], [f"obs:{o}" for o in rivals.get(i, [])], "; ".join(said))
    return found


# --- marks in an export (store/transfer.py): observations named by session and content hash ---

MARK_FIELDS = ("relation", "author", "rule", "reason", "created_at_epoch", "undone_at_epoch")


def export_marks(conn: sqlite3.Connection, observation_ids: set[int]) -> list[dict]:
    """The marks between the exported observations, as export objects, oldest first."""
    rows = conn.execute(
        "SELECT l.*, o.session_id AS old_session, o.content_hash AS old_hash, n.session_id AS new_session,"
        " n.content_hash AS new_hash FROM marks l JOIN observations o ON o.id = l.old_id"
        " JOIN observations n ON n.id = l.new_id ORDER BY l.id")
    return [{"kind": "mark", "old": {"session_id": r["old_session"], "content_hash": r["old_hash"]},
             "new": {"session_id": r["new_session"], "content_hash": r["new_hash"]}, **{f: r[f] for f in MARK_FIELDS}}
            for r in rows if r["old_id"] in observation_ids and r["new_id"] in observation_ids]


def check_mark(obj: dict) -> dict:
    """A mark line with its defaults; raises ValueError naming the first problem."""
    unknown = sorted(set(obj) - {"kind", "old", "new", *MARK_FIELDS})
    if unknown:
        raise ValueError(f"mark: unknown field {unknown[0]!r}")
    for side in ("old", "new"):
        ref = obj.get(side)
        if not (isinstance(ref, dict) and set(ref) == {"session_id", "content_hash"}
                and all(isinstance(v, str) and v for v in ref.values())):
            raise ValueError(f"mark: {side!r} must name an observation as {{\"session_id\": ..., \"content_hash\": ...}}")
    mark = {"old": obj["old"], "new": obj["new"], "relation": obj.get("relation"), "author": obj.get("author"),
            "rule": obj.get("rule") or "", "reason": obj.get("reason") or "", "created_at_epoch": obj.get("created_at_epoch"),
            "undone_at_epoch": obj.get("undone_at_epoch")}
    if mark["relation"] not in RELATIONS or mark["author"] not in AUTHORS:
        raise ValueError(f"mark: relation must be one of {', '.join(RELATIONS)} and author one of {', '.join(AUTHORS)}")
    if not isinstance(mark["rule"], str) or not isinstance(mark["reason"], str):
        raise ValueError("mark: 'rule' and 'reason' must be strings")
    for name in ("created_at_epoch", "undone_at_epoch"):
        value = mark[name]
        if (value is None and name == "created_at_epoch") or (value is not None and (isinstance(value, bool)
                                                                                      or not isinstance(value, int) or value < 0)):
            raise ValueError(f"mark: {name!r} must be a whole number of milliseconds")
    return mark


def import_mark(conn: sqlite3.Connection, mark: dict) -> bool | None:
    """Add a checked mark unless its pair is marked here already (True when added); None when an
    observation it names is not in the database."""
    ids = []
    for side in ("old", "new"):
        row = conn.execute("SELECT id FROM observations WHERE session_id = ? AND content_hash = ?",
                           (mark[side]["session_id"], mark[side]["content_hash"])).fetchone()
        if row is None:
            return None
        ids.append(int(row[0]))
    if ids[0] == ids[1]:
        return False
    cur = conn.execute(
        "INSERT INTO marks (old_id, new_id, relation, author, rule, reason, created_at_epoch, undone_at_epoch)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (old_id, new_id) DO NOTHING",
        (*ids, *(mark[f] for f in MARK_FIELDS)))
    return bool(cur.rowcount)
