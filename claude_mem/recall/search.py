"""One hybrid search over memory, used by the CLI, the MCP server and the viewer.

Keyword search (SQLite FTS5, BM25) and semantic search (the Chroma index) each return their best
candidates with every filter applied inside the search, not after it (SQL WHERE on the keyword
side; on the semantic side the same SQL run on the nearest documents' rows, see `_nearest`),
then the two are fused. Without an index, or when it fails, the keyword side answers alone and the result
says so. Importing this module is cheap: chromadb and the model load only when an Index is used.
On a Chroma server a team shares, teammates' documents come back from the semantic side too: they
are ranked with the rest, filtered on their metadata (recall/remote.py), returned as hits with an
`origin`, and the result's note says they were found by meaning only (issue 16).

How the fusion was chosen (bench/locomo.py, LoCoMo development split: 5 conversations, 1,210
facts, 760 questions of categories 1-4; recall@10 of the evidence turns, 0.785 is the ceiling
because a fifth of those turns have no fact). The first engineer's steps:

    FTS5 BM25 alone (quoted terms OR-ed, stopwords dropped)   0.573
    MiniLM cosine alone                                       0.596
    reciprocal rank fusion, k=60                              0.617
    0.7 x cosine + 0.3 x BM25/best BM25 (weighted blend)      0.632   <- chosen over RRF: the
        raw magnitudes say how confident each side is; ranks throw that away
    + a date named in the query boosts that day/month (+0.2)  0.648
    + session context (+0.5 x the best score in the session)  0.664   (fts with the same extras
                                                                        0.601, vector 0.635)

Weights were swept on the same data (cosine 0.5-0.8, date 0.05-0.5, session 0.1-0.8); the
optimum is flat, so round values were kept. Tried and dropped for no gain or a loss: z-score
or min-max normalisation, CombMNZ and peakedness-adaptive weights, raw or log BM25, pseudo-
relevance feedback (vector Rocchio, BM25 expansion terms), phrase and NEAR bonuses, boosts for
names in the query, smoothing over neighbouring facts, contextual (fact + neighbours)
embeddings, MMR and near-duplicate demotion, session top-k means instead of the maximum,
dropping project-frequent words from the embedded query, larger candidate pools (150: +0.002).
Even picking the best blend weight per question (an oracle) reaches only 0.696.

Second round (numbered; recall@10 of hybrid, the 0.664 above as the base, measured with the
stored vectors and FTS5 scores of the bench replayed offline, then confirmed with the bench):

     1. embedded query without its wh-word scaffold ("When did ... ?" -> "...")    0.660
     2. mean / max of the question's and its keywords-only embedding               0.661 / 0.664
     3. extra documents per row, max over them: fact + previous + next fact       0.666
        (in speaker order or in dialogue order), fact + next, clause-split facts  0.665
     4. a per-session document (all its facts): blended, or max, with the fact     0.666 / 0.663
        BM25 of the session as one FTS5 document, added                           <= 0.662
     5. question-scaffold words ("mention", "kind of", "likely", temporal words)
        dropped from the keyword query                                            0.664
     6. name handling: a bonus when the fact's subject/speaker is the person the
        question names (even read from the data's own speaker labels)             <= 0.664
        one sub-query per person for "X and Y" questions                          0.664
     7. per-session caps in the top 10 (diversity for list questions)             <= 0.656
        neighbours in embedding space (score diffusion over the candidate graph)  0.665
        a convex transform of cosine or BM25 before the blend                     <= 0.661
     8. query expansion: corpus words nearest to each query word in MiniLM space,
        OR-ed as a second BM25 query at a small weight                            0.671
        token-level late interaction (MaxSim over MiniLM token states)            0.669
     9. hubness: centring on the collection mean (0.669), + CSLS (a document's
        mean similarity to its 50 nearest documents subtracted, 0.675); removing
        the top principal components as well                                     <= 0.663
    10. centring on the candidate pool's own mean vector, per query, with the
        weights re-swept (cosine 0.85 / BM25 0.15, session 0.7, centring 0.9)    0.677  <- kept
        (recall@5 0.630, MRR 0.576; fts 0.604, vector 0.657 with the same
        pool-centred cosine; by category 1/2/3/4: 0.504/0.808/0.468/0.709)
    11. on top of 10: keyword-query embedding, neighbour or clause documents       <= 0.678
        a logistic-regression fusion of 12 of these signals (cross-validated
        leave-one-conversation-out; in-sample it does no better)                  0.666
    12. the query embedded with IDF-weighted pooling of its token states (rare
        words count more, stopwords 0.1-0.5 of a word), alone or with the plain  0.676-0.681
    13. date windows widened to the days after the named one: of the 80 questions
        naming a date, the evidence of 76 already lies on that day             (not run)
    14. (stop 8) a bonus for facts that name things (capitalised words, quotes,
        numbers); no session boost or per-session caps for list questions, even
        told which questions are lists (an oracle); a bonus from neighbouring
        dialogue turns; a second, static embedding (wordllama) mixed in; corpus-
        word expansion on top of 10                                            <= 0.678
    15. a relevance floor: rows with no query word and a plain cosine < 0.2 are
        dropped (`_relevant`), so off-topic queries answer nothing              0.678

Experiment 10 is kept: it needs no state beyond the candidates' stored vectors (fetched by id
with the candidates) and, unlike collection-wide CSLS (9), costs nothing at indexing time. It helped 4 of
the 5 conversations (+0.014 +- 0.006 per question). The rest are within noise or cost more than
they give. The 0.70 target was not reached: what is left is mostly list questions ("What books
has Tim read?", 0.51 of a 0.80 ceiling) whose evidence facts name the instances ("finished 'A
Dance with Dragons'") but neither the words nor, for MiniLM, the meaning of the question.

Speed (bench/scale.py: synthetic developer memory, 10k and 100k observations = 34k and 340k
documents; timings best-of-N or interleaved, as the machine is shared). Each step, kept:

    S1. a Chroma `where` scans metadata before the vector search: 21 ms for one project or one
        session at 34k documents, against 0.6 ms for the 100 nearest unfiltered. `_nearest`
        fetches 8x the documents wanted unfiltered and checks their rows with the keyword
        side's SQL (exact whenever enough pass), scores a filtered set of <= 100 rows from its
        stored vectors, and only then falls back to `where`. No clause for "every kind".
    S2. vectors by document id (`Index.vectors`), 5x cheaper than a `sqlite_id $in` filter;
        with the unfiltered query itself they come cheaper still (5.1 against 7.6 ms, 100k).
    S3. FTS5 ranks every matching row (~1 us each): one word in half the rows cost 40-80 ms at
        100k. The keyword query keeps the rarest words within a 2,000-row budget; with every
        word common it asks for rows holding all of them, and in hybrid mode skips even that
        when it matches more than the budget (`_fts_search`). Memories under 2,000 rows rank
        exactly as before (LoCoMo unchanged).
    S4. a keyword-only hit gets the cosine of its document holding most query words, not of
        all its documents (all lie beyond the nearest anyway; fetching them was ~1/3 of a query).
    S5. rows checked by id with NOT INDEXED: 1.5 against 4.6-6.9 ms for 960 ids (SQLite chose
        to walk the project's index).
    S6. tried and dropped: the semantic side in a thread while FTS5 runs (interleaved A/B at
        100k: p50 36.5 ms threaded, 33.6 ms not; the GIL and two busy cores).

At 100k observations a hybrid search now takes p50 24-31 ms, p95 35-44 ms (p50 59, p95 100 with
S1-S2 only; with Chroma filters, p50 97 and p95 223 ms already at 10k, on a busy machine).
"""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from claude_mem.push.terms import TOKEN as _TOKEN
from claude_mem.push.terms import fts_match, query_terms
from claude_mem.push.terms import stem as _stem
from claude_mem.recall import remote
from claude_mem.recall.index import VectorMatch, document_texts
from claude_mem.store.memories import SUMMARY_FIELDS
from claude_mem.store.reads import KINDS, cut, file_clause, json_list

