"""The one search function: hybrid ranking, filters inside both searches, the FTS fallback."""

from __future__ import annotations

import datetime as dt
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claude_mem.index.semantic_index import Index
from claude_mem.kinds import SearchMode
from claude_mem.recall import tuning
from claude_mem.recall.candidates import Candidate, Filters, load_rows
from claude_mem.recall.dates import date_windows
from claude_mem.recall.hits import Hit
from claude_mem.recall.keyword import fts_search
from claude_mem.recall.search import search
from claude_mem.recall.semantic import add_candidates, measure_ahead, start_nearest
from claude_mem.store.db import connect
from claude_mem.store.memories import Observation, Summary, insert_observation, upsert_summary
from claude_mem.store.reads import KINDS
from claude_mem.store.records import ensure_session, record_prompt
from claude_mem.text.terms import fts_match, path_phrases, query_terms
from tests.search_helpers import keys
from tests.stores import build_indexed

DAY = 86_400_000
T0 = int(time.mktime((2025, 3, 3, 12, 0, 0, 0, 0, -1)) * 1000)  # local noon, 3 March 2025


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[sqlite3.Connection, Index, dict[str, int]]]:
    """Two projects. Project beta is flooded with near-copies of alpha's memories, so a filter
    applied after a limited search (instead of inside it) would leave alpha's rows out."""
    root = tmp_path_factory.mktemp("search")
    conn = connect(str(root / "claude-mem.db"))
    for sid, project in (("a1", "alpha"), ("a2", "alpha"), ("b1", "beta")):
        ensure_session(conn, sid, project=project, cwd=None, transcript_path=None)
    ids = {
        "login": insert_observation(conn, "a1", "alpha", Observation(
            type="bugfix", title="Fixed login crash", narrative="The refresh token was null after logout",
            facts=["token refresh raced with logout", "a mutex now guards the refresh"],
            files_modified=["src/auth/session.py"]), prompt_number=1, created_at_epoch=T0),
        "dark": insert_observation(conn, "a1", "alpha", Observation(
            type="feature", title="Dark mode", facts=["colours come from CSS variables"], files_modified=["web/theme.css"]),
            prompt_number=2, created_at_epoch=T0 + 1000),
        "db": insert_observation(conn, "a2", "alpha", Observation(
            type="decision", title="Chose SQLite with WAL for the store", facts=["PostgreSQL was judged too heavy"],
            files_read=["docs/DESIGN.md"]), prompt_number=1, created_at_epoch=T0 + 7 * DAY),
    }
    for n in range(30):
        insert_observation(conn, "b1", "beta", Observation(
            type="bugfix", title=f"Fixed login crash number {n}", narrative="refresh token null after logout, dark mode too",
            files_modified=["src/auth/session.py"]), prompt_number=n, created_at_epoch=T0 + n)
    ids["summary"] = upsert_summary(conn, "a1", "alpha", Summary(request="fix the login crash", learned="refresh tokens expire",
                                                                  files_edited=["src/auth/session.py"]), prompt_number=1)
    ids["prompt"] = record_prompt(conn, "a2", "which database should the store use?", None)
    index = Index(path=str(root / "chroma"))
    index.index_missing(conn)
    yield conn, index, ids
    index.close()
    conn.close()


def test_finds_by_keyword_and_by_meaning(store) -> None:
    conn, index, ids = store
    by_word = search(conn, "mutex", index=index, project="alpha")
    assert by_word.mode == "hybrid" and by_word.note is None
    assert keys(by_word)[0] == ("observation", ids["login"])
    assert by_word.hits[0].snippet == "a mutex now guards the refresh"  # the fact that matched
    # No word in common with "Dark mode" / "colours come from CSS variables".
    query = "night theme for the user interface"
    assert ("observation", ids["dark"]) not in keys(search(conn, query, index=index, project="alpha", mode="keyword"))
    meaning = search(conn, query, index=index, project="alpha", kinds=("observation",))
    assert keys(meaning)[0] == ("observation", ids["dark"])
    vector = search(conn, query, index=index, project="alpha", kinds=("observation",), mode="semantic")
    assert vector.mode == "semantic" and keys(vector)[0] == ("observation", ids["dark"])


