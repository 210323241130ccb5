"""A turn is a unit of recall: what was said (a prompt, Claude's reply) brings forward
what was noted of it (the turn's observations), and the turns around a matching prompt share
its words."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest

from claude_mem.index.semantic_index import Index
from claude_mem.recall import tuning
from claude_mem.recall.search import search
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, insert_observation
from claude_mem.store.records import ensure_session, record_prompt, record_reply
from tests.search_helpers import keys

SESSION = "turns-1"


@pytest.fixture(scope="module")
def memory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[sqlite3.Connection, Index, dict[str, int]]]:
    root = tmp_path_factory.mktemp("turns")
    conn = connect(str(root / "claude-mem.db"))
    ids: dict[str, int] = {}

    def turn(name: str, said: str, noted: list[str], reply: str = "") -> None:
        number = record_prompt(conn, SESSION, said, name)
        ids[name] = conn.execute("SELECT id FROM user_prompts WHERE prompt_id = ?", (name,)).fetchone()[0]
        record_reply(conn, SESSION, reply, name)
        for n, title in enumerate(noted):
            ids[f"{name}.{n}"] = insert_observation(conn, SESSION, "gamma", Observation(type="change", title=title),
                                                    prompt_number=number)

    with transaction(conn):
        ensure_session(conn, SESSION, project="gamma", cwd=None, transcript_path=None)
        turn("export", "the nightly export job keeps timing out", ["Raised the exporter's batch size to 500 rows",
                                                                    "Added a retry with backoff to the exporter"])
        turn("ask", "Alice: what did you do last weekend?", [])
        turn("hike", "Bob: I went hiking in the hills", [])
        turn("paint", "Bob: I also like painting", [])
        turn("flaky", "please look at the failing snapshot test", ["Froze time in the snapshot test"],
             reply="The snapshot depended on the wall clock; the test now freezes it at noon.")
        turn("billing", "refactor the billing module", [f"Moved step {n} into its own function" for n in range(5)])
    index = Index(path=str(root / "chroma"))
    index.index_missing(conn)
    yield conn, index, ids
    index.close()
    conn.close()


@pytest.mark.parametrize("mode", ["keyword", "hybrid"])
def test_a_prompt_hit_brings_its_turn_forward(memory, mode: str) -> None:
    conn, index, ids = memory
    # Words of the prompt only: none of them is in the turn's observations.
    found = keys(search(conn, "nightly timing out", index=index, mode=mode, limit=5))
    assert set(found[:2]) == {("observation", ids["export.0"]), ("observation", ids["export.1"])}
    assert ("prompt", ids["export"]) not in found, "the observations stand for their turn"
    # A turn with nothing noted is found as what was said.
    assert keys(search(conn, "hiking", index=index, mode=mode, limit=3))[0] == ("prompt", ids["hike"])


def test_claude_s_reply_finds_the_turn(memory) -> None:
    conn, index, ids = memory
    assert keys(search(conn, "wall clock", index=index, mode="keyword", limit=3))[0] == ("observation", ids["flaky.0"])
    # By meaning as well: the reply is embedded with its prompt's row.
    assert ("observation", ids["flaky.0"]) in keys(search(conn, "time-dependent assertion", index=index, mode="semantic",
                                                            kinds=("prompt", "observation"), limit=3))


def test_a_turn_brings_a_few_of_its_observations(memory) -> None:
    conn, index, ids = memory
    found = keys(search(conn, "billing", index=index, mode="keyword", limit=10))
    spread = [("observation", ids[f"billing.{n}"]) for n in range(tuning.TURN_SPREAD)]
    assert found[:len(spread)] == spread
    assert len(set(found) & {("observation", ids[f"billing.{n}"]) for n in range(5)}) == len(spread)
    # Asked for prompts alone, the prompt is the hit.
    assert keys(search(conn, "billing", index=index, mode="keyword", kinds=("prompt",)))[0] == ("prompt", ids["billing"])


def test_neighbouring_turns_share_their_words(memory, monkeypatch: pytest.MonkeyPatch) -> None:
    conn, index, ids = memory
    # "Bob" is in both of Bob's turns; "weekend" only in the question just before the first.
    def bob_order() -> list[tuple[str, int]]:
        found = keys(search(conn, "what did Bob do last weekend", index=index, mode="keyword", kinds=("prompt",)))
        return [k for k in found if k in {("prompt", ids["hike"]), ("prompt", ids["paint"])}]

    assert bob_order() == [("prompt", ids["hike"]), ("prompt", ids["paint"])]
    monkeypatch.setattr(tuning, "NEIGHBOUR_SHARE", 0.0)
    assert bob_order() == [("prompt", ids["paint"]), ("prompt", ids["hike"])], "the shorter turn wins on its own words"


def test_an_excluded_prompt_is_neither_a_hit_nor_evidence(memory) -> None:
    conn, index, ids = memory
    found = keys(search(conn, "nightly timing out", index=index, mode="keyword", exclude=[("prompt", ids["export"])]))
    assert not {("prompt", ids["export"]), ("observation", ids["export.0"]), ("observation", ids["export.1"])} & set(found)
    found = keys(search(conn, "what did Bob do last weekend", index=index, mode="keyword", kinds=("prompt",),
                        exclude=[("prompt", ids["ask"])]))
    assert found[:2] == [("prompt", ids["paint"]), ("prompt", ids["hike"])]
