"""The rows' vectors kept in SQLite beside Chroma's (migration 0016, index/vectors.py): written
with index_state, facts' included; gone with their row; filled for rows indexed before; read by
search, which measures an observation by its best fact too."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from claude_mem.index import vectors as stored_vectors
from claude_mem.index.semantic_index import Index
from claude_mem.recall.search import search
from claude_mem.store.db import transaction
from claude_mem.store.forget import forget, plan
from claude_mem.store.memories import Observation, Summary, insert_observation, upsert_summary
from claude_mem.store.records import record_prompt


@pytest.fixture
def conn(two_projects: sqlite3.Connection) -> sqlite3.Connection:
    return two_projects


@pytest.fixture
def index(tmp_path: Path) -> Iterator[Index]:
    ix = Index(path=str(tmp_path / "chroma"))
    yield ix
    ix.close()


def add_rows(conn: sqlite3.Connection) -> dict[str, list[int]]:
    """Three observations (two facts, one, none), a summary of two fields and a prompt."""
    return {
        "observation": [
            insert_observation(conn, "s1", "alpha", Observation(
                type="bugfix", title="Fixed login crash", narrative="The refresh token was null after logout",
                facts=["token refresh raced with logout", "a lock now guards the refresh"]), prompt_number=1),
            insert_observation(conn, "s1", "alpha", Observation(type="feature", title="Dark mode",
                                                                facts=["colours come from CSS variables"]), prompt_number=2),
            insert_observation(conn, "s2", "beta", Observation(type="discovery", title="The CI runner has 2 cores"),
                               prompt_number=1)],
        "summary": [upsert_summary(conn, "s1", "alpha", Summary(request="fix the login", learned="tokens expire", notes=""),
                                   prompt_number=1)],
        "prompt": [record_prompt(conn, "s1", "please make the app dark themed", None)],
    }


def parts(conn: sqlite3.Connection) -> dict[tuple[str, int], list[str]]:
    out: dict[tuple[str, int], list[str]] = {}
    for kind, row_id, part in conn.execute("SELECT kind, row_id, part FROM vectors ORDER BY kind, row_id, part"):
        out.setdefault((kind, row_id), []).append(part)
    return out


def test_indexing_keeps_each_document_and_each_fact_vector_in_sqlite(conn: sqlite3.Connection, index: Index) -> None:
    rows = add_rows(conn)
    index.index_missing(conn)
    o1, o2, o3 = rows["observation"]
    assert parts(conn) == {
        ("observation", o1): ["fact:0", "fact:1", "main"], ("observation", o2): ["fact:0", "main"],
        ("observation", o3): ["main"], ("summary", rows["summary"][0]): ["learned", "request"],
        ("prompt", rows["prompt"][0]): [""]}
    space = index.space()
    kept = stored_vectors.of_rows(conn, space, "observation", [o1])
    assert sorted(kept) == [f"obs:{o1}:fact:0", f"obs:{o1}:fact:1", f"obs:{o1}:main"]
    # The document's vector is Chroma's, to float16's precision; the facts are in SQLite only.
    chroma = index.vectors([f"obs:{o1}:main", f"obs:{o1}:fact:0"])
    assert list(chroma) == [f"obs:{o1}:main"]
    assert np.abs(kept[f"obs:{o1}:main"] - chroma[f"obs:{o1}:main"]).max() < 2e-3
    fact = index._embed(["token refresh raced with logout"])[0]
    assert float(kept[f"obs:{o1}:fact:0"] @ fact) > 0.999
    # Valid for this collection only: after a switch of model the old ones are not read.
    assert stored_vectors.of_rows(conn, space + "-another", "observation", [o1]) == {}


def test_a_row_forgotten_or_indexed_again_keeps_no_stale_vector(conn: sqlite3.Connection, index: Index) -> None:
    rows = add_rows(conn)
    index.index_missing(conn)
    o1, o2, _ = rows["observation"]
    forget(conn, plan(conn, refs=[("observation", o1)]), index)
    assert ("observation", o1) not in parts(conn)
    with transaction(conn):
        conn.execute("UPDATE observations SET facts = '[]' WHERE id = ?", (o2,))
    index.index_rows(conn, "observation", [o2])
    assert parts(conn)[("observation", o2)] == ["main"]


def test_rows_indexed_before_the_table_are_filled_without_writing_to_chroma(conn: sqlite3.Connection, index: Index) -> None:
    rows = add_rows(conn)
    index.index_missing(conn)
    before = {(k, r, p): bytes(v) for k, r, p, v in conn.execute("SELECT kind, row_id, part, vector FROM vectors")}
    with transaction(conn):  # what a store indexed by an older version looks like after migration 0016
        conn.execute("DELETE FROM vectors")
        conn.execute("UPDATE index_state SET vectors = 0")
    documents = index.count()
    drift = index.drift(conn)
    assert not drift["in_sync"] and drift["observation"]["unfilled"] == 3 and drift["observation"]["missing"] == 0
    counts = index.index_missing(conn)
    assert index.drift(conn)["in_sync"]
    assert counts == {"observation": 0, "summary": 0, "prompt": 0, "removed": 0, "vectors": 5}
    assert index.count() == documents
    after = {(k, r, p): bytes(v) for k, r, p, v in conn.execute("SELECT kind, row_id, part, vector FROM vectors")}
    assert after.keys() == before.keys()
    for key, blob in after.items():
        assert np.abs(np.frombuffer(blob, np.float16).astype(np.float32)
                      - np.frombuffer(before[key], np.float16).astype(np.float32)).max() < 2e-3, key
    assert index.index_missing(conn)["vectors"] == 0  # filled once
    assert len(rows["observation"]) == 3


def test_a_question_about_one_fact_is_measured_by_that_fact(conn: sqlite3.Connection, index: Index) -> None:
    """The observation's one document holds its narrative too; its fact's own vector is nearer."""
    narrative = ("Moved the experiment dashboards from one hosted service to another after the team agreed on "
                 "a new vendor, migrated the project settings, archived the old runs and updated the onboarding "
                 "guide, the CI secrets and the notebooks that opened the old dashboards.")
    row = insert_observation(conn, "s1", "alpha", Observation(
        type="change", title="Experiment tracking moved from TensorBoard to Weights & Biases", narrative=narrative,
        facts=["the training loop logs the gradient norm with wandb.log every step"]), prompt_number=1)
    for n in range(12):
        insert_observation(conn, "s1", "alpha", Observation(type="discovery", title=f"Unrelated finding {n}",
                                                            narrative=f"The cache layer {n} evicts on a timer"),
                           prompt_number=2 + n)
    index.index_missing(conn)
    question = "log the gradient norm at every step"
    with_facts = search(conn, question, index=index, limit=3, mode="semantic").hits
    assert with_facts[0].id == row
    assert with_facts[0].snippet == "the training loop logs the gradient norm with wandb.log every step"
    with transaction(conn):
        conn.execute("DELETE FROM vectors WHERE part LIKE 'fact:%'")
    without = search(conn, question, index=index, limit=3, mode="semantic").hits
    assert without[0].id == row and without[0].score < with_facts[0].score
