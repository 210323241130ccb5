"""The semantic side of search: the documents nearest to the query (the Chroma index), filtered in
SQLite with the keyword side's SQL, and each candidate's cosine measured around the pool's centre,
from the vectors SQLite keeps beside Chroma's (index/vectors.py; an observation's facts too)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from claude_mem.index import vectors as stored_vectors
from claude_mem.index.documents import VectorMatch, document_texts, vector_texts
from claude_mem.recall import teammates, tuning
from claude_mem.recall.candidates import Candidate, Filters, has_filters, load_rows, sql_filters
from claude_mem.store import recall_rows
from claude_mem.store.reads import KINDS
from claude_mem.text.cjk import has_cjk
from claude_mem.text.terms import stem

if TYPE_CHECKING:
    from claude_mem.index.semantic_index import Index


T = TypeVar("T")

# What this side waits on (onnxruntime, Chroma) releases the GIL, so it runs here while the
# search's thread works in SQLite (docs/search-tuning.md, Speed).
_THREADS = ThreadPoolExecutor(max_workers=4, thread_name_prefix="claude-mem-semantic")


def _start(call: Callable[..., T], *args: Any) -> Future[T]:
    """`call(*args)` in a thread (tuning.OVERLAP), else run now; either way its result or error
    comes from `.result()`."""
    if tuning.OVERLAP:
        return _THREADS.submit(call, *args)
    done: Future[T] = Future()
    try:
        done.set_result(call(*args))
    except BaseException as exc:  # noqa: BLE001 - raised by .result(), as from a thread
        done.set_exception(exc)
    return done


@dataclass
class NearestDocuments:
    """The nearest documents, unfiltered (see `_nearest`)."""

    embedding: Any
    matches: list[VectorMatch]  # nearest first
    query_cjk: bool
    asked: int  # how many were asked for: fewer came back only when the index has no more
    space: str  # what the rows' vectors in SQLite must be kept under to be this index's (Index.space)
    aliases: teammates.Aliases = field(default_factory=teammates.Aliases)  # ids of teammates' rows in this search


class Pending:
    """The nearest documents on their way (`result()`), and the space their vectors in SQLite
    are kept under as soon as it is known (`space()`): the keyword candidates' cosines are read
    with it while the query is embedded and the index searched (`measure_ahead`)."""

    def __init__(self, space: Future[str], nearest: Future[NearestDocuments]) -> None:
        self._space, self._nearest = space, nearest

    def space(self) -> str:
        return self._space.result()

    def result(self) -> NearestDocuments:
        return self._nearest.result()


def start_nearest(index: Index, text: str, kinds: tuple[str, ...], f: Filters, want: int) -> Pending:
    """`fetch_nearest`, started: its result (or IndexUnavailable) comes from `.result()`, and
    the space it reads vectors in from `.space()`, first."""
    # Imported here first: the thread's first embedding imports numpy too, and the two threads
    # importing it at once left one with a half-initialised module (ImportError), in a process's
    # first search, while this thread read the keyword side's vectors.
    import numpy  # noqa: F401

    space: Future[str] = Future()

    def fetch() -> NearestDocuments:
        try:
            name = index.space()
        except BaseException as exc:
            space.set_exception(exc)
            raise
        space.set_result(name)
        return fetch_nearest(index, text, kinds, f, want, name)

    return Pending(space, _start(fetch))


def fetch_nearest(index: Index, text: str, kinds: tuple[str, ...], f: Filters, want: int, space: str) -> NearestDocuments:
    """The query's embedding and its nearest documents, unfiltered (raises IndexUnavailable)."""
    embedding = index.embed_query(text)
    # Unfiltered, the nearest `want` are the answer; with filters, RAW_FACTOR x as many are checked
    # in SQLite, and `_nearest` fetches more when too few pass. Their vectors are read from SQLite
    # after (half the cost of Chroma sending them along).
    filtered = has_filters(f) or set(kinds) != set(KINDS)
    n = want * tuning.RAW_FACTOR if filtered else want
    aliases = teammates.Aliases()
    matches = [aliases.local(m) for m in index.query_documents(embedding, n)]
    return NearestDocuments(embedding, matches, has_cjk(text), n, space, aliases)