if TYPE_CHECKING:
    from claude_mem.recall.index import Index

MODES = ("hybrid", "fts", "vector")

# Measured on LoCoMo dev (see the module docstring); the same weights serve every caller.
W_BM25 = 0.15  # share of BM25 in an observation's or summary's score (the rest is cosine)
# What was said (a prompt and Claude's reply) leans on its words more than what was noted:
# LoCoMo dev turns mode 0.775 at 0.15, 0.798 at 0.45 (0.5 and 0.4 within 0.003), facts unchanged.
W_BM25_SAID = 0.45
# A prompt's neighbours (the turns before and after it) lend it this share of their BM25: an
# answer is often worded by the question before it. Dev turns 0.791 -> 0.801 (0.3: 0.797, 1.0: 0.792).
NEIGHBOUR_SHARE = 0.6
NEIGHBOURS_OF = 10  # the best keyword-matched prompts whose neighbours join (dev turns: 0.803 at 5 or 10, 0.798 at 50)
TURN_SPREAD = 3  # observations a prompt brings forward that did not match themselves (_forward)
CENTRING = 0.9  # share of the candidate pool's mean vector removed before cosines (_set_cosines)
DATE_BOOST = 0.2  # a memory from a day/month the query names
SESSION_BOOST = 0.7  # times the best score among candidates of the same session
MIN_COSINE = 0.2  # a memory sharing no word with the query must be at least this close in meaning
POOL = 50  # candidates each search contributes to the fusion (at least 3 x limit)
RAW_FACTOR = 8  # unfiltered nearest documents fetched per document wanted, then filtered in SQLite (_nearest)
BRUTE_FORCE_ROWS = 100  # a filtered set this small is scored from its stored vectors (_nearest)
FTS_BUDGET = 2000  # rows the keyword query may match before its most common words are left out (_fts_search)
TITLE_CHARS = 120
SNIPPET_CHARS = 200


@dataclass
class Hit:
    kind: str                 # "observation" | "summary" | "prompt"
    id: int                   # sqlite row id in its table
    session_id: str
    project: str
    type: str | None          # observation type; None for others
    title: str                # observation title / summary request / prompt text (cut to ~120 chars)
    snippet: str              # short matching text (the fact or field that matched), <= ~200 chars
    created_at_epoch: int     # ms
    files: list[str]
    score: float
    # None for this installation's memory; a teammate's installation name for a memory found on a
    # shared Chroma server (`id` is then the row's id in their database: ref `obs:12@laptop-b`).
    origin: str | None = None


@dataclass
class SearchResult:
    hits: list[Hit]
    mode: str                 # "hybrid" | "fts" | "vector"
    note: str | None          # e.g. "semantic index unavailable (...): keyword results only"


# -- query handling ---------------------------------------------------------------------------

# English names on purpose (not `calendar`, which follows the locale and imports it).
_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                "november", "december")
_MONTHS = {name: i for i, name in enumerate(_MONTH_NAMES, 1)} | {name[:3]: i for i, name in enumerate(_MONTH_NAMES, 1)}
_MONTHS["sept"] = 9
_MON = "(" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d\d)"
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MON},?\s*{_YEAR}\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MON}\s+{_DAY},?\s*{_YEAR}\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_MON},?\s+(?:of\s+)?{_YEAR}\b", re.I)
_MONTH_DAY = re.compile(rf"\b{_MON}\s+{_DAY}\b(?!\s*,?\s*\d)", re.I)
_DAY_MONTH = re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MON}\b(?!\s*,?\s*\d)", re.I)


