"""The observer's bill: an observation the session already holds is refused and counted, and
`stats` shows what the observer costs per 1,000 tool events (tokens, and money once
observer_prices is set). Real processes: hooks, `claude-mem worker` driving the real
claude-agent-sdk against the fake Claude CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.store import records
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, insert_observation
from claude_mem.worker import echoes
from tests.cli_helpers import invoke_json
from tests.worker_helpers import GOOD_XML, SUMMARY_XML, fake_env, fake_log, play_demo, run_worker

NEW_XML = ("<observation><type>discovery</type><title>calc.py has no tests for mul()</title>"
           "<facts><fact>test_calc.py covers add() only</fact></facts><narrative>Seen while fixing add().</narrative>"
           "</observation>")


@pytest.mark.slow
def test_a_repeat_of_a_stored_observation_is_refused_and_counted_and_stats_bill_per_1000_events(tmp_path: Path,
                                                                                                  data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    echo = GOOD_XML.replace("the operator was wrong", "said again in other words")  # same type, title, facts
    # Both turns in one batch: each turn's observations, then its summary.
    replies = [GOOD_XML + SUMMARY_XML + echo + "\n" + NEW_XML + SUMMARY_XML]
    env = fake_env(tmp_path, [{"reply": r} for r in replies], CLAUDE_MEM_OBSERVER_PRICES="1,5,0.1,1.25")
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    assert sorted(o["title"] for o in invoke_json("observations")) == ["add() subtracted instead of adding",
                                                                       "calc.py has no tests for mul()"]
    tool_events = sum(1 for r in invoke_json("queue") if r["kind"] == "tool")
    report = invoke_json("stats", env=env)
    [observer] = [s["observer"] for s in report["sessions"] if s["session_id"] == "sess-demo"]
    assert observer["echoes_refused"] == 1 and observer["tool_events"] == tool_events
    bill = report["observer_per_1000_events"]
    scale = 1000 / tool_events
    assert bill["tool_events"] == tool_events and bill["output_tokens"] == round(observer["output_tokens"] * scale)
    billed = (observer["input_tokens"] + 5 * observer["output_tokens"] + 0.1 * observer["cache_read_input_tokens"]
              + 1.25 * observer["cache_creation_input_tokens"]) * scale
    assert bill["billed_equivalent_tokens"] == round(billed) and bill["cost"] == round(billed / 1e6, 4)
    human = subprocess.run([sys.executable, "-m", "claude_mem", "stats"], capture_output=True, text=True,
                           env={**os.environ, **env}, timeout=60).stdout
    assert f"observer per 1,000 tool events ({tool_events} observed)" in human and "at observer_prices" in human
    assert "1 repeated observation(s) refused" in human


def test_repeats_are_the_same_type_title_and_facts_or_a_title_the_recap_showed(data_dir: Path) -> None:
    config = settings.load()
    config.ensure_dirs()
    conn = connect(config.db_path)
    stored = Observation(type="bugfix", title="Login  crash fixed", narrative="first words",
                         facts=["auth.py holds a lock", "tests pass"])
    with transaction(conn):
        for sid in ("s1", "s2"):
            records.ensure_session(conn, sid, project="p", cwd=None, transcript_path=None)
        insert_observation(conn, "s1", "p", stored, prompt_number=1)
    told_again = Observation(type="bugfix", title="login crash fixed", narrative="other words", subtitle="new",
                             facts=["Tests pass", "auth.py  holds a lock"])
    assert echoes.repeats(conn, "s1", told_again)
    assert not echoes.repeats(conn, "s2", told_again), "another session's memory is not this one's"
    assert not echoes.repeats(conn, "s1", Observation(type="bugfix", title="Login crash fixed", facts=["a new fact"]))
    assert not echoes.repeats(conn, "s1", Observation(type="discovery", title="Login crash fixed",
                                                      facts=["auth.py holds a lock", "tests pass"]))
    shown = echoes.shown_titles(["Login crash fixed", " "])
    assert echoes.repeats(conn, "s1", Observation(type="discovery", title="LOGIN crash fixed", facts=["x"]), shown)
    conn.close()


@pytest.mark.parametrize("raw, expected", [("1,5,0.1,1.25", [1.0, 5.0, 0.1, 1.25]), ("", []), ([1, 5, 0.1, 1.25], [1.0, 5.0, 0.1, 1.25])])
def test_observer_prices_are_four_numbers_or_none(raw: object, expected: list[float]) -> None:
    assert settings.SETTINGS["observer_prices"].parse(raw) == expected


@pytest.mark.parametrize("raw", ["1,5,0.1", "1,5,x,1", "1,5,-0.1,1.25", [True, 1, 1, 1], "1,5,0.1,1.25,2"])
def test_observer_prices_refuse_what_is_not_a_price_table(raw: object) -> None:
    with pytest.raises(settings.SettingsError, match="four prices"):
        settings.SETTINGS["observer_prices"].parse(raw)


@pytest.mark.slow
def test_a_conversation_past_observer_context_tokens_is_renewed_and_its_recap_is_not_stored_again(tmp_path: Path,
                                                                                                  data_dir: Path) -> None:
    play_demo(tmp_path / "proj")
    long_reply = SUMMARY_XML + "\nNotes: " + "the add() fix was checked against the failing test. " * 100  # ~1,300 tokens out
    recap_echo = ("<observation><type>change</type><title>add() subtracted instead of adding</title>"
                  "<facts><fact>worded otherwise</fact></facts></observation>")
    replies = [GOOD_XML, long_reply, recap_echo + NEW_XML, SUMMARY_XML]
    # Batches of 2,000 characters: turn 1's events (~840), then its end (1,500) with turn 2's edit,
    # then turn 2's end, whose summary the recap's reply leaves out (asked for again).
    env = fake_env(tmp_path, [{"reply": r} for r in replies], CLAUDE_MEM_OBSERVER_CONTEXT_TOKENS="1000",
                   CLAUDE_MEM_BATCH_CHARS="2000")
    proc = run_worker("sess-demo", env)
    assert proc.returncode == 0, proc.stderr
    log = fake_log(tmp_path)
    assert len([e for e in log if e["event"] == "start"]) == 2, "turn 1's summary took the conversation past 1,000 tokens"
    sent = [json.dumps(e) for e in log if e["event"] == "recv" and '"type": "user"' in json.dumps(e)]
    assert len(sent) == 4 and "continues an earlier observation" in sent[2] and "add() subtracted" in sent[2]
    assert not any("continues an earlier observation" in m for m in sent[:2] + sent[3:])
    assert sorted(o["title"] for o in invoke_json("observations")) == ["add() subtracted instead of adding",
                                                                       "calc.py has no tests for mul()"]
    [observer] = [s["observer"] for s in invoke_json("stats")["sessions"] if s["session_id"] == "sess-demo"]
    assert observer["echoes_refused"] == 1


def test_the_bench_bills_a_prompt_cache_from_the_requests_breakpoints() -> None:
    """bench/cache_bill.py: a prefix under Haiku's 4,096 tokens is never cached; a longer one is
    written once at its breakpoint and read by the next request that starts with it."""
    from bench.cache_bill import CacheBill

    system = [{"type": "text", "text": "s" * 20000, "cache_control": {"type": "ephemeral"}}]  # 5,000 tokens
    small = CacheBill()
    for _ in range(2):
        small.add({"system": [{"type": "text", "text": "s" * 400, "cache_control": {"type": "ephemeral"}}],
                   "messages": [{"role": "user", "content": "hi"}]}, "ok")
    assert small.usage["cache_read"] == small.usage["cache_write"] == 0 and small.usage["input"] > 200
    bill = CacheBill()
    first = [{"role": "user", "content": [{"type": "text", "text": "a" * 400, "cache_control": {"type": "ephemeral"}}]}]
    bill.add({"system": system, "messages": first}, "r" * 40)
    assert bill.usage["cache_write"] >= 5000 and bill.usage["cache_read"] == 0
    second = [{"role": "user", "content": [{"type": "text", "text": "a" * 400}]},
              {"role": "assistant", "content": [{"type": "text", "text": "r" * 40}]},
              {"role": "user", "content": [{"type": "text", "text": "b" * 400, "cache_control": {"type": "ephemeral"}}]}]
    written = bill.usage["cache_write"]
    bill.add({"system": system, "messages": second}, "r" * 40)
    assert bill.usage["cache_read"] == written, "the first request's prefix is read back"
    assert bill.billed_tokens() == pytest.approx(bill.usage["input"] + 0.1 * bill.usage["cache_read"]
                                                 + 1.25 * bill.usage["cache_write"] + 5 * bill.usage["output"])