def test_unrelated_queries_find_nothing_rather_than_the_nearest(store) -> None:
    conn, index, ids = store
    query = "quarterly tax filing deadline for the accountant"  # no memory is about this
    for mode in ("hybrid", "semantic"):
        result = search(conn, query, index=index, mode=mode)
        assert result.hits == [] and "close to it in meaning" in (result.note or "")
        # Without the floor the nearest memories would have come back.
        assert index.query_documents(index.embed_query(query), 3)
    # A related query with no word in common still finds its memory by meaning.
    meaning = search(conn, "night theme for the user interface", index=index, project="alpha", mode="semantic")
    assert keys(meaning)[0] == ("observation", ids["dark"])
    # A keyword match is kept however far its meaning: it names what the query names.
    word = search(conn, "mutex zebra aquarium", index=index, project="alpha")
    assert ("observation", ids["login"]) in keys(word)


def test_hit_contract(store) -> None:
    conn, index, ids = store
    result = search(conn, "login crash refresh token", index=index, project="alpha", limit=5)
    # The prompt ("which database should the store use?") shares neither words nor meaning.
    assert {h.kind for h in result.hits} == {"observation", "summary"}
    login = next(h for h in result.hits if h.kind == "observation" and h.id == ids["login"])
    assert login == Hit(kind="observation", id=ids["login"], session_id="a1", project="alpha", type="bugfix",
                        title="Fixed login crash", snippet=login.snippet, created_at_epoch=T0,
                        files=["src/auth/session.py"], score=login.score, host="claude-code")
    summary = next(h for h in result.hits if h.kind == "summary")
    assert summary.title == "fix the login crash" and summary.type is None and summary.files == ["src/auth/session.py"]
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)
    for hit in result.hits:
        assert len(hit.title) <= 120 and len(hit.snippet) <= 200 and hit.created_at_epoch > 10**12


# How the vector side meets a filter (semantic._nearest): the defaults find enough passing rows
# among the nearest documents fetched unfiltered (this index is small); the others shrink the
# pools so that too few pass, and the filtered rows are scored from their stored vectors ("brute
# force"), or looked for among more nearest documents ("escalate": this index has fewer than
# asked, so that is all of it), or handed to Chroma's `where` (no escalation either). The
# overlapped and the sequential search must agree in each.
REGIMES = {"unfiltered-then-sql": {}, "brute-force": {"POOL": 4, "RAW_FACTOR": 1, "BRUTE_FORCE_ROWS": 1000},
           "escalate": {"POOL": 4, "RAW_FACTOR": 1, "BRUTE_FORCE_ROWS": 0},
           "chroma-where": {"POOL": 4, "RAW_FACTOR": 1, "BRUTE_FORCE_ROWS": 0, "ESCALATE": 1},
           "sequential": {"OVERLAP": False}}


# The regimes differ on the vector side only: keyword search is tested once.
@pytest.mark.parametrize(("mode", "regime"), [("keyword", "unfiltered-then-sql")]
                         + [(mode, regime) for mode in ("hybrid", "semantic") for regime in REGIMES])