def date_windows(text: str) -> list[tuple[int, int]]:
    """Calendar days and months named in the text, as [start, end) epoch-ms windows in local
    time ("on 8 May, 2023", "May 8 2023", "2023-05-08", "in November 2022"). A day without a
    year borrows the year of another date in the same text ("between August 11 and August 15
    2023"); alone it is ignored rather than guessed."""
    spans: list[tuple[dt.date, dt.date]] = []
    rest = text or ""

    def take(pattern: re.Pattern[str], build: Any) -> None:
        nonlocal rest
        for match in pattern.finditer(rest):
            try:
                spans.append(build(match))
            except (ValueError, KeyError):
                pass
        rest = pattern.sub(" ", rest)

    def day(y: int, m: int, d: int) -> tuple[dt.date, dt.date]:
        start = dt.date(y, m, d)
        return start, start + dt.timedelta(days=1)

    def month(y: int, m: int) -> tuple[dt.date, dt.date]:
        return dt.date(y, m, 1), dt.date(y + (m == 12), m % 12 + 1, 1)

    take(_ISO, lambda m: day(int(m[1]), int(m[2]), int(m[3])))
    take(_DAY_MONTH_YEAR, lambda m: day(int(m[3]), _MONTHS[m[2].lower()], int(m[1])))
    take(_MONTH_DAY_YEAR, lambda m: day(int(m[3]), _MONTHS[m[1].lower()], int(m[2])))
    take(_MONTH_YEAR, lambda m: month(int(m[2]), _MONTHS[m[1].lower()]))
    years = {start.year for start, _ in spans}
    if len(years) == 1:
        year = years.pop()
        take(_MONTH_DAY, lambda m: day(year, _MONTHS[m[1].lower()], int(m[2])))
        take(_DAY_MONTH, lambda m: day(year, _MONTHS[m[2].lower()], int(m[1])))
    days = sorted(s for s in spans if (s[1] - s[0]).days == 1)
    if len(days) == 2 and re.search(r"\b(between|from)\b", text or "", re.I):
        spans.append((days[0][0], days[1][1]))  # "between A and B": the whole range
    return [(_local_ms(a), _local_ms(b)) for a, b in spans]


def _local_ms(day: dt.date) -> int:
    return int(time.mktime((day.year, day.month, day.day, 0, 0, 0, 0, 0, -1)) * 1000)


# -- the two searches -------------------------------------------------------------------------

@dataclass
class _Candidate:
    kind: str
    id: int
    bm25: float = 0.0
    cosine: float | None = None  # around the pool's centre (_set_cosines): for ranking
    raw_cosine: float | None = None  # plain: for the relevance floor (MIN_COSINE)
    doc_id: str = ""  # the best matching document (vector side)
    row: dict[str, Any] = field(default_factory=dict)
    remote: remote.RemoteRow | None = None  # a teammate's memory: its row is made from its documents
    neighbour_bm25: float = 0.0  # the best BM25 of the prompts before and after this one (prompts only)


@dataclass(frozen=True)
class _Filters:
    project: str | None
    type_: str | None
    session_id: str | None
    since_ms: int | None
    until_ms: int | None
    file: str | None


_FILE_COLUMNS = {"observation": ("files_read", "files_modified"), "summary": ("files_read", "files_edited"), "prompt": ()}


def _sql_filters(kind: str, f: _Filters, alias: str) -> tuple[list[str], list[Any]] | None:
    """WHERE clauses for one kind, or None when the filters exclude the kind entirely."""
    if f.type_ and kind != "observation":
        return None  # only observations have a type
    if f.file and not _FILE_COLUMNS[kind]:
        return None  # prompts name no files
    clauses: list[str] = []
    params: list[Any] = []
    project_col = "s.project" if kind == "prompt" else f"{alias}.project"
    for column, value in ((project_col, f.project), (f"{alias}.type", f.type_), (f"{alias}.session_id", f.session_id)):
        if value:
            clauses.append(f"{column} = ?")
            params.append(value)
    if f.since_ms is not None:
        clauses.append(f"{alias}.created_at_epoch >= ?")
        params.append(int(f.since_ms))
    if f.until_ms is not None:
        clauses.append(f"{alias}.created_at_epoch < ?")
        params.append(int(f.until_ms))
    if f.file:
        clause, more = file_clause(f.file, tuple(f"{alias}.{c}" for c in _FILE_COLUMNS[kind]))
        clauses.append(clause)
        params.extend(more)
    return clauses, params


_FTS_SQL = {
    "observation": "SELECT t.id, -bm25(observations_fts) AS score FROM observations_fts"
                   " JOIN observations t ON t.id = observations_fts.rowid WHERE observations_fts MATCH ?",
    "summary": "SELECT t.id, -bm25(session_summaries_fts) AS score FROM session_summaries_fts"
               " JOIN session_summaries t ON t.id = session_summaries_fts.rowid WHERE session_summaries_fts MATCH ?",
    "prompt": "SELECT t.id, -bm25(user_prompts_fts) AS score FROM user_prompts_fts"
              " JOIN user_prompts t ON t.id = user_prompts_fts.rowid"
              " LEFT JOIN sdk_sessions s ON s.claude_session_id = t.session_id WHERE user_prompts_fts MATCH ?",
}


# What `_sql_filters` clauses (alias t; s for a prompt's session, which holds its project) apply to.
_FROM = {
    "observation": "observations t",
    "summary": "session_summaries t",
    "prompt": "user_prompts t LEFT JOIN sdk_sessions s ON s.claude_session_id = t.session_id",
}
# The same, for checking rows by id: NOT INDEXED keeps SQLite on rowid lookups, where it would
# otherwise walk the whole project through its index (1.5 against 4.6-6.9 ms for 960 ids at
# 100k observations).
_FROM_BY_ID = {kind: sql.replace(" t", " t NOT INDEXED", 1) for kind, sql in _FROM.items()}
# The columns `index.document_texts` needs to name a row's documents.
_TEXT_COLUMNS = {
    "observation": "t.id, t.title, t.subtitle, t.narrative, t.facts",
    "summary": "t.id, " + ", ".join(f"t.{name}" for name in SUMMARY_FIELDS),
    "prompt": "t.id, t.prompt_text, t.reply_text",
}


_FTS_TABLE = {"observation": "observations_fts", "summary": "session_summaries_fts", "prompt": "user_prompts_fts"}