@dataclass
class Ahead:
    """The keyword candidates' documents and vectors, read before the nearest documents came
    (`measure_ahead`): the observations' stored vectors, and the document holding most query
    words of each other candidate, which counts only if none of its documents is among the nearest."""

    read: set[int] = field(default_factory=set)  # observations whose stored vectors were looked for
    keys: list[str] = field(default_factory=list)  # those found, and their rows
    rows: list[int] = field(default_factory=list)
    found: Any = None  # their matrix, a vector a key
    looked: set[tuple[str, int]] = field(default_factory=set)  # candidates whose best document was looked for
    best: dict[str, tuple[str, int]] = field(default_factory=dict)  # that document -> its candidate
    vectors: dict[str, Any] = field(default_factory=dict)  # those documents' vectors


def measure_ahead(conn: sqlite3.Connection, index: Index, space: str, candidates: dict[tuple[str, int], Candidate],
                  terms: list[str]) -> Ahead:
    """What the hybrid search's keyword candidates need for their cosines, read while the search
    waits for the semantic side (the longer of the two at 100k: docs/search-tuning.md)."""
    read = {row_id for (kind, row_id), c in candidates.items() if kind == "observation" and c.remote is None}
    keys, rows, found = stored_vectors.matrix(conn, space, "observation", sorted(read))
    measured = {("observation", row_id) for row_id in rows}
    looked = {key: c for key, c in candidates.items() if key not in measured}
    best = _best_documents(conn, looked, terms)
    return Ahead(read, keys, rows, found, set(looked), best, _vectors(conn, index, space, list(best)))


def add_candidates(conn: sqlite3.Connection, index: Index, nearest: Pending, terms: list[str], kinds: tuple[str, ...],
                   f: Filters, want: int, candidates: dict[tuple[str, int], Candidate], *, fill_missing: bool,
                   read_ahead: bool = True) -> None:
    """The nearest documents passing the filters join `candidates`, and every candidate gets its
    cosine (`fill_missing`: keyword hits the nearest did not reach as well, their vectors read
    while the nearest are on their way unless not `read_ahead`)."""
    import numpy as np

    ahead = measure_ahead(conn, index, nearest.space(), candidates, terms) if fill_missing and read_ahead else Ahead()
    raw = nearest.result()
    matches = _nearest(conn, index, raw, kinds, f, want)
    reached = {(m.kind, m.sqlite_id) for m in matches}
    for key in reached:
        candidates.setdefault(key, Candidate(*key))
    for m in matches:
        if m.origin is not None:  # a teammate's memory: what it is comes with its documents
            cand = candidates[(m.kind, m.sqlite_id)]
            if cand.remote is None:
                cand.remote = teammates.RemoteRow.of(m)
                cand.row = cand.remote.row
            cand.remote.texts[m.doc_id] = m.origin.text
    owners = {m.doc_id: (m.kind, m.sqlite_id) for m in matches}
    # An observation is measured by every vector it has, its facts' included: a question about
    # one fact is nearer to that fact than to the whole observation (docs/search-tuning.md).
    local = [row_id for (kind, row_id), c in candidates.items() if kind == "observation" and c.remote is None
             and (fill_missing or (kind, row_id) in reached) and row_id not in ahead.read]
    more, rows, found = stored_vectors.matrix(conn, raw.space, "observation", local)
    keys = ahead.keys + more
    blocks = [found] if ahead.found is None else [ahead.found, found]
    owners.update(zip(keys, (("observation", row_id) for row_id in ahead.rows + rows), strict=True))
    if fill_missing:
        # Keyword hits with no vector yet still need a cosine, or the blend would read "not in
        # the top N" as "unrelated": that of their document holding most query words.
        measured = set(owners.values())
        missing = {key: c for key, c in candidates.items() if key not in measured}
        owners.update((doc_id, owner) for doc_id, owner in ahead.best.items() if owner in missing)
        owners.update(_best_documents(conn, {key: c for key, c in missing.items() if key not in ahead.looked}, terms))
    load_rows(conn, candidates)
    have = set(keys)
    wanted = [doc_id for doc_id in owners if doc_id not in have]
    rest = {doc_id: ahead.vectors[doc_id] for doc_id in wanted if doc_id in ahead.vectors}
    rest.update(_vectors(conn, index, raw.space, [doc_id for doc_id in wanted if doc_id not in rest]))
    if rest:
        keys = keys + list(rest)
        blocks.append(np.stack(list(rest.values())))
    set_cosines(keys, [owners[doc_id] for doc_id in keys], blocks, raw.embedding, candidates, raw.query_cjk)