def test_filters_apply_inside_each_search(store, mode: str, regime: str, monkeypatch: pytest.MonkeyPatch) -> None:
    conn, index, ids = store
    for name, value in REGIMES[regime].items():
        monkeypatch.setattr(tuning, name, value)
    query = "fixed login crash refresh token dark mode"
    # 30 beta rows outrank alpha's: with the filter outside, a limit of 3 would find nothing.
    alpha = search(conn, query, index=index, project="alpha", kinds=("observation",), limit=3, mode=mode)
    assert alpha.mode == mode and alpha.hits and {h.project for h in alpha.hits} == {"alpha"}
    assert ("observation", ids["login"]) in keys(alpha)

    typed = search(conn, query, index=index, type_="feature", limit=3, mode=mode)
    assert keys(typed) == [("observation", ids["dark"])]  # summaries and prompts have no type

    session = search(conn, "database store", index=index, session_id="a2", limit=3, mode=mode)
    assert set(keys(session)) <= {("observation", ids["db"]), ("prompt", ids["prompt"])} and session.hits

    # The summary and prompt were stored "now", long after T0: only observations are compared.
    later = search(conn, query + " sqlite", index=index, since_ms=T0 + DAY, kinds=("observation",), limit=3, mode=mode)
    assert keys(later) == [("observation", ids["db"])]
    earlier = search(conn, "sqlite wal store login crash", index=index, project="alpha", until_ms=T0 + DAY, limit=3, mode=mode)
    assert ("observation", ids["db"]) not in keys(earlier) and earlier.hits

    css = search(conn, query, index=index, file="theme.css", limit=3, mode=mode)
    assert keys(css) == [("observation", ids["dark"])]
    design = search(conn, "store", index=index, file="DESIGN.md", limit=3, mode=mode)
    assert keys(design) == [("observation", ids["db"])]
    assert search(conn, query, index=index, file="no/such/file.py", mode=mode).hits == []


