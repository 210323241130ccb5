"""semantic.set_cosines works its centred cosines out from products with the documents, block by
block; they must be the definition's: each document, less CENTRING x its centre (the pool's mean,
or its language side's), normalised, against the query centred the same way."""

from __future__ import annotations

import numpy as np
import pytest

from claude_mem.recall import tuning
from claude_mem.recall.candidates import Candidate
from claude_mem.recall.semantic import set_cosines

DIMS = 384


def written_out(docs: np.ndarray, query: np.ndarray, cjk: np.ndarray, query_cjk: bool) -> np.ndarray:
    """The definition, with every centred document written out."""
    pool = docs.mean(axis=0)
    centres = np.repeat(pool[None, :], len(docs), axis=0)
    q_centre = pool
    for side_cjk in (True, False):
        side = cjk == side_cjk
        if side.sum() >= tuning.LANGUAGE_SIDE and not side.all():
            centres[side] = docs[side].mean(axis=0)
            if side_cjk == query_cjk:
                q_centre = docs[side].mean(axis=0)
    centred = docs - tuning.CENTRING * centres
    centred /= np.linalg.norm(centred, axis=1, keepdims=True)
    q = query - tuning.CENTRING * q_centre
    return centred @ (q / np.linalg.norm(q))


@pytest.mark.parametrize("cjk_share", [0.0, 0.01, 0.3, 1.0])
@pytest.mark.parametrize("query_cjk", [False, True])
def test_centred_cosines_are_the_definitions(cjk_share: float, query_cjk: bool) -> None:
    rng = np.random.default_rng(int(cjk_share * 100) + query_cjk)
    n = 300
    shared = rng.normal(size=DIMS)  # memories of one project lean one way
    docs = (rng.normal(size=(n, DIMS)) + 2 * shared).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    query = rng.normal(size=DIMS).astype(np.float32)
    cjk = rng.random(n) < cjk_share
    candidates = {}
    for i in range(n):
        candidates[("observation", i)] = cand = Candidate("observation", i)
        cand.row = {"title": "登录时崩溃" if cjk[i] else "login crash"}
    owners = [("observation", i) for i in range(n)]
    cut = 123  # the observations' block and the others'
    set_cosines([f"obs:{i}" for i in range(n)], owners, [docs[:cut], docs[cut:]], query, candidates, query_cjk)
    expected = written_out(docs, query, cjk, query_cjk)
    got = np.array([candidates[o].cosine for o in owners])
    assert np.allclose(got, expected, atol=1e-5), np.abs(got - expected).max()
    raw = docs @ query / np.linalg.norm(query)
    assert np.allclose([candidates[o].raw_cosine for o in owners], raw, atol=1e-5)


def test_a_candidate_keeps_its_best_document() -> None:
    """An observation with two documents (its text and a fact) is measured by the nearer one."""
    rng = np.random.default_rng(7)
    docs = rng.normal(size=(4, DIMS)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    query = docs[1] + 0.01 * rng.normal(size=DIMS).astype(np.float32)  # nearest to the fact
    candidates = {("observation", 1): Candidate("observation", 1), ("observation", 2): Candidate("observation", 2)}
    owners = [("observation", 1), ("observation", 1), ("observation", 2), ("observation", 2)]
    set_cosines(["obs:1", "obs:1:fact:0", "obs:2", "obs:2:fact:0"], owners, [docs[:1], docs[1:]], query, candidates)
    assert candidates[("observation", 1)].doc_id == "obs:1:fact:0"
    assert candidates[("observation", 1)].cosine == pytest.approx(written_out(docs, query, np.zeros(4, bool), False)[1], abs=1e-5)