def _vectors(conn: sqlite3.Connection, index: Index, space: str, doc_ids: list[str]) -> dict[str, Any]:
    """Stored vectors of these documents: from SQLite, else (a teammate's, a row the catch-up has
    not filled yet) from Chroma."""
    found = stored_vectors.read(conn, space, doc_ids)
    rest = [doc_id for doc_id in doc_ids if doc_id not in found]
    if rest:
        found.update(index.vectors(rest))
    return found


def _best_documents(conn: sqlite3.Connection, missing: dict[tuple[str, int], Candidate],
                    terms: list[str]) -> dict[str, tuple[str, int]]:
    """Each candidate's document holding most query words (the first, its main text, on ties)."""
    load_rows(conn, missing)
    stems = [stem(t) for t in terms]
    owners: dict[str, tuple[str, int]] = {}
    for c in missing.values():
        docs = document_texts(c.kind, c.row) if c.row else []
        if docs:
            best = max(docs, key=lambda d: sum(s in d[1].lower() for s in stems))
            owners[best[0]] = (c.kind, c.id)
    return owners


def _nearest(conn: sqlite3.Connection, index: Index, raw: NearestDocuments, kinds: tuple[str, ...], f: Filters,
             want: int) -> list[VectorMatch]:
    """The `want` documents nearest to the query among those passing the filters: the nearest
    RAW_FACTOR x `want` fetched unfiltered and their rows checked in SQLite (exact whenever
    enough pass); else a filtered set of at most BRUTE_FORCE_ROWS rows scored from its stored
    vectors; else those that passed if they are FEW_PASSING or more (the nearest of the filtered
    set, only fewer: the others are farther than all those fetched); else ESCALATE x as many
    nearest, checked and taken the same way; else Chroma's own `where`, which scans metadata
    first (~20 ms at 10k observations, ~400 ms at 100k)."""
    embedding = raw.embedding
    kept = _first_passing(conn, raw.matches, kinds, f, want)
    if len(kept) >= min(want, tuning.POOL) or len(raw.matches) < raw.asked:
        return kept[:want]
    # Teammates' documents have no rows here: those among the nearest that passed are kept.
    theirs = [m for m in kept if m.origin is not None]
    rows = _filtered_rows(conn, kinds, f, tuning.BRUTE_FORCE_ROWS)
    if rows is not None:
        owners = {doc_id: (kind, int(row["id"])) for kind, row in rows for doc_id, _ in vector_texts(kind, row)}
        scored = [VectorMatch(*owners[doc_id], 1.0 - float(vector @ embedding), doc_id, vector)
                  for doc_id, vector in _vectors(conn, index, raw.space, list(owners)).items()]
        return sorted(scored + theirs, key=lambda m: m.distance)[:want]
    # Only when too few passed: a second, wider fetch took 7-13 ms after the wait, for 8% of the
    # questions at 100k (about what every project's memory says alike), and changed few top tens
    # (docs/search-tuning.md).
    if len(kept) < tuning.FEW_PASSING and tuning.ESCALATE > 1:
        asked = raw.asked * tuning.ESCALATE
        more = [raw.aliases.local(m) for m in index.query_documents(embedding, asked)]
        kept = _first_passing(conn, more, kinds, f, want)
        if len(kept) >= min(want, tuning.POOL) or len(more) < asked:
            return kept[:want]
        theirs = [m for m in kept if m.origin is not None]
    if len(kept) >= tuning.FEW_PASSING:
        return kept[:want]
    where = _vector_where(conn, kinds, f)
    if where is None:
        return theirs[:want]
    found = [raw.aliases.local(m) for m in index.query_documents(embedding, want, where or None)]
    return [m for m in found if m.origin is None or teammates.passes(m.origin.metadata, m.kind, f)]


