"""What a stored observation is compared with: its project's older observations that are still
current and may be about the same thing, found through indexes in a bounded set. Those naming one
of its files (`store/observation_files.naming`, the one lookup of the file index: every rule but
`repeat` and the heuristic checks needs a shared file), and those whose titles hold every word of
its title but the numbers, or whose facts hold a command it ran (FTS5: copies of a claim, runs of
a command).
"""

from __future__ import annotations

import os
import sqlite3
from collections import OrderedDict

from claude_mem.marks.claims import Claim, claim
from claude_mem.store import marking, marks, observation_files
from claude_mem.text.terms import query_terms

FILE_CANDIDATES = 50  # the newest observations naming a file of the same base name, per name
FILE_NAMES = 8  # of its files' names (an observation of many files says little about each)
WORD_CANDIDATES = 30  # the newest matches of its words
TERMS = 16
DECISION_CANDIDATES = 200  # the newest decisions of the project, for a decision
CLAIMS_KEPT = 5000  # claims a run over many observations keeps, newest used: candidates are mostly recent


class Claims:
    """Claims of rows read once per run (bounded): a run over many observations meets the same
    candidates again and again."""

    def __init__(self, size: int = CLAIMS_KEPT) -> None:
        self.size = size
        self.kept: OrderedDict[int, Claim] = OrderedDict()

    def __call__(self, row: dict) -> Claim:
        found = self.kept.get(row["id"])
        if found is None:
            found = self.kept[row["id"]] = claim(row)
            if len(self.kept) > self.size:
                self.kept.popitem(last=False)
        else:
            self.kept.move_to_end(row["id"])
        return found


def _words_query(column: str, text: str) -> str | None:
    """FTS5: rows whose `column` holds every word of `text` but its numbers (quoted: no syntax gets through)."""
    words = [t for t in query_terms(text) if not any(c.isdigit() for c in t)][:TERMS]
    return f"{column} : (" + " AND ".join('"' + w.replace('"', '""') + '"' for w in words) + ")" if words else None


def candidates(conn: sqlite3.Connection, row: dict, claims: Claims | None = None,
               superseded: set[int] | frozenset[int] = frozenset()) -> list[Claim]:
    """The project's current observations recorded before `row` that may be about the same thing
    (`superseded`: more ids to treat as superseded, as a dry run has not written its marks)."""
    claims = claims or Claims()
    new = claims(row)
    ids: set[int] = set()
    named = sorted({os.path.basename(f.path) for f in new.files if os.path.basename(f.path)})[:FILE_NAMES]
    files = [f for f in new.files if os.path.basename(f.path) in named]
    before = (row["created_at_epoch"], row["id"])
    ids.update(r["id"] for r in observation_files.naming(conn, new.project, files, limit=FILE_CANDIDATES, before=before))
    queries = [_words_query("title", new.title), *(_words_query("facts", c.command) for c in new.checks[:3])]
    if new.type == "decision":  # a rival statement shares a subject, rarely a file or every word of a title
        ids.update(marking.newest_decisions(conn, new.project, DECISION_CANDIDATES))
    for query in filter(None, queries):
        ids.update(marking.newest_matching(conn, new.project, query, WORD_CANDIDATES))
    ids -= {new.id, *superseded}
    older = [r for r in marking.rows(conn, sorted(ids)) if (r["created_at_epoch"], r["id"]) < (row["created_at_epoch"], row["id"])]
    gone = marks.superseded_ids(conn, [r["id"] for r in older])
    return [claims(r) for r in older if r["id"] not in gone]