def _fts_search(conn: sqlite3.Connection, terms: list[str], kinds: tuple[str, ...], f: _Filters,
                pool: int, *, alone: bool = True) -> dict[tuple[str, int], float]:
    """The `pool` best keyword matches per kind. `alone` says no semantic side will rank what
    keywords cannot tell apart (see below)."""
    if not terms:
        return {}
    found: dict[tuple[str, int], float] = {}
    for kind in kinds:
        where = _sql_filters(kind, f, "t")
        if where is None:
            continue
        clauses, params = where
        sql = _FTS_SQL[kind] + "".join(f" AND {c}" for c in clauses) + " ORDER BY score DESC LIMIT ?"
        rare, common = _split_by_frequency(conn, kind, terms)
        if rare:
            match = fts_match(rare)
        else:
            # Every word common: the rows holding all of them. Rows holding only some would mean
            # ranking most of the table (60-80 ms at 100k) for weak matches. When even the rows
            # holding all of them are too many to rank quickly (a pasted error message found in
            # thousands of rows: 15-18 ms), keywords do not tell them apart, and the semantic
            # side, when there is one, ranks them alone.
            match = " AND ".join(fts_match([t]) for t in common)
            if not alone and _count(conn, kind, match) > FTS_BUDGET:
                continue
        for row_id, score in conn.execute(sql, [match, *params, pool]):
            found[(kind, int(row_id))] = float(score)
    return found


def _split_by_frequency(conn: sqlite3.Connection, kind: str, terms: list[str]) -> tuple[list[str], list[str]]:
    """(rare, common): the rarest query words whose matches add up to at most FTS_BUDGET rows of
    this kind, and the others.

    FTS5 computes bm25() for every row that matches, ~1 us a row: a query OR-ing one word found
    in half the rows ("tests", "fixed", "configuration" in a project's memory) ranks them all,
    40-80 ms at 100k observations (bench/scale.py), against 0.3 ms for the rare words alone.
    Such words weigh little in BM25 (IDF ln 1.8 at half the rows, against ln 700 for a word in
    150 rows) and the semantic side still sees them, so the keyword query keeps the rarest words
    that fit the budget. Counting stops at FTS_BUDGET + 1 rows (~0.2 ms a word), and is skipped
    while the table holds no more rows than the budget: small memories rank exactly as before.
    """
    table = _FTS_TABLE[kind]
    largest = conn.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0] or 0
    if largest <= FTS_BUDGET:
        return list(terms), []
    counts = {term: _count(conn, kind, fts_match([term])) for term in terms}
    rare: list[str] = []
    used = 0
    for term in sorted(terms, key=lambda t: counts[t]):
        if used + counts[term] > FTS_BUDGET:
            break
        rare.append(term)
        used += counts[term]
    return [t for t in terms if t in rare], [t for t in terms if t not in rare]


def _count(conn: sqlite3.Connection, kind: str, match: str) -> int:
    """Rows matching, counted up to FTS_BUDGET + 1 (that much is known in ~0.2 ms)."""
    table = _FTS_TABLE[kind]
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {table} WHERE {table} MATCH ? LIMIT ?)"
    return int(conn.execute(sql, (match, FTS_BUDGET + 1)).fetchone()[0])


def _matching_ids(conn: sqlite3.Connection, kind: str, f: _Filters) -> list[int] | None:
    """Row ids passing the filters, when a filter cannot be said in Chroma's `where` (a file
    path is matched as a substring of the stored lists); None when no such filter is set."""
    if not f.file:
        return None
    where = _sql_filters(kind, f, "t")
    if where is None:
        return []
    clauses, params = where
    sql = f"SELECT t.id FROM {_FROM[kind]} WHERE " + " AND ".join(clauses)
    return [r[0] for r in conn.execute(sql, params)]


def _vector_where(conn: sqlite3.Connection, kinds: tuple[str, ...], f: _Filters) -> dict[str, Any] | None:
    """The same filters as a Chroma `where` ({} for none); None when they exclude everything."""
    per_kind: list[dict[str, Any]] = []
    for kind in kinds:
        if _sql_filters(kind, f, "t") is None:
            continue
        ids = _matching_ids(conn, kind, f)
        if ids is None:
            per_kind.append({"kind": kind})
        elif ids:
            per_kind.append({"$and": [{"kind": kind}, {"sqlite_id": {"$in": ids}}]})
    if not per_kind:
        return None
    clauses: list[dict[str, Any]] = []
    if len(per_kind) < len(KINDS) or any(set(clause) != {"kind"} for clause in per_kind):
        # Every kind wanted, unfiltered by file: no clause at all (each clause costs, see _nearest).
        clauses.append(per_kind[0] if len(per_kind) == 1 else {"$or": per_kind})
    for key, value in (("project", f.project), ("type", f.type_), ("session_id", f.session_id)):
        if value:
            clauses.append({key: value})
    if f.since_ms is not None:
        clauses.append({"created_at_ms": {"$gte": int(f.since_ms)}})
    if f.until_ms is not None:
        clauses.append({"created_at_ms": {"$lt": int(f.until_ms)}})
    return clauses[0] if len(clauses) == 1 else {"$and": clauses} if clauses else {}


# -- the one function -------------------------------------------------------------------------

