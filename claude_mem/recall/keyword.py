"""The keyword side of search: SQLite FTS5 (BM25) with the filters applied in its SQL, within a
row budget so common words do not make it rank most of the table (the statements: store/fts.py)."""

from __future__ import annotations

import sqlite3

from claude_mem.recall import tuning
from claude_mem.recall.candidates import Filters, sql_filters
from claude_mem.store import fts
from claude_mem.text.terms import fts_match

# How many rows match each word, kept between searches of a large memory (~0.2 ms a word a kind,
# a tenth of a search at 100k observations): (database, kind, match) -> (count, the table's
# largest rowid then). A count is reused while fewer than STALE_ROWS rows were added since, so
# it is off by at most that many rows against a budget of FTS_BUDGET: it only decides which
# words are rare enough to rank, never which rows match.
_COUNTS: dict[tuple[str, str, str], tuple[int, int]] = {}
STALE_ROWS = 100
MAX_COUNTS = 50_000


def fts_search(conn: sqlite3.Connection, terms: list[str], kinds: tuple[str, ...], f: Filters,
               pool: int, phrases: list[list[str]] | None = None, *, alone: bool = True) -> dict[tuple[str, int], float]:
    """The `pool` best keyword matches per kind. `alone` says no semantic side will rank what
    keywords cannot tell apart (see below); `phrases` are the query's paths (terms.path_phrases)."""
    if not terms:
        return {}
    found: dict[tuple[str, int], float] = {}
    database = _database(conn)
    for kind in kinds:
        where = sql_filters(kind, f, "t")
        if where is None:
            continue
        largest = fts.largest_rowid(conn, kind)
        rare, common = _split_by_frequency(conn, kind, terms, largest, database)
        for match in _matches(rare, common, phrases or []):
            # Every word common: when even the rows holding all of them are over budget, keywords
            # do not tell them apart and the semantic side ranks them alone.
            if not rare and not alone and _count(conn, kind, match, largest, database) > tuning.FTS_BUDGET:
                break  # (those holding a path are fewer than those holding its words: neither fits)
            best = fts.best_matches(conn, kind, match, where, pool)
            if best:
                found.update(((kind, row_id), score) for row_id, score in best)
                break
    return found


def _matches(rare: list[str], common: list[str], phrases: list[list[str]]) -> list[str]:
    """The match expressions to try in turn: any of the rare words; else every common word, a
    path's words as that path (a phrase: FTS5 ranks it by its own matches, where each common word
    alone makes bm25 read all its rows, docs/search-tuning.md "Paths as phrases"), then, when the
    path is written some other way in memory, its words anywhere. Nothing when no row holds any word."""
    if rare:
        return [fts_match(rare)]
    if not common:
        return []
    parts: list[str] = []
    left = list(common)
    for phrase in phrases:
        if any(t in phrase for t in left):
            parts.append('"' + " ".join(phrase) + '"')
            left = [t for t in left if t not in phrase]
    plain = " AND ".join(fts_match([t]) for t in common)
    return list(dict.fromkeys([" AND ".join(parts + [fts_match([t]) for t in left]), plain]))


def _split_by_frequency(conn: sqlite3.Connection, kind: str, terms: list[str], largest: int,
                        database: str) -> tuple[list[str], list[str]]:
    """(rare, common): the rarest query words whose matches add up to at most FTS_BUDGET rows of
    this kind (whose largest rowid is `largest`), and the others. FTS5 ranks every matching row
    (~1 us each), and a common word weighs little in BM25 anyway (docs/search-tuning.md, Speed).
    A word no row holds is in neither: as the only rare one it matched nothing, and hid the others."""
    if largest <= tuning.FTS_BUDGET:
        return list(terms), []
    counts = {term: _count(conn, kind, fts_match([term]), largest, database) for term in terms}
    rare: list[str] = []
    used = 0
    for term in sorted(terms, key=lambda t: counts[t]):
        if used + counts[term] > tuning.FTS_BUDGET:
            break
        if counts[term]:
            rare.append(term)
            used += counts[term]
    return [t for t in terms if t in rare], [t for t in terms if t not in rare and counts[t]]


def _count(conn: sqlite3.Connection, kind: str, match: str, largest: int, database: str) -> int:
    """Rows matching, counted up to FTS_BUDGET + 1 (that much is known in ~0.2 ms), or as counted
    by an earlier search when few rows were added since (`_COUNTS`)."""
    key = (database, kind, match)
    known = _COUNTS.get(key) if database else None
    if known is not None and 0 <= largest - known[1] < STALE_ROWS:
        return known[0]
    count = fts.count_matches(conn, kind, match, tuning.FTS_BUDGET + 1)
    if database:
        if len(_COUNTS) >= MAX_COUNTS:
            _COUNTS.clear()
        _COUNTS[key] = (count, largest)
    return count


def _database(conn: sqlite3.Connection) -> str:
    """The main database's file ("" in memory: nothing is kept for it); asked once per connection
    (the pragma costs ~0.2 ms, a search's every time)."""
    known = _FILES.get(id(conn))
    if known is not None and known[0] is conn:  # held here, so its id cannot be another's
        return known[1]
    if len(_FILES) >= 16:
        _FILES.clear()
    name = fts.database_file(conn)
    _FILES[id(conn)] = (conn, name)
    return name


_FILES: dict[int, tuple[sqlite3.Connection, str]] = {}  # a few connections (the service has one per search thread)
