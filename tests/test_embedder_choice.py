"""Which embedder `auto` runs: judged by what the store holds (recall/embedders.choose), kept
once multilingual, and switched to by the memory service as rows arrive."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.index.embedders import CHOICE_FILE, choose, in_use, store_share
from claude_mem.service import client
from claude_mem.service.control import stop_service
from claude_mem.text.cjk import written_in_cjk
from tests.cli_helpers import invoke
from tests.push_helpers import Memory

THINGS = ["login form", "token refresh", "CSV importer", "rate limiter", "dark mode toggle", "search page", "billing job",
          "retry queue", "cache layer", "upload handler"]
CHINESE = ["秒杀下单出现超卖，库存扣减改用 Redis Lua 原子脚本", "未支付订单三十分钟后自动关闭", "修复 test_login 的超时问题",
           "订单写入失败时回补预扣库存", "压测时库存变成负数，帮我查一下原因", "用消息队列的延时消息触发关单",
           "把支付回调的签名校验加上", "退款接口偶尔返回五百错误", "购物车合并登录前后的商品", "优惠券叠加规则写错了",
           "库存预热脚本启动太慢", "日志里看不到请求编号"]
# An English developer's CJK: a pasted error message, a label, a one-word reply.
STRAY = ["I got this error: 连接超时，请稍后重试 when calling the payments API",
         "change the submit button label to 提交 on the checkout page", "好的"]


def english(mem: Memory, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        thing = THINGS[i % len(THINGS)]
        mem.prompt("s1", f"why does the {thing} fail after the deploy number {i}?")
        mem.obs("s1", "shop", f"The {thing} failed after deploy {i}", narrative=f"A stale config made the {thing} fail.")


def chinese(mem: Memory, texts: list[str]) -> None:
    for text in texts:
        mem.prompt("s1", text)
        mem.obs("s1", "shop", text, narrative=f"{text}：已修复并补了测试")


def config(**env: str) -> settings.Config:
    return settings.load(environ={**os.environ, **env})


def test_written_in_cjk_means_most_of_the_words() -> None:
    assert written_in_cjk("修复 test_login 的超时问题") and written_in_cjk("予約の二重登録を防ぐ")
    assert not any(written_in_cjk(text) for text in STRAY[:2])
    assert not written_in_cjk("Fix the login timeout") and not written_in_cjk("")


def test_an_english_store_with_some_cjk_in_it_stays_on_minilm(data_dir: Path) -> None:
    mem = Memory(data_dir)
    mem.session("s1", "shop", "/w/shop")
    english(mem, 40)
    for text in STRAY:
        mem.prompt("s1", text)
    chinese(mem, CHINESE[:3])  # a few Chinese prompts too: 4 rows of 89 written in CJK
    auto = config(CLAUDE_MEM_EMBEDDER="auto")
    share = store_share(mem.conn)
    assert (share.rows, share.cjk) == (89, 7)
    choice = choose(auto, mem.conn)
    assert choice.name == "minilm" and "8% of the 89 newest" in choice.reason, choice.reason
    assert not (data_dir / CHOICE_FILE).exists() and in_use(auto) == "minilm"
    mem.close()


def test_a_store_written_in_chinese_goes_multilingual_and_stays(data_dir: Path) -> None:
    mem = Memory(data_dir)
    mem.session("s1", "shop", "/w/shop")
    auto = config(CLAUDE_MEM_EMBEDDER="auto")
    chinese(mem, CHINESE[:4])
    assert choose(auto, mem.conn).name == "minilm"  # 8 rows, all Chinese: not yet enough to judge
    chinese(mem, CHINESE[4:6])
    english(mem, 20)
    choice = choose(auto, mem.conn)  # 12 rows of 52 in Chinese
    assert (choice.name, choice.switched) == ("multilingual", True), choice.reason
    assert "23% of the 52 newest" in choice.reason
    assert json.loads((data_dir / CHOICE_FILE).read_text())["embedder"] == "multilingual"
    assert in_use(auto) == "multilingual"  # every index made from the config now
    english(mem, 300, start=20)  # the newest rows all English again: kept
    kept = choose(auto, mem.conn)
    assert (kept.name, kept.switched) == ("multilingual", False)
    assert kept.reason == ("auto: 23% of the 52 newest prompts and observations are written in Chinese, Japanese or Korean"
                           " when it switched (kept since)")
    # A forced setting, and a shared server (one collection for a team), are not judged.
    assert choose(config(CLAUDE_MEM_EMBEDDER="minilm"), mem.conn).name == "minilm"
    assert choose(config(CLAUDE_MEM_EMBEDDER="auto", CLAUDE_MEM_CHROMA_URL="http://127.0.0.1:9"), mem.conn).name == "minilm"
    mem.close()


def served(data_dir: Path) -> dict:
    """The service's status once it is up and has indexed every row."""
    assert client.call(str(data_dir), "ping", timeout_s=60, wait=True)["version"]
    deadline = time.monotonic() + 120
    while True:
        status = client.call(str(data_dir), "status", timeout_s=10)
        if status["index_lag"] == 0 and not status["index"]["busy"]:
            return status
        assert time.monotonic() < deadline, "the service did not index the memory"
        time.sleep(0.1)


@pytest.mark.slow  # a real memory service (or the export of a whole store) for seconds
def test_the_service_switches_a_store_to_multilingual_as_chinese_rows_arrive(data_dir: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_EMBEDDER", "auto")
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INDEX", "1")
    mem = Memory(data_dir)
    mem.session("s1", "shop", "/w/shop")
    english(mem, 10)
    mem.prompt("s1", STRAY[2])  # "好的"
    status = served(data_dir)
    assert status["embedder"]["answering"] == "minilm" and status["embedder"]["reason"].startswith("auto: 5% of the 21")
    chinese(mem, CHINESE)  # 25 of 45 rows now: the indexing thread sees it and the service switches
    deadline = time.monotonic() + 120
    while (status := served(data_dir))["embedder"]["answering"] != "multilingual":
        assert time.monotonic() < deadline, status
        time.sleep(0.2)
    # The share when it switched: the rows may still have been arriving.
    assert status["embedder"]["name"] == "multilingual" and re.match(r"auto: \d+% of the \d+ newest", status["embedder"]["reason"])
    # Across languages, which only the multilingual model can do.
    answer = client.call(str(data_dir), "search", {"query": "the rules for stacking coupons were wrong", "limit": 3}, timeout_s=60)
    assert answer["embedder"] == "multilingual" and answer["mode"] == "hybrid"
    assert answer["hits"][0]["title"] == CHINESE[9], [h["title"] for h in answer["hits"]]
    text = invoke("status").output
    assert "embedder  multilingual (multilingual-e5-small" in text, text
    assert re.search(r"auto: \d+% of the \d+ newest prompts and observations are written in Chinese, Japanese or Korean when it"
                     r" switched \(kept since\)", text), text
    assert "in sync" in text  # the e5 collection holds every row
    # MiniLM's index answered while the multilingual one was filled.
    log = (data_dir / "logs" / "claude-mem.log").read_text()
    filled, answers = "its index is filled from SQLite", "the multilingual index holds every row: it answers searches now"
    assert filled in log and answers in log and log.index(filled) < log.index(answers), log
    mem.close()
    # Kept: a service started again over the same store runs it at once.
    stop_service(str(data_dir))
    assert served(data_dir)["embedder"]["answering"] == "multilingual"