@pytest.mark.parametrize("escalate", [1, 100])
def test_the_few_nearest_passing_a_filter_are_taken_as_they_are(store, escalate: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fewer than the pool pass the filter among the nearest documents (beta's copies crowd alpha
    out): FEW_PASSING or more of them are the filtered set's nearest and are taken as they are,
    with no wider fetch (ESCALATE 100 would reach every document of this small index); fewer, and a
    wider fetch or Chroma's `where` finds the filtered set's nearest however far they are."""
    conn, index, ids = store
    for name, value in {"POOL": 4, "RAW_FACTOR": 1, "BRUTE_FORCE_ROWS": 0, "ESCALATE": escalate}.items():
        monkeypatch.setattr(tuning, name, value)
    query, want, kinds = "dark mode too", 6, ("observation",)
    alpha = Filters("alpha", None, None, None, None, None)
    nearest = index.query_documents(index.embed_query(query), want)
    of_alpha = {ids["login"], ids["dark"], ids["db"]}
    assert len(nearest) == want and [m.sqlite_id for m in nearest if m.kind == "observation" and m.sqlite_id in of_alpha] == [ids["dark"]]
    found = {}
    for few in (1, 2):
        monkeypatch.setattr(tuning, "FEW_PASSING", few)
        candidates: dict[tuple[str, int], Candidate] = {}
        add_candidates(conn, index, start_nearest(index, query, kinds, alpha, want), query_terms(query), kinds, alpha, want,
                       candidates, fill_missing=False)
        found[few] = set(candidates)
    assert found[1] == {("observation", ids["dark"])}
    assert found[2] == {("observation", row_id) for row_id in of_alpha}


@pytest.mark.parametrize("want", [2, 4, 16])
@pytest.mark.parametrize("project", [None, "alpha"])
@pytest.mark.parametrize(("query", "others"), [("fixed login crash refresh token", True),
                                               ("which database should the store use", True), ("dark mode css", False),
                                               # the summary is among the nearest by what it learned, not by its request
                                               ("the login crash tokens expire", True)])
def test_keyword_candidates_measured_ahead_score_as_measured_after(store, query: str, others: bool, project: str | None,
                                                                    want: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the semantic side is on its way, the keyword candidates' vectors are read ahead
    (semantic.measure_ahead): their cosines and best documents must be those read after it came.
    Few nearest (`want`) leave summaries and prompts, or some of their documents, beyond them: the
    document holding most query words counts only for a candidate none of whose documents is among
    them (`others`: the query's keywords find some summary or prompt)."""
    conn, index, _ = store
    monkeypatch.setattr(tuning, "POOL", 2)
    filters = Filters(project, None, None, None, None, None)
    terms = query_terms(query)
    pending = start_nearest(index, query, KINDS, filters, want)
    cosines = {}
    for way in ("after", "ahead"):
        candidates = {key: Candidate(*key, bm25=score) for key, score in fts_search(conn, terms, KINDS, filters, 3, alone=False).items()}
        load_rows(conn, candidates)
        if way == "ahead":
            ahead = measure_ahead(conn, index, pending.space(), candidates, terms)
            assert ahead.keys and bool(ahead.best) == others, ahead
        add_candidates(conn, index, pending, terms, KINDS, filters, want, candidates, fill_missing=True,
                       read_ahead=way == "ahead")
        cosines[way] = {key: (c.cosine, c.raw_cosine, c.doc_id) for key, c in candidates.items()}
    assert cosines["ahead"].keys() == cosines["after"].keys()
    for key, (cosine, plain, doc_id) in cosines["after"].items():
        got = cosines["ahead"][key]
        assert got[2] == doc_id and (cosine is None) == (got[0] is None), (key, got, doc_id)
        if cosine is not None:
            assert got[0] == pytest.approx(cosine, abs=1e-5) and got[1] == pytest.approx(plain, abs=1e-5)  # summed in another order


def test_without_filters_the_keyword_index_ranks_alone_as_the_joined_statement_does(store) -> None:
    """Unfiltered, the keyword side asks FTS5 alone (store/fts.best_matches): the same rows and
    scores as the statement that joins every match to its row, which a filter passing all rows runs."""
    conn, index, _ = store
    for query in ("fixed login crash refresh token dark mode", "database store", "sqlite"):
        alone = search(conn, query, index=index, limit=50, mode="keyword")
        joined = search(conn, query, index=index, since_ms=0, limit=50, mode="keyword")
        assert alone.hits and [(h.kind, h.id, h.score) for h in alone.hits] == [(h.kind, h.id, h.score) for h in joined.hits]


def test_common_words_give_way_to_rare_ones_and_their_counts_follow_new_rows(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The keyword row budget (S3): with a rare word in the query, rows holding only common words
    are not ranked. Word counts are kept between searches, and counted again once more than
    STALE_ROWS rows were added."""
    from claude_mem.recall import keyword

    monkeypatch.setattr(tuning, "FTS_BUDGET", 10)
    monkeypatch.setattr(keyword, "STALE_ROWS", 5)
    conn = connect(str(tmp_path / "budget.db"))
    ensure_session(conn, "s", project="p", cwd=None, transcript_path=None)

    def add(title: str, n: int) -> list[int]:
        return [insert_observation(conn, "s", "p", Observation(type="change", title=f"{title} {i}"), prompt_number=1)
                for i in range(n)]

    common = add("widget", 20)
    rare = add("gizmo", 3)
    first = search(conn, "gizmo widget", kinds=("observation",), limit=50, mode="keyword")
    assert {h.id for h in first.hits} == set(rare)  # "widget" is in 20 rows, over the budget of 10

    both = add("gizmo widget", 2)  # 2 rows added: the counts are reused, "gizmo" still rare
    assert {h.id for h in search(conn, "gizmo widget", kinds=("observation",), limit=50, mode="keyword").hits} == set(rare + both)

    add("gizmo", 20)  # now both words are common: only rows holding both are ranked
    again = search(conn, "gizmo widget", kinds=("observation",), limit=50, mode="keyword")
    assert {h.id for h in again.hits} == set(both) and not set(common) & {h.id for h in again.hits}


@pytest.mark.parametrize(("text", "phrases"), [
    ("in src/auth/session.py", [["src", "auth", "session", "py"]]),
    ("models.go and pkg.util.Load", [["models", "go"], ["pkg", "util", "load"]]),
    ("C:\\work\\the\\app.ts", [["work", "the", "app", "ts"]]),  # stopwords stay: the phrase is the path
    ("no path here, e.g. a sentence.", [["e", "g"]]),
    ("", []),
])
def test_path_phrases(text: str, phrases: list[list[str]]) -> None:
    assert path_phrases(text) == phrases


def test_a_path_of_common_words_finds_that_path_then_its_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """When every word of the query is common, a path in it is matched as the path (a phrase),
    not as its words anywhere in a row (src/auth/... in one place, session.py in another); when
    no row holds the path as written, its words anywhere still find what they find."""
    monkeypatch.setattr(tuning, "FTS_BUDGET", 10)
    conn = connect(str(tmp_path / "paths.db"))
    ensure_session(conn, "s", project="p", cwd=None, transcript_path=None)

    def add(title: str, files: list[str], n: int = 1) -> list[int]:
        said = f"Edited {' and '.join(files)}"  # the keyword index holds the text, not the file lists
        return [insert_observation(conn, "s", "p", Observation(type="change", title=f"{title} {i}", narrative=said,
                                                               files_modified=files), prompt_number=1) for i in range(n)]

    add("Auth work", ["src/auth/tokens.py"], 12)  # every word of the path below is in 12+ rows
    add("Session store", ["src/db/session.py"], 12)
    scattered = add("Session auth", ["src/auth/tokens.py", "src/db/session.py"], 2)  # the words, not the path
    exact = add("Session handling", ["src/auth/session.py"], 2)
    found = {h.id for h in search(conn, "in src/auth/session.py", kinds=("observation",), limit=50,
                                  mode="keyword").hits}
    assert found == set(exact), (found, exact, scattered)
    anywhere = {h.id for h in search(conn, "src/db/auth.py", kinds=("observation",), limit=50, mode="keyword").hits}
    assert set(scattered) <= anywhere  # no row holds src/db/auth.py: rows holding its four words
    # A word no row holds ("changed") is left out: it matches nothing, and as the query's only rare
    # word it used to leave the keyword side empty.
    asked = {h.id for h in search(conn, "what changed in src/auth/session.py", kinds=("observation",), limit=50, mode="keyword").hits}
    assert asked == set(exact)
    assert search(conn, "zebra quokka", kinds=("observation",), mode="keyword").hits == []  # no word any row holds


FIRST_SEARCH = """
import sys
from claude_mem.index.semantic_index import Index
from claude_mem.recall.search import search
from claude_mem.store.db import connect
assert "numpy" not in sys.modules  # else nothing is imported by two threads at once
data, mode = sys.argv[1:]
result = search(connect(data + "/claude-mem.db"), "login crash", index=Index(path=data + "/chroma"), mode=mode)
print(result.mode, len(result.hits))
"""


@pytest.mark.parametrize("mode", ["semantic", "hybrid"])
def test_a_first_search_in_a_fresh_process(tmp_path: Path, mode: str) -> None:
    """A process's first search starts the semantic side's thread, whose first embedding imports
    numpy while the search's own thread goes on: both importing it at once left one of them a
    half-initialised module (ImportError: cannot import name 'NDArray'), every time in semantic mode."""
    stored = build_indexed(tmp_path)
    data = str(stored.config.data_dir)
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", FIRST_SEARCH, data, mode], capture_output=True, text=True, timeout=180,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
        assert done.returncode == 0 and done.stdout.split()[0] == mode, done.stderr[-2000:]


def test_without_an_index_answers_from_fts_and_says_so(store) -> None:
    conn, _, ids = store
    result = search(conn, "mutex", project="alpha")
    assert result.mode == "keyword" and "keyword results only" in (result.note or "")
    assert keys(result)[0] == ("observation", ids["login"])


def test_a_mode_has_one_name_and_the_old_ones_still_read(store) -> None:
    """keyword and semantic, the modules' names; fts and vector (before 0.2.0) read as them."""
    conn, _, ids = store
    assert SearchMode("fts") is SearchMode.KEYWORD and SearchMode("Vector") is SearchMode.SEMANTIC
    old = search(conn, "mutex", project="alpha", mode="fts")
    assert old.mode is SearchMode.KEYWORD and keys(old) == keys(search(conn, "mutex", project="alpha", mode=SearchMode.KEYWORD))
    with pytest.raises(ValueError, match="mode must be one of hybrid, keyword, semantic, got 'magic'"):
        search(conn, "mutex", mode="magic")


def test_unavailable_index_falls_back_to_fts(store) -> None:
    conn, _, ids = store
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = Index(url=f"http://127.0.0.1:{port}")
    for mode in ("hybrid", "semantic"):
        result = search(conn, "mutex", index=down, project="alpha", mode=mode)
        assert result.mode == "keyword" and "unavailable" in (result.note or "") and "keyword results only" in result.note
        assert keys(result)[0] == ("observation", ids["login"])


def test_dates_named_in_the_query_rank_that_day_first(store) -> None:
    conn, index, ids = store
    day = dt.date(2025, 3, 10).strftime("%d %B %Y")  # a week after T0: the "db" decision
    result = search(conn, f"what did we decide on {day}", index=index, project="alpha", kinds=("observation",), limit=1)
    assert keys(result) == [("observation", ids["db"])]


def test_date_windows() -> None:
    def days(text: str) -> list[tuple[str, str]]:
        fmt = "%Y-%m-%d"
        return [(time.strftime(fmt, time.localtime(a / 1000)), time.strftime(fmt, time.localtime(b / 1000)))
                for a, b in date_windows(text)]

    assert days("What did Gina find on 1 February, 2023?") == [("2023-02-01", "2023-02-02")]
    assert days("on December 1,2023 and 2024-02-29") == [("2024-02-29", "2024-03-01"), ("2023-12-01", "2023-12-02")]
    assert days("8th December, 2023") == [("2023-12-08", "2023-12-09")]
    assert days("in November 2022") == [("2022-11-01", "2022-12-01")]
    assert days("in December 2023") == [("2023-12-01", "2024-01-01")]
    assert days("between August 11 and August 15 2023") == [
        ("2023-08-15", "2023-08-16"), ("2023-08-11", "2023-08-12"), ("2023-08-11", "2023-08-16")]
    assert days("on May 8") == [] and days("31 February 2023") == [] and days("version 2023.1") == []


NASTY = ['"', '""', "'", "-", "--foo", "a:b", "title:login", "*", "log*", "AND", "OR", "NOT", "NEAR", "login AND",
         "NOT login", "a OR OR b", "(", ")", "((login", "login)", "^start", "+", "{col}", "[x]", "\\", "%", "_", "__",
         "🎉", "💥 crash 💥", "中文", "日本語のテキスト", "ü̈ñíçødé", "\x00", "\n\t", "   ", "", "a" * 5000, "NEAR(a b, 3)",
         "col:value AND -other OR \"unbalanced", "SELECT * FROM observations; --", "$1.5e10", "C++ / C#"]


@pytest.mark.parametrize("text", NASTY)
def test_hostile_queries_never_raise(store, text: str) -> None:
    conn, index, _ = store
    result = search(conn, text, index=index)
    assert result.mode in ("hybrid", "keyword") and isinstance(result.hits, list)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=80))