def _first_passing(conn: sqlite3.Connection, matches: list[VectorMatch], kinds: tuple[str, ...], f: Filters,
                   want: int) -> list[VectorMatch]:
    """The nearest `want` or more of `matches` passing the filters, in order; checked a step at a
    time, as they are usually found early when the query is about the filtered project."""
    kept: list[VectorMatch] = []
    step = 2 * want
    for start in range(0, len(matches), step):
        kept.extend(_passing(conn, matches[start:start + step], kinds, f))
        if len(kept) >= want:
            break
    return kept


def _passing(conn: sqlite3.Connection, matches: list[VectorMatch], kinds: tuple[str, ...], f: Filters) -> list[VectorMatch]:
    """The matches whose rows are of the wanted kinds and pass the filters, in order (a
    teammate's, by its metadata)."""
    wanted = [m for m in matches if m.kind in kinds]
    if not has_filters(f):
        return wanted
    ok: set[tuple[str, int]] = set()
    for kind in kinds:
        where = sql_filters(kind, f, "t")
        ids = sorted({m.sqlite_id for m in wanted if m.kind == kind and m.origin is None})
        if where is None or not ids:
            continue
        # Checked by id: NOT INDEXED keeps SQLite on rowid lookups, where it would otherwise walk
        # the whole project through its index.
        ok.update((kind, i) for i in recall_rows.passing(conn, kind, ids, where, hint="NOT INDEXED"))
    return [m for m in wanted if ((m.kind, m.sqlite_id) in ok if m.origin is None
                                  else teammates.passes(m.origin.metadata, m.kind, f))]


def _filtered_rows(conn: sqlite3.Connection, kinds: tuple[str, ...], f: Filters,
                   limit: int) -> list[tuple[str, dict[str, Any]]] | None:
    """The rows passing the filters (the columns that name their documents), None if more than `limit`."""
    out: list[tuple[str, dict[str, Any]]] = []
    for kind in kinds:
        where = sql_filters(kind, f, "t")
        if where is None:
            continue
        out.extend((kind, row) for row in recall_rows.text_rows(conn, kind, where, limit + 1 - len(out)))
        if len(out) > limit:
            return None
    return out


def _matching_ids(conn: sqlite3.Connection, kind: str, f: Filters) -> list[int] | None:
    """Row ids passing the filters, when a filter cannot be said in Chroma's `where` (a file
    path is matched as a substring of the stored lists); None when no such filter is set."""
    if not f.file:
        return None
    where = sql_filters(kind, f, "t")
    if where is None:
        return []
    return recall_rows.matching(conn, kind, where)


def _vector_where(conn: sqlite3.Connection, kinds: tuple[str, ...], f: Filters) -> dict[str, Any] | None:
    """The same filters as a Chroma `where` ({} for none); None when they exclude everything."""
    per_kind: list[dict[str, Any]] = []
    for kind in kinds:
        if sql_filters(kind, f, "t") is None:
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


def _written_cjk(owners: list[tuple[str, int]], candidates: dict[tuple[str, int], Candidate]) -> dict[tuple[str, int], bool]:
    """Whether each candidate's memory is written in Chinese, Japanese or Korean (by its heading):
    looked at one by one only when some heading holds any (an English memory's search, never)."""
    headings = [_heading(candidates.get(owner)) for owner in owners]
    if not has_cjk("".join(headings)):
        return dict.fromkeys(owners, False)
    return {owner: has_cjk(heading) for owner, heading in zip(owners, headings, strict=True)}