def search(conn: sqlite3.Connection, query: str, *, index: Index | None = None, project: str | None = None,
           type_: str | None = None, session_id: str | None = None, since_ms: int | None = None,
           until_ms: int | None = None, file: str | None = None,
           kinds: tuple[str, ...] = KINDS, limit: int = 20,
           mode: str = "hybrid", exclude: Iterable[tuple[str, int]] = ()) -> SearchResult:
    """Search memory. `mode` asks for "hybrid" (default), "fts" (keywords only) or "vector"
    (meaning only); the result's `mode` says what was actually used, and `note` why it differs.
    `exclude` names rows ((kind, id)) that are neither hits nor evidence for their turn (the MCP
    server's prompt being answered)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown kinds {unknown}: expected some of {', '.join(KINDS)}")
    kinds = tuple(dict.fromkeys(kinds))
    limit = max(0, min(int(limit), 500))
    text = (query or "").strip()
    terms = query_terms(text)
    if not limit or not kinds or not text:
        return SearchResult([], mode if index is not None else "fts", "empty query" if not text else None)
    filters = _Filters(project or None, type_ or None, session_id or None, since_ms, until_ms, file or None)
    excluded = {(str(kind), int(row_id)) for kind, row_id in exclude}
    pool = max(POOL, limit * 3)

    note: str | None = None
    used = mode
    candidates: dict[tuple[str, int], _Candidate] = {}
    want = pool * 2  # nearest documents: several per observation (main text and each fact)
    if mode in ("hybrid", "fts") or index is None:
        alone = mode == "fts" or index is None
        for key, score in _fts_search(conn, terms, kinds, filters, pool, alone=alone).items():
            if key not in excluded:
                candidates[key] = _Candidate(*key, bm25=score)
        _load_rows(conn, candidates)
        _add_neighbours(conn, candidates, filters, excluded)
    if mode in ("hybrid", "vector"):
        if index is None:
            used, note = "fts", "semantic index not configured: keyword results only"
        else:
            from claude_mem.recall.index import IndexUnavailable

            try:
                raw = _fetch_nearest(index, text, kinds, filters, want)
                _add_vector_candidates(conn, index, raw, terms, kinds, filters, want, candidates,
                                       fill_missing=mode == "hybrid")
            except IndexUnavailable as exc:
                used, note = "fts", f"{exc}: keyword results only"
                # Keywords alone now: searched again when the first pass counted on the other side.
                candidates = {key: _Candidate(*key, bm25=score)
                              for key, score in _fts_search(conn, terms, kinds, filters, pool).items() if key not in excluded}
                _load_rows(conn, candidates)
                _add_neighbours(conn, candidates, filters, excluded)
    for key in excluded:
        candidates.pop(key, None)
    if not candidates:
        return SearchResult([], used, note)

    _load_rows(conn, candidates)
    windows = date_windows(text)
    scores = _fuse(list(candidates.values()), used, windows)
    ranked = sorted(candidates.values(), key=lambda c: (-scores[(c.kind, c.id)], -c.row.get("created_at_epoch", 0), c.id))
    kept = [c for c in ranked if c.row and _relevant(c, windows)]
    hits = [_hit(c, score, terms) for c, score in _forward(conn, kept, scores, kinds, filters, limit)]
    if not hits and note is None:
        note = "no memory shares a word with the query or is close to it in meaning"
    origins = [h.origin for h in hits if h.origin]
    if origins:
        note = "; ".join(filter(None, [note, remote.note(origins)]))
    return SearchResult(hits, used, note)


def _relevant(c: _Candidate, windows: list[tuple[int, int]]) -> bool:
    """False for a memory that only came back because the nearest neighbours were asked for.

    A nearest-neighbour query always answers, however far the nearest are: without a floor,
    a search for something memory has never seen filled `limit` with unrelated memories, which
    an agent then pays tokens to read. MiniLM cosines of unrelated texts stay under ~0.2 (the
    best of 10 off-topic queries against each LoCoMo conversation: 0.07-0.21), while 95% of
    LoCoMo's evidence facts lie above 0.37 and recall@10 is unchanged with the floor at 0.2.
    A keyword match is always kept: it names something the query names; so is a memory from a
    day the query names.
    """
    if c.bm25 > 0 or c.raw_cosine is None or c.raw_cosine >= MIN_COSINE:
        return True
    return _in_windows(c, windows)


def _in_windows(c: _Candidate, windows: list[tuple[int, int]]) -> bool:
    created = int(c.row.get("created_at_epoch") or 0)
    return any(start <= created < end for start, end in windows)


@dataclass
class _Raw:
    """The nearest documents, unfiltered (see _nearest)."""

    embedding: Any
    matches: list[VectorMatch]  # nearest first
    asked: int  # how many were asked for: fewer came back only when the index has no more
    aliases: remote.Aliases = field(default_factory=remote.Aliases)  # ids of teammates' rows in this search


def _fetch_nearest(index: Index, text: str, kinds: tuple[str, ...], f: _Filters, want: int) -> _Raw:
    embedding = index.embed_query(text)
    # Unfiltered (all kinds, no filter), the nearest `want` are the answer: fetching 8x as many
    # costs 10x more (0.6 against 6.4 ms, 34k documents, best of 160), and their vectors come
    # with them. With filters, vectors are fetched once the filters have run.
    filtered = _has_filters(f) or set(kinds) != set(KINDS)
    n = want * RAW_FACTOR if filtered else want
    aliases = remote.Aliases()
    matches = [aliases.local(m) for m in index.query_documents(embedding, n, with_embeddings=not filtered)]
    return _Raw(embedding, matches, n, aliases)


def _add_vector_candidates(conn: sqlite3.Connection, index: Index, raw: _Raw, terms: list[str], kinds: tuple[str, ...],
                           f: _Filters, want: int, candidates: dict[tuple[str, int], _Candidate], *, fill_missing: bool) -> None:
    embedding = raw.embedding
    matches = _nearest(conn, index, raw, kinds, f, want)
    reached = {(m.kind, m.sqlite_id) for m in matches}
    for key in reached:
        candidates.setdefault(key, _Candidate(*key))
    for m in matches:
        if m.origin is not None:  # a teammate's memory: what it is comes with its documents
            cand = candidates[(m.kind, m.sqlite_id)]
            if cand.remote is None:
                cand.remote = remote.RemoteRow.of(m)
                cand.row = cand.remote.row
            cand.remote.texts[m.doc_id] = m.origin.text
    owners = {m.doc_id: (m.kind, m.sqlite_id) for m in matches}
    if fill_missing:
        # Keyword hits the nearest-neighbour query did not reach still need a cosine, or the
        # blend would treat "not in the top N" as "unrelated". Each gets that of its document
        # holding the most query words (the one keyword search matched), named from the SQLite
        # row and fetched by id. All of a row's documents would be exact, but they all lie beyond
        # the nearest `want` anyway, and fetching every one (~4 an observation, 6 a summary) was
        # a third of a hybrid query at 100k observations (bench/scale.py).
        missing = {key: c for key, c in candidates.items() if key not in reached}
        _load_rows(conn, missing)
        stems = [_stem(t) for t in terms]
        for c in missing.values():
            docs = document_texts(c.kind, c.row) if c.row else []
            if docs:
                best = max(docs, key=lambda d: sum(stem in d[1].lower() for stem in stems))  # first (main) on ties
                owners[best[0]] = (c.kind, c.id)
    # The stored vectors of every candidate document, for the centring in _set_cosines.
    known = {m.doc_id: m.embedding for m in matches if m.embedding is not None}
    known.update(index.vectors([doc_id for doc_id in owners if doc_id not in known]))
    _set_cosines([VectorMatch(*owners[doc_id], 0.0, doc_id, vector) for doc_id, vector in known.items()],
                 embedding, candidates)


def _nearest(conn: sqlite3.Connection, index: Index, raw: _Raw, kinds: tuple[str, ...], f: _Filters,
             want: int) -> list[VectorMatch]:
    """The `want` documents nearest to the query among those passing the filters.

    Chroma applies a `where` by scanning its metadata before the vector search, and that costs
    more than everything else in a search: on a 34k-document index, 21 ms (best of 15) for one
    project or one session against 0.6 ms for no filter and 2.3 ms for the 800 nearest
    unfiltered. So the nearest RAW_FACTOR x `want` documents are fetched unfiltered and the
    filters are applied to their rows in SQLite (the same SQL as the keyword side). That is
    exact, not a post-filter, whenever enough of them pass: the nearest passing documents are
    then all among those fetched. When too few pass (a selective filter: a session, a small
    project, a date range), a filtered set of at most BRUTE_FORCE_ROWS rows is scored directly
    from its stored vectors, and anything larger falls back to Chroma's `where`.
    """
    embedding = raw.embedding
    kept: list[VectorMatch] = []
    step = 2 * want  # the nearest pass first when the query is about the filtered project: stop early
    for start in range(0, len(raw.matches), step):
        kept.extend(_passing(conn, raw.matches[start:start + step], kinds, f))
        if len(kept) >= want:
            break
    if len(kept) >= min(want, POOL) or len(raw.matches) < raw.asked:
        return kept[:want]
    # Teammates' documents have no rows here: those among the nearest that passed are kept.
    theirs = [m for m in kept if m.origin is not None]
    rows = _filtered_rows(conn, kinds, f, BRUTE_FORCE_ROWS)
    if rows is not None:
        owners = {doc_id: (kind, int(row["id"])) for kind, row in rows for doc_id, _, _ in document_texts(kind, row)}
        scored = [VectorMatch(*owners[doc_id], 1.0 - float(vector @ embedding), doc_id, vector)
                  for doc_id, vector in index.vectors(list(owners)).items()]
        return sorted(scored + theirs, key=lambda m: m.distance)[:want]
    where = _vector_where(conn, kinds, f)
    if where is None:
        return theirs[:want]
    found = [raw.aliases.local(m) for m in index.query_documents(embedding, want, where or None)]
    return [m for m in found if m.origin is None or remote.passes(m.origin.metadata, m.kind, f)]


def _has_filters(f: _Filters) -> bool:
    return bool(f.project or f.type_ or f.session_id or f.file) or f.since_ms is not None or f.until_ms is not None


def _passing(conn: sqlite3.Connection, matches: list[VectorMatch], kinds: tuple[str, ...], f: _Filters) -> list[VectorMatch]:
    """The matches whose rows are of the wanted kinds and pass the filters, in order (a
    teammate's, by its metadata)."""
    wanted = [m for m in matches if m.kind in kinds]
    if not _has_filters(f):
        return wanted
    ok: set[tuple[str, int]] = set()
    for kind in kinds:
        where = _sql_filters(kind, f, "t")
        ids = sorted({m.sqlite_id for m in wanted if m.kind == kind and m.origin is None})
        if where is None or not ids:
            continue
        clauses, params = where
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            sql = (f"SELECT t.id FROM {_FROM_BY_ID[kind]} WHERE t.id IN ({','.join('?' * len(chunk))})"
                   + "".join(f" AND {c}" for c in clauses))
            ok.update((kind, int(r[0])) for r in conn.execute(sql, [*chunk, *params]))
    return [m for m in wanted if ((m.kind, m.sqlite_id) in ok if m.origin is None
                                  else remote.passes(m.origin.metadata, m.kind, f))]


def _filtered_rows(conn: sqlite3.Connection, kinds: tuple[str, ...], f: _Filters,
                   limit: int) -> list[tuple[str, dict[str, Any]]] | None:
    """The rows passing the filters (the columns that name their documents), None if more than `limit`."""
    out: list[tuple[str, dict[str, Any]]] = []
    for kind in kinds:
        where = _sql_filters(kind, f, "t")
        if where is None:
            continue
        clauses, params = where
        sql = (f"SELECT {_TEXT_COLUMNS[kind]} FROM {_FROM[kind]}" + (" WHERE " + " AND ".join(clauses) if clauses else "")
               + " LIMIT ?")
        out.extend((kind, dict(r)) for r in conn.execute(sql, [*params, limit + 1 - len(out)]))
        if len(out) > limit:
            return None
    return out


def _set_cosines(matches: list[VectorMatch], query: Any, candidates: dict[tuple[str, int], _Candidate]) -> None:
    """Each candidate's cosine: that of its best document, measured around the pool's centre.

    Every memory of one person (or project) shares a large common direction (names, tone, the
    template the worker writes in), so raw cosines are all high and differ little. Subtracting
    CENTRING x the mean vector of the candidate documents, from them and from the query, leaves
    what sets one candidate apart from the others (the "common component" removal of Arora et
    al. / Mu and Viswanath, done per query). Measured on LoCoMo dev: recall@10 0.664 -> 0.678
    with the weights below (experiment 10 in the module docstring); the mean of the whole
    collection instead of the pool did no better and would need state kept in step with it.
    """
    import numpy as np

    with_vectors = [m for m in matches if m.embedding is not None]
    if not with_vectors:
        return
    docs = np.stack([np.asarray(m.embedding, dtype=np.float32) for m in with_vectors])
    query = np.asarray(query, dtype=np.float32)
    raw = (docs @ query / max(float(np.linalg.norm(query)), 1e-9)).tolist()  # stored vectors are unit length
    centre = CENTRING * docs.mean(axis=0)
    docs = docs - centre
    docs /= np.clip(np.linalg.norm(docs, axis=1, keepdims=True), 1e-9, None)
    q = query - centre
    q /= max(float(np.linalg.norm(q)), 1e-9)
    cosines = docs @ q
    for match, cosine, plain in zip(with_vectors, cosines.tolist(), raw, strict=True):
        cand = candidates.get((match.kind, match.sqlite_id))
        if cand is None:
            continue
        if cand.cosine is None or cosine > cand.cosine:
            cand.cosine, cand.doc_id = cosine, match.doc_id
        cand.raw_cosine = plain if cand.raw_cosine is None else max(cand.raw_cosine, plain)


def _fuse(cands: list[_Candidate], mode: str, windows: list[tuple[int, int]]) -> dict[tuple[str, int], float]:
    keyword = {(c.kind, c.id): c.bm25 + NEIGHBOUR_SHARE * c.neighbour_bm25 for c in cands}
    top_bm25 = max(keyword.values(), default=0.0)
    base: dict[tuple[str, int], float] = {}
    for c in cands:
        # BM25 over its best: 0 for rows with no query word, 1 for the best keyword match.
        bm = keyword[(c.kind, c.id)] / top_bm25 if top_bm25 > 0 else 0.0
        cosine = c.cosine if c.cosine is not None else 0.0
        if mode == "hybrid":
            w_bm25 = W_BM25_SAID if c.kind == "prompt" else W_BM25
            score = (1 - w_bm25) * cosine + w_bm25 * bm
        elif mode == "vector":
            score = cosine
        else:
            score = bm
        if _in_windows(c, windows):
            score += DATE_BOOST
        base[(c.kind, c.id)] = score
    # Session context: a memory whose session holds other strong matches is more likely the
    # one meant (the same episode, seen from several facts). Measured +0.016 recall@10 on
    # LoCoMo; summing the session's matches instead of taking the best one did worse.
    best_in_session: dict[str, float] = {}
    for c in cands:
        sid = str(c.row.get("session_id") or "")
        best_in_session[sid] = max(best_in_session.get(sid, float("-inf")), base[(c.kind, c.id)])
    return {(c.kind, c.id): base[(c.kind, c.id)] + SESSION_BOOST * best_in_session[str(c.row.get("session_id") or "")]
            for c in cands}


def _add_neighbours(conn: sqlite3.Connection, candidates: dict[tuple[str, int], _Candidate], f: _Filters,
                    excluded: set[tuple[str, int]]) -> None:
    """The prompts just before and after the NEIGHBOURS_OF best keyword-matched prompts become
    candidates too, and learn the best BM25 of those neighbours (NEIGHBOUR_SHARE of it counts in
    _fuse); fewer extra rows keep the query cheap, and more did not find more on LoCoMo.

    In a conversation the answer ("I went hiking") is often the turn after the one worded like
    the question ("what did you do last weekend?"). Neighbours outside the keyword pool count as
    no match: their BM25 is below the pool's anyway."""
    best = sorted((c for c in candidates.values() if c.kind == "prompt" and c.bm25 > 0), key=lambda c: -c.bm25)
    matched = {c.id: c.bm25 for c in best[:NEIGHBOURS_OF]}
    where = _sql_filters("prompt", f, "t")
    if not matched or where is None:
        return
    clauses, params = where
    marks = ",".join("?" * len(matched))
    sql = ("SELECT p.id, t.id FROM user_prompts p JOIN user_prompts t ON t.session_id = p.session_id"
           " AND t.prompt_number IN (p.prompt_number - 1, p.prompt_number + 1)"
           f" LEFT JOIN sdk_sessions s ON s.claude_session_id = t.session_id WHERE p.id IN ({marks})"
           + "".join(f" AND {c}" for c in clauses))
    pairs = conn.execute(sql, [*matched, *params]).fetchall()
    for matched_id, neighbour_id in pairs:
        if ("prompt", int(neighbour_id)) in excluded:
            continue
        neighbour = candidates.setdefault(("prompt", int(neighbour_id)), _Candidate("prompt", int(neighbour_id)))
        neighbour.neighbour_bm25 = max(neighbour.neighbour_bm25, matched[matched_id])
    _load_rows(conn, candidates)


def _forward(conn: sqlite3.Connection, ranked: list[_Candidate], scores: dict[tuple[str, int], float],
             kinds: tuple[str, ...], f: _Filters, limit: int) -> list[tuple[_Candidate, float]]:
    """The first `limit` hits, a prompt standing for its turn: the turn's observations take its
    place (those that matched themselves first, then up to TURN_SPREAD others, in order), and
    the prompt is listed itself only when its turn has none passing the filters.

    A turn is one unit of recall (issue 14): what was said finds what was noted of it, and an
    agent gets observation ids it can open. Dev turns mode: 0.760 with prompts listed as rows of
    their own, 0.775 folded into their turns."""
    out: list[tuple[_Candidate, float]] = []
    seen: set[tuple[str, int]] = set()
    by_key = {(c.kind, c.id): c for c in ranked}
    where = _sql_filters("observation", f, "t") if "observation" in kinds else None
    for c in ranked:
        if len(out) >= limit:
            break
        key = (c.kind, c.id)
        if key in seen:
            continue
        seen.add(key)
        brought = _turn_observations(conn, c, where, by_key, scores) if c.kind == "prompt" and where is not None else []
        if not brought:
            out.append((c, scores[key]))
            continue
        for obs in brought:
            if len(out) < limit and (obs.kind, obs.id) not in seen:
                seen.add((obs.kind, obs.id))
                out.append((obs, max(scores[key], scores.get((obs.kind, obs.id), float("-inf")))))
    return out


def _turn_observations(conn: sqlite3.Connection, prompt: _Candidate, where: tuple[list[str], list[Any]],
                       by_key: dict[tuple[str, int], _Candidate], scores: dict[tuple[str, int], float]) -> list[_Candidate]:
    """The observations of a prompt's turn that pass the filters: candidates best first, then
    up to TURN_SPREAD others in the order they were stored (rows loaded)."""
    clauses, params = where
    sql = ("SELECT t.id FROM observations t WHERE t.session_id = ? AND t.prompt_number = ?"
           + "".join(f" AND {c}" for c in clauses) + " ORDER BY t.id")
    ids = [int(r[0]) for r in conn.execute(sql, [prompt.row["session_id"], prompt.row["prompt_number"], *params])]
    known = sorted((by_key[("observation", i)] for i in ids if ("observation", i) in by_key),
                   key=lambda o: -scores[(o.kind, o.id)])
    rest = {("observation", i): _Candidate("observation", i) for i in ids if ("observation", i) not in by_key}
    rest = dict(list(rest.items())[:TURN_SPREAD])
    _load_rows(conn, rest)
    return known + [o for o in rest.values() if o.row]


_ROWS_SQL = {
    "observation": "SELECT id, session_id, project, type, title, subtitle, narrative, facts, files_read, files_modified,"
                   " prompt_number, created_at_epoch FROM observations WHERE id IN ({marks})",
    "summary": "SELECT id, session_id, project, request, investigated, learned, completed, next_steps, notes, files_read,"
               " files_edited, prompt_number, created_at_epoch FROM session_summaries WHERE id IN ({marks})",
    "prompt": "SELECT p.id, p.session_id, s.project, p.prompt_text, p.reply_text, p.prompt_number, p.created_at_epoch"
              " FROM user_prompts p"
              " LEFT JOIN sdk_sessions s ON s.claude_session_id = p.session_id WHERE p.id IN ({marks})",
}


def _load_rows(conn: sqlite3.Connection, candidates: dict[tuple[str, int], _Candidate]) -> None:
    for kind in KINDS:
        ids = [c.id for c in candidates.values() if c.kind == kind and not c.row]
        for start in range(0, len(ids), 500):
            chunk = ids[start:start + 500]
            sql = _ROWS_SQL[kind].format(marks=",".join("?" * len(chunk)))
            for row in conn.execute(sql, chunk):
                candidates[(kind, int(row["id"]))].row = dict(row)


def _best_text(texts: list[str], terms: list[str]) -> str:
    wanted = {_stem(t) for t in terms}
    best, best_score = "", -1
    for text in texts:
        if not text or not text.strip():
            continue
        score = len(wanted & {_stem(w.lower()) for w in _TOKEN.findall(text)})
        if score > best_score:
            best, best_score = text, score
    return best


def _snippet(text: str, terms: list[str]) -> str:
    text = " ".join((text or "").split())
    if len(text) <= SNIPPET_CHARS:
        return text
    wanted = {_stem(t) for t in terms}
    first = next((m.start() for m in _TOKEN.finditer(text) if _stem(m.group().lower()) in wanted), 0)
    start = max(0, min(first - 40, len(text) - SNIPPET_CHARS))
    piece = text[start:start + SNIPPET_CHARS - 2].strip()
    return ("…" if start else "") + piece + "…"


def _document_text(c: _Candidate) -> str:
    """The text of the document the vector search matched, rebuilt from the SQLite row (or, for
    a teammate's memory, as it came from the server)."""
    if c.remote is not None:
        return c.remote.texts.get(c.doc_id, "")
    return next((text for doc_id, text, _ in document_texts(c.kind, c.row) if doc_id == c.doc_id), "")


def _hit(c: _Candidate, score: float, terms: list[str]) -> Hit:
    row = c.row
    if c.remote is not None:
        return Hit(kind=c.kind, id=c.remote.row_id, session_id=row["session_id"], project=row["project"], type=row["type"],
                   title=cut(row["title"], TITLE_CHARS), snippet=_snippet(_document_text(c), terms),
                   created_at_epoch=row["created_at_epoch"], files=row["files"], score=round(float(score), 6),
                   origin=c.remote.name)
    if c.kind == "observation":
        title = row["title"] or row["subtitle"] or ""
        facts = json_list(row["facts"])
        texts = [" ".join(p for p in (row["title"], row["subtitle"]) if p), row["narrative"] or "", *facts]
        files = list(dict.fromkeys(json_list(row["files_read"]) + json_list(row["files_modified"])))
        type_: str | None = row["type"]
    elif c.kind == "summary":
        texts = [row[name] or "" for name in SUMMARY_FIELDS]
        title = row["request"] or next((t for t in texts if t.strip()), "")
        files = list(dict.fromkeys(json_list(row["files_read"]) + json_list(row["files_edited"])))
        type_ = None
    else:
        title = row["prompt_text"] or ""
        texts = [title, row["reply_text"] or ""]
        files = []
        type_ = None
    matched = _document_text(c) if c.doc_id else ""
    # The vector side knows which document matched; keyword hits show the text with most query words.
    snippet = matched if matched and (c.bm25 <= 0 or not terms) else _best_text(texts, terms) or matched
    return Hit(kind=c.kind, id=c.id, session_id=row["session_id"] or "", project=row["project"] or "", type=type_,
               title=cut(title, TITLE_CHARS), snippet=_snippet(snippet, terms),
               created_at_epoch=int(row["created_at_epoch"] or 0), files=files, score=round(float(score), 6))