def test_any_text_is_a_valid_fts_query(tmp_path: Path, text: str) -> None:
    conn = _fts_conn(tmp_path)
    terms = query_terms(text)
    assert all(t and '"' not in t for t in terms)
    if terms:
        conn.execute("SELECT count(*) FROM observations_fts WHERE observations_fts MATCH ?", (fts_match(terms),)).fetchone()
    result = search(conn, text)
    assert result.mode == "keyword"


_CONNS: dict[str, sqlite3.Connection] = {}


def _fts_conn(tmp_path: Path) -> sqlite3.Connection:
    # One small database for all hypothesis examples (the tmp_path fixture is made once per test).
    key = str(tmp_path)
    if key not in _CONNS:
        conn = connect(str(tmp_path / "fts.db"))
        ensure_session(conn, "s", project="p", cwd=None, transcript_path=None)
        insert_observation(conn, "s", "p", Observation(type="change", title="login crash 中文 café", facts=["token AND or"]),
                           prompt_number=1)
        _CONNS[key] = conn
    return _CONNS[key]


def test_bad_arguments_raise_value_error(store) -> None:
    conn, index, _ = store
    with pytest.raises(ValueError, match="mode"):
        search(conn, "x", mode="magic")
    with pytest.raises(ValueError, match="kinds"):
        search(conn, "x", kinds=("note",))
    assert search(conn, "login", limit=0).hits == []
    assert search(conn, "   ", index=index).note == "empty query"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=60))
def test_any_text_through_the_hybrid_search(store, text: str) -> None:
    conn, index, _ = store
    result = search(conn, text, index=index, project="alpha", limit=5)
    assert result.mode == "hybrid" and len(result.hits) <= 5