def _heading(c: Candidate | None) -> str:
    row = c.row if c is not None else None
    if not row:
        return ""
    return f"{row.get('title') or ''} {row.get('subtitle') or ''} {row.get('request') or ''} {row.get('prompt_text') or ''}"


def set_cosines(doc_ids: list[str], owners: list[tuple[str, int]], blocks: Sequence[Any], query: Any,
                candidates: dict[tuple[str, int], Candidate], query_cjk: bool = False) -> None:
    """Each candidate's cosine: that of its best document (`doc_ids`, of the rows `owners`, their
    unit vectors the rows of the matrices `blocks`, in order), measured around the pool's centre.
    Memories of one person or project share a common direction that makes raw cosines alike;
    removing CENTRING x the pool's mean keeps what sets them apart (experiment 10). Texts of one
    language share one too: a multilingual model puts a Chinese question nearer to any Chinese
    memory than to the English one that answers it. So the memories written in CJK and the
    others are each centred on their own side's mean, the query on its side's (docs/multilingual.md).

    Worked out from products with the documents (d.q, d.m, |d|), block by block, never by
    writing the documents out again (joined, or centred): each such copy was a fresh block of
    their size, which the memory service maps and faults in anew (~670 of its ~840 page faults a
    search at 100k, ~3 ms of its p95: processes/malloc.py, docs/search-tuning.md)."""
    import numpy as np

    if not doc_ids:
        return
    query = np.asarray(query, dtype=np.float32)
    blocks = [b for b in (np.asarray(b, dtype=np.float32).reshape(-1, len(query)) for b in blocks) if len(b)]
    raw = (np.concatenate([b @ query for b in blocks]) / max(float(np.linalg.norm(query)), 1e-9)).tolist()  # unit vectors
    in_cjk = _written_cjk(list(dict.fromkeys(owners)), candidates)
    written = np.array([in_cjk[owner] for owner in owners])
    starts = np.cumsum([0] + [len(b) for b in blocks])
    centres = [sum(b.sum(axis=0) for b in blocks) / len(doc_ids)]  # the pool's mean, then each side's own
    q_centre = centres[0]
    of_doc = np.zeros(len(doc_ids), dtype=np.intp)  # each document's centre among them
    for cjk in (True, False):
        side = written == cjk
        count = int(side.sum())
        if count >= tuning.LANGUAGE_SIDE and count < len(doc_ids):
            mask = side.astype(np.float32)
            centres.append(sum(mask[a:z] @ b for a, z, b in zip(starts[:-1], starts[1:], blocks, strict=True)) / count)
            of_doc[side] = len(centres) - 1
            if cjk == query_cjk:
                q_centre = centres[-1]
    c = tuning.CENTRING
    q = query - c * q_centre
    q /= max(float(np.linalg.norm(q)), 1e-9)
    m = np.stack(centres)
    dq = np.concatenate([b @ q for b in blocks])
    dm = np.concatenate([b @ m.T for b in blocks])  # (documents, centres)
    dd = np.concatenate([np.einsum("ij,ij->i", b, b) for b in blocks])
    mine = np.arange(len(doc_ids)), of_doc
    m_q, m_m = (m @ q)[of_doc], np.einsum("ij,ij->i", m, m)[of_doc]
    norms = dd - 2 * c * dm[mine] + c * c * m_m  # |d - c m|^2
    cosines = (dq - c * m_q) / np.sqrt(np.clip(norms, 1e-18, None))
    for owner, doc_id, cosine, plain in zip(owners, doc_ids, cosines.tolist(), raw, strict=True):
        cand = candidates.get(owner)
        if cand is None:
            continue
        if cand.cosine is None or cosine > cand.cosine:
            cand.cosine, cand.doc_id = cosine, doc_id
        cand.raw_cosine = plain if cand.raw_cosine is None else max(cand.raw_cosine, plain)
