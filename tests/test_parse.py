"""parse_reply: the observer model's XML replies, as Haiku really writes them, into Observations
and a Summary without losing content, and without ever raising or hanging."""

from __future__ import annotations

import re
import time
from xml.sax.saxutils import escape

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from claude_mem.kinds import OBSERVATION_TYPES
from claude_mem.store.memories import Observation, Summary
from claude_mem.worker.parse import ParseResult, parse_reply

NO_BLOCK = "no <observation> or <summary> block found"

HAIKU_REPLY = """\
<observation>
  <type>bugfix</type>
  <title>Fixed off-by-one in queue claim batching</title>
  <subtitle>claim_batch returned one event too many when the limit was reached</subtitle>
  <facts>
    <fact>claude_mem/store/queue.py: claim_batch used `<=` instead of `<` against max_batch</fact>
    <fact>Batches are now capped at settings.max_batch (default 20)</fact>
  </facts>
  <narrative>The worker claimed max_batch + 1 events per batch, so the last event of a full batch
    was processed twice after a restart.

    Switching the comparison fixed it; test_worker covers the boundary.</narrative>
  <concepts><concept>queue</concept><concept>off-by-one</concept></concepts>
  <files_read><file>claude_mem/store/queue.py</file></files_read>
  <files_modified><file>claude_mem/store/queue.py</file><file>tests/test_worker.py</file></files_modified>
</observation>"""

SUMMARY_REPLY = """\
<summary>
  <request>Fix the duplicated events after a worker restart</request>
  <investigated>queue.py claim logic and the worker loop</investigated>
  <learned>claim_batch compared with &lt;= so a full batch took one event too many</learned>
  <completed>Fixed the comparison and added a boundary test</completed>
  <next_steps>Run the end-to-end suite on CI</next_steps>
  <notes>None</notes>
  <files_read><file>claude_mem/store/queue.py</file></files_read>
  <files_edited><file>claude_mem/store/queue.py</file></files_edited>
</summary>"""


def obs_xml(body: str) -> str:
    return f"<observation>{body}</observation>"


def one(text: str) -> Observation:
    result = parse_reply(text)
    assert len(result.observations) == 1, result
    return result.observations[0]


# --- layout: blocks, prose, fences, whitespace --------------------------------------------------

def test_full_observation_every_field() -> None:
    result = parse_reply(HAIKU_REPLY)
    assert result.problems == []
    assert result.summary is None
    assert result.usable()
    assert result.observations == [Observation(
        type="bugfix",
        title="Fixed off-by-one in queue claim batching",
        subtitle="claim_batch returned one event too many when the limit was reached",
        narrative="The worker claimed max_batch + 1 events per batch, so the last event of a full batch\n"
                  "was processed twice after a restart.\n\n"
                  "Switching the comparison fixed it; test_worker covers the boundary.",
        facts=["claude_mem/store/queue.py: claim_batch used `<=` instead of `<` against max_batch",
               "Batches are now capped at settings.max_batch (default 20)"],
        concepts=["queue", "off-by-one"],
        files_read=["claude_mem/store/queue.py"],
        files_modified=["claude_mem/store/queue.py", "tests/test_worker.py"],
    )]


def test_prose_and_markdown_fences_around_blocks_are_ignored() -> None:
    second = obs_xml("<type>discovery</type><title>Hooks run with a 60 s timeout</title>")
    text = f"Here are the observations for this batch:\n\n```xml\n{HAIKU_REPLY}\n{second}\n```\n\nLet me know if you need more."
    result = parse_reply(text)
    assert [o.title for o in result.observations] == ["Fixed off-by-one in queue claim batching", "Hooks run with a 60 s timeout"]
    assert not any("```" in o.narrative or "Here are" in o.narrative for o in result.observations)
    assert result.problems == []


def test_several_blocks_interleaved_with_text_keep_order() -> None:
    text = ("First, the bug:\n" + obs_xml("<type>bugfix</type><title>A</title>")
            + "\nThen a decision I noticed -- the team chose SQLite:\n" + obs_xml("<type>decision</type><title>B</title>")
            + "\nAnd finally\n" + obs_xml("<type>refactor</type><title>C</title>") + "\nThat's all.")
    result = parse_reply(text)
    assert [(o.type, o.title) for o in result.observations] == [("bugfix", "A"), ("decision", "B"), ("refactor", "C")]


def test_whitespace_normalised_per_field_kind() -> None:
    o = one(obs_xml("""
        <type>
            feature
        </type>
        <title>
            Added   the\tdigest
            command
        </title>
        <subtitle>  one   line  </subtitle>
        <narrative>
            First   paragraph,
               second line.



            Second paragraph.
        </narrative>
        <facts>
            <fact>
                spaced    out
            </fact>
        </facts>"""))
    assert o.type == "feature"
    assert o.title == "Added the digest command"
    assert o.subtitle == "one line"
    assert o.narrative == "First paragraph,\nsecond line.\n\nSecond paragraph."
    assert o.facts == ["spaced out"]


# --- text content: entities, raw < and &, CDATA -------------------------------------------------

def test_entities_are_decoded() -> None:
    o = one(obs_xml("<type>change</type><title>AT&amp;T &lt;tag&gt; &quot;q&quot; &apos;a&apos; &#65;&#x263A;</title>"))
    assert o.title == "AT&T <tag> \"q\" 'a' A\u263a"


def test_raw_lt_and_amp_survive_verbatim() -> None:
    o = one(obs_xml(
        "<type>bugfix</type><title>Vec<String> parsing & more</title>"
        "<narrative>if a < b && c then we return Vec<String> and the text after it survives; x<y, 1 <2.</narrative>"
        "<facts><fact>HashMap<K, V> & BTreeMap<K,V> differ</fact><fact>a<b</fact></facts>"))
    assert o.title == "Vec<String> parsing & more"
    assert o.narrative == "if a < b && c then we return Vec<String> and the text after it survives; x<y, 1 <2."
    assert o.facts == ["HashMap<K, V> & BTreeMap<K,V> differ", "a<b"]


def test_unknown_entities_and_invalid_char_refs_are_kept_as_written() -> None:
    o = one(obs_xml("<type>change</type><title>a&nbsp;b &mdash; &#0; &#x110000; &#99999999; & ;</title>"))
    assert o.title == "a&nbsp;b &mdash; &#0; &#x110000; &#99999999; & ;"


def test_cdata_content_is_verbatim_even_with_markup_inside() -> None:
    o = one(obs_xml("<type>discovery</type><title>T</title>"
                    "<narrative><![CDATA[if (a < b && c) { x = \"</narrative>\"; }]]> then more</narrative>"))
    assert o.narrative == 'if (a < b && c) { x = "</narrative>"; } then more'


def test_our_own_tag_names_mentioned_in_text_stay_text() -> None:
    o = one(obs_xml("<type>feature</type><title>Parser handles <summary> blocks</title>"
                    "<narrative>Each <observation> may carry a <title> and <facts>; the <summary> comes last.</narrative>"))
    assert o.title == "Parser handles <summary> blocks"
    assert o.narrative == "Each <observation> may carry a <title> and <facts>; the <summary> comes last."


def test_characters_xml_cannot_hold_are_kept_and_cut_nothing() -> None:
    # NUL is text like any other: never dropped, never where a field ends.
    result = parse_reply(obs_xml("<type>change</type><title>bad\x00 \x07chars\ufffe</title>"
                                 "<narrative>before\x00after\x1b[0m \ud83d</narrative><facts><fact>a\x00b</fact></facts>")
                         + "<summary><request>x\x00y</request></summary>")
    [o] = result.observations
    assert (o.title, o.narrative, o.facts) == ("bad\x00 \x07chars\ufffe", "before\x00after\x1b[0m \ufffd", ["a\x00b"])
    assert result.summary is not None and result.summary.request == "x\x00y" and result.problems == []


def test_no_entity_expansion_no_dtd_no_file_access() -> None:
    xxe = ('<?xml version="1.0"?><!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">'
           '<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
           + obs_xml("<type>change</type><title>&xxe;</title><narrative>&b;&b;&b;</narrative>"))
    o = one(xxe)
    assert o.title == "&xxe;"
    assert o.narrative == "&b;&b;&b;"


def test_attributes_on_our_tags_are_ignored_not_fatal() -> None:
    o = one('<observation id="3"><type lang="en">bugfix</type><title class=\'x\'>T</title></observation>')
    assert (o.type, o.title) == ("bugfix", "T")


# --- types --------------------------------------------------------------------------------------

@pytest.mark.parametrize(("written", "expected"), [
    ("fix", "bugfix"), ("Bug", "bugfix"), ("HOTFIX", "bugfix"),
    ("feat", "feature"), ("Enhancement", "feature"), ("implementation", "feature"),
    ("learning", "discovery"), ("Insight", "discovery"), ("finding", "discovery"), ("investigation", "discovery"),
    ("config", "change"), ("configuration", "change"), ("update", "change"), ("chore", "change"), ("docs", "change"),
    ("design", "decision"), ("Architecture", "decision"),
    ("cleanup", "refactor"), ("restructure", "refactor"), ("decisions", "decision"),
])
def test_type_synonyms_map_to_known_types(written: str, expected: str) -> None:
    result = parse_reply(obs_xml(f"<type>{written}</type><title>T</title>"))
    o = result.observations[0]
    assert o.type == expected
    assert o.raw_type == written
    assert any(written in p and expected in p for p in result.problems)


@pytest.mark.parametrize(("written", "expected"), [("Bugfix", "bugfix"), (" DISCOVERY ", "discovery"), ("Decision", "decision"),
                                                  ("refactor", "refactor"), ("bug-fix", "bugfix"), ("Bug Fix", "bugfix")])
def test_known_types_any_case_or_spacing_are_not_flagged(written: str, expected: str) -> None:
    result = parse_reply(obs_xml(f"<type>{written}</type><title>T</title>"))
    assert result.observations[0].type == expected
    assert result.observations[0].raw_type is None
    assert result.problems == []


def test_unknown_type_becomes_change_with_raw_type_flagged() -> None:
    result = parse_reply(obs_xml("<type>Performance  Tuning</type><title>T</title>"))
    o = result.observations[0]
    assert (o.type, o.raw_type) == ("change", "Performance Tuning")
    assert any("unknown type" in p and "Performance Tuning" in p for p in result.problems)


def test_missing_type_becomes_change_with_empty_raw_type() -> None:
    result = parse_reply(obs_xml("<title>T</title>"))
    o = result.observations[0]
    assert (o.type, o.raw_type) == ("change", "")
    assert any("no <type>" in p for p in result.problems)


# --- missing fields -----------------------------------------------------------------------------

def test_missing_title_comes_from_subtitle_first() -> None:
    result = parse_reply(obs_xml("<type>change</type><subtitle>Renamed the worker log</subtitle><narrative>Long story. More.</narrative>"))
    assert result.observations[0].title == "Renamed the worker log"
    assert any("no title" in p for p in result.problems)


def test_missing_title_comes_from_first_sentence_of_narrative() -> None:
    o = one(obs_xml("<type>discovery</type><narrative>The hook runs in 40 ms. It spawns the worker lazily.</narrative>"))
    assert o.title == "The hook runs in 40 ms."


def test_missing_title_comes_from_first_fact_and_is_cut_to_about_100_chars() -> None:
    fact = "word " * 60
    o = one(obs_xml(f"<type>discovery</type><facts><fact>{fact}</fact><fact>second</fact></facts>"))
    assert o.title.startswith("word word")
    assert o.title.endswith("…")
    assert 50 <= len(o.title) <= 100


def test_empty_title_element_counts_as_missing() -> None:
    o = one(obs_xml("<type>bugfix</type><title>   </title><narrative>Fixed the race in spawn.</narrative>"))
    assert o.title == "Fixed the race in spawn."


def test_observation_with_nothing_to_say_is_dropped_others_kept() -> None:
    text = (obs_xml("<type>bugfix</type><subtitle>only a subtitle</subtitle><concepts><concept>x</concept></concepts>")
            + obs_xml("<type>bugfix</type><title>Kept</title>"))
    result = parse_reply(text)
    assert [o.title for o in result.observations] == ["Kept"]
    assert any("observation 1 dropped" in p for p in result.problems)


def test_prose_inside_a_block_without_fields_becomes_the_narrative() -> None:
    result = parse_reply("<observation>The CLI now retries once on a 529 overload error.</observation>")
    o = result.observations[0]
    assert o.narrative == "The CLI now retries once on a 529 overload error."
    assert o.title == o.narrative
    assert any("outside any field" in p for p in result.problems)


# --- lists --------------------------------------------------------------------------------------

def test_lists_as_child_elements_strip_dedupe_keep_order() -> None:
    o = one(obs_xml("<type>change</type><title>T</title>"
                    "<facts><fact> b </fact><fact>a</fact><fact></fact><fact>b</fact><fact>  </fact></facts>"
                    "<concepts><concept>sqlite</concept><concept>wal</concept><concept>sqlite</concept></concepts>"
                    "<files_read><file>a.py</file><file>a.py</file></files_read>"))
    assert o.facts == ["b", "a"]
    assert o.concepts == ["sqlite", "wal"]
    assert o.files_read == ["a.py"]


def test_lists_written_as_plain_text_are_split() -> None:
    o = one(obs_xml("""<type>change</type><title>T</title>
        <facts>
          - The queue uses WAL mode, see db.py
          * Busy timeout is 5,000 ms
          1. Retries back off exponentially
          2) Max 5 attempts
          - The queue uses WAL mode, see db.py
        </facts>
        <concepts>sqlite, wal,  queue ,, sqlite</concepts>
        <files_read>
          claude_mem/store/db.py
          claude_mem/store/queue.py
        </files_read>
        <files_modified>a.py, b.py</files_modified>"""))
    assert o.facts == ["The queue uses WAL mode, see db.py", "Busy timeout is 5,000 ms",
                       "Retries back off exponentially", "Max 5 attempts"]
    assert o.concepts == ["sqlite", "wal", "queue"]
    assert o.files_read == ["claude_mem/store/db.py", "claude_mem/store/queue.py"]
    assert o.files_modified == ["a.py", "b.py"]


def test_item_tags_are_interchangeable_and_files_edited_counts_as_modified() -> None:
    o = one(obs_xml("<type>change</type><title>T</title><facts><file>a fact in a file tag</file></facts>"
                    "<files_edited><fact>x.py</fact></files_edited>"))
    assert o.facts == ["a fact in a file tag"]
    assert o.files_modified == ["x.py"]


# --- truncation and sloppy structure ------------------------------------------------------------

def test_truncated_mid_title_keeps_what_is_there() -> None:
    result = parse_reply("<observation><type>bugfix</type><title>Fixed the")
    assert [(o.type, o.title) for o in result.observations] == [("bugfix", "Fixed the")]
    assert any("cut off" in p for p in result.problems)


def test_truncated_inside_a_closing_tag_does_not_leak_the_fragment() -> None:
    o = one("<observation><type>bugfix</type><title>T</title><narrative>The daemon now exits cleanly.</narr")
    assert o.narrative == "The daemon now exits cleanly."


def test_truncated_second_block_does_not_harm_the_first() -> None:
    text = HAIKU_REPLY + "\n<observation><type>feature</type><title>Added recap</title><facts><fact>recap.txt is"
    result = parse_reply(text)
    assert [o.title for o in result.observations] == ["Fixed off-by-one in queue claim batching", "Added recap"]
    assert result.observations[0] == parse_reply(HAIKU_REPLY).observations[0]
    assert result.observations[1].facts == ["recap.txt is"]
    assert any("observation 2 was cut off" in p for p in result.problems)
    assert not any("observation 1 was cut off" in p for p in result.problems)


def test_forgotten_closing_tag_is_ended_by_the_next_field() -> None:
    o = one(obs_xml("<type>refactor</type><title>Split loop.py<subtitle>Moved spawn out</subtitle>"
                    "<facts><fact>one<fact>two</facts><narrative>N</narrative>"))
    assert (o.title, o.subtitle, o.narrative) == ("Split loop.py", "Moved spawn out", "N")
    assert o.facts == ["one", "two"]


def test_unclosed_block_is_ended_by_the_next_block() -> None:
    result = parse_reply("<observation><type>bugfix</type><title>A</title>\n<observation><type>bugfix</type><title>B</title></observation>")
    assert [o.title for o in result.observations] == ["A", "B"]
    assert any("observation 1 was cut off" in p for p in result.problems)


# --- summaries ----------------------------------------------------------------------------------

def test_summary_every_field() -> None:
    result = parse_reply("Here is the summary:\n" + SUMMARY_REPLY)
    assert result.observations == []
    assert result.problems == []
    assert result.summary == Summary(
        request="Fix the duplicated events after a worker restart",
        investigated="queue.py claim logic and the worker loop",
        learned="claim_batch compared with <= so a full batch took one event too many",
        completed="Fixed the comparison and added a boundary test",
        next_steps="Run the end-to-end suite on CI", notes="None",
        files_read=["claude_mem/store/queue.py"], files_edited=["claude_mem/store/queue.py"])


def test_observation_where_a_summary_was_expected_is_returned_as_is() -> None:
    result = parse_reply(HAIKU_REPLY)
    assert result.summary is None
    assert len(result.observations) == 1


def test_observations_and_a_summary_together() -> None:
    result = parse_reply(HAIKU_REPLY + "\n" + SUMMARY_REPLY)
    assert len(result.observations) == 1
    assert result.summary is not None and result.summary.request.startswith("Fix the duplicated")


def test_two_summaries_keep_the_last() -> None:
    result = parse_reply("<summary><request>first</request></summary>\n<summary><request>second</request></summary>")
    assert result.summary is not None and result.summary.request == "second"
    assert any("2 <summary> blocks" in p for p in result.problems)


def test_a_reply_for_several_turns_keeps_every_summary_in_order_with_the_request_it_names() -> None:
    """A batch spanning turns asks for a <summary request="N"> after each turn's observations:
    every summary is kept with its number, and each observation with how many came before it."""
    reply = ("<observation><type>change</type><title>one</title></observation>"
             "<summary request=\"3\"><request>fix it</request></summary>\nprose between blocks\n"
             "<observation><type>change</type><title>two</title></observation>"
             "<observation><type>change</type><title>three</title></observation>"
             "<summary request='#4'><request>test it</request></summary><summary><request>unnamed</request></summary>"
             "<observation><type>change</type><title>four</title></observation>")
    result = parse_reply(reply)
    assert [(n, s.request) for n, s in result.summaries] == [(3, "fix it"), (4, "test it"), (None, "unnamed")]
    assert [(o.title, after) for o, after in zip(result.observations, result.after, strict=True)] == [
        ("one", 0), ("two", 1), ("three", 1), ("four", 3)]
    assert parse_reply('<summary request="x"><request>r</request></summary>').summaries[0][0] is None
    hidden = parse_reply("<observation><title>\x1f</title></observation><summary request='2'><request>a\x00b</request>"
                         "</summary><observation><title>kept</title></observation>")
    assert [(o.title, after) for o, after in zip(hidden.observations, hidden.after, strict=True)] == [("kept", 1)]
    assert hidden.summaries == [(2, hidden.summary)] and hidden.summary is not None and hidden.summary.request == "a\x00b"


def test_two_summaries_last_cut_off_keeps_the_last_complete_one() -> None:
    result = parse_reply("<summary><request>first</request></summary>\n<summary><request>second</request><learned>that the")
    assert result.summary is not None and result.summary.request == "first"
    assert any("last complete one" in p for p in result.problems)


def test_truncated_lone_summary_is_still_used() -> None:
    result = parse_reply("<summary><request>Add a digest</request><completed>Wrote the digest com")
    assert result.summary is not None
    assert (result.summary.request, result.summary.completed) == ("Add a digest", "Wrote the digest com")
    assert any("cut off" in p for p in result.problems)


def test_empty_summary_is_dropped() -> None:
    result = parse_reply("<summary><request> </request><notes></notes></summary>")
    assert result.summary is None
    assert not result.usable()
    assert any("dropped" in p for p in result.problems)


# --- nothing found ------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "   \n\t", "Nothing worth recording in this batch.", "<nothing/>",
                                  "```xml\n```", "<observations></observations>", "</observation>"])
def test_no_block_gives_an_empty_result_with_a_note(text: str) -> None:
    result = parse_reply(text)
    assert (result.observations, result.summary) == ([], None)
    assert not result.usable()
    assert any(NO_BLOCK in p for p in result.problems)


# --- caps ---------------------------------------------------------------------------------------

def test_absurd_lengths_are_capped_with_a_note() -> None:
    result = parse_reply(obs_xml(f"<type>change</type><title>{'t' * 300}</title><facts><fact>{'f' * 1500}</fact></facts>"
                                 f"<narrative>{'n' * 6000}</narrative>"))
    o = result.observations[0]
    assert (len(o.title), len(o.facts[0]), len(o.narrative)) == (200, 1000, 5000)
    assert o.title.startswith("t" * 150)
    assert sum("cut to" in p for p in result.problems) == 3


# --- time ---------------------------------------------------------------------------------------

def _timed(text: str) -> tuple[ParseResult, float]:
    # CPU time of this thread: what the parser costs, not how long the machine's other work
    # (pytest-xdist workers, the suite's real processes) kept it waiting for a core.
    start = time.thread_time()
    result = parse_reply(text)
    return result, time.thread_time() - start


def test_one_megabyte_reply_parses_in_well_under_a_second() -> None:
    narrative = ("The worker reads Vec<String> & HashMap<K, V> values; if a < b && c it retries. " * 40).strip()
    block = obs_xml(f"<type>discovery</type><title>Block</title><narrative>{narrative}</narrative>"
                    "<facts><fact>x < y</fact><fact>a & b</fact></facts>") + "\nSome prose between blocks.\n"
    text = block * (1_000_000 // len(block))
    result, elapsed = _timed(text)
    assert len(result.observations) == 1_000_000 // len(block)
    assert result.observations[-1].narrative == narrative
    assert elapsed < 1.0  # about 0.1 s on an idle core


@pytest.mark.slow
@pytest.mark.parametrize("text", [
    "<" * 1_000_000, "&" * 1_000_000, "<title>" * 140_000, "</narrative>" * 80_000, "<![CDATA[" * 100_000,
    "<observation><title" + " " * 1_000_000, "<title" + ' a="x"' * 150_000, "<observation><facts>" + "<fact>" * 150_000,
    "<observation><narrative>" + "</title><summary>" * 50_000, "<observation><title>x</title></observation>" * 20_000,
])
def test_adversarial_megabyte_inputs_stay_linear(text: str) -> None:
    _, elapsed = _timed(text)
    assert elapsed < 10.0  # about 1.2 s at worst on an idle core (3 s on a loaded 2-core box); quadratic would take minutes


# --- properties ---------------------------------------------------------------------------------

def _check_invariants(result: ParseResult) -> None:
    for o in result.observations:
        assert o.type in OBSERVATION_TYPES
        # Control characters Python counts as whitespace (\x0b, \x0c, \x1c-\x1f) are kept as written,
        # like letters; real whitespace is normalised around them.
        as_letters = re.sub(r"[\x0b\x0c\x1c-\x1f]", "x", o.title)
        assert o.title and len(o.title) <= 200 and as_letters == " ".join(as_letters.split())
        for items in (o.facts, o.concepts, o.files_read, o.files_modified):
            assert all(items) and len(set(items)) == len(items)
    assert all(isinstance(p, str) for p in result.problems)
    assert result.usable() == bool(result.observations or result.summary)


FRAGMENTS = [
    "<observation>", "</observation>", "<summary>", "</summary>", "<type>", "</type>", "bugfix", "<title>", "</title>",
    "<subtitle>", "<narrative>", "</narrative>", "<facts>", "</facts>", "<fact>", "</fact>", "<concepts>", "<concept>",
    "</concepts>", "<files_read>", "<file>", "</file>", "<request>", "</request>", "<observation/>", "<title/>",
    "<![CDATA[", "]]>", "&amp;", "&", "&lt", "<", ">", "</", "&#0;", "&#x110000;", "&#65;", "<!--", "-->",
    "<!DOCTYPE r [<!ENTITY e 'x'>]>", "&e;", "<?xml version='1.0'?>", "```xml", "```", "\n", " ", "- ", ",",
    "Vec<String>", "a < b && c", "\x00", "\ud800", "<Title >", '<fact id="1">', "<nothing/>",
]
fragment_soup = st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=6), max_size=60).map("".join)
fast = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast
@given(st.text())
def test_never_raises_on_arbitrary_text(text: str) -> None:
    result, elapsed = _timed(text)
    _check_invariants(result)
    assert elapsed < 2.0


@fast
@given(fragment_soup)
def test_never_raises_on_shuffled_xml_fragments(text: str) -> None:
    result, elapsed = _timed(text)
    _check_invariants(result)
    assert elapsed < 2.0


@fast
@given(st.integers(min_value=0, max_value=len(HAIKU_REPLY + SUMMARY_REPLY)))
def test_any_truncation_never_raises_and_never_invents(cut: int) -> None:
    full = parse_reply(HAIKU_REPLY + SUMMARY_REPLY)
    result = parse_reply((HAIKU_REPLY + SUMMARY_REPLY)[:cut])
    _check_invariants(result)
    assert len(result.observations) <= 1
    if result.observations:  # whatever was recovered is the start of what was written
        got, want = result.observations[0], full.observations[0]
        assert want.title.startswith(got.title) or got.title in (want.subtitle, want.narrative.split("\n")[0], want.facts[0])
        assert want.narrative.startswith(got.narrative)
        assert all(w.startswith(g) for g, w in zip(got.facts, want.facts, strict=False))
    if cut >= len(HAIKU_REPLY):
        assert result.observations == full.observations


_word = st.text(st.characters(exclude_categories=("Cs", "Cc", "Cn", "Zs", "Zl", "Zp")), min_size=1, max_size=12)
_line = st.lists(_word, min_size=1, max_size=8).map(" ".join)
_paragraph = st.lists(_line, min_size=1, max_size=3).map("\n".join)
_narrative = st.lists(_paragraph, max_size=3).map("\n\n".join)
_items = st.lists(_line, max_size=4, unique=True)
observations = st.builds(Observation, type=st.sampled_from(OBSERVATION_TYPES), title=_line, subtitle=st.just("") | _line,
                         narrative=_narrative, facts=_items, concepts=_items, files_read=_items, files_modified=_items)


def render(o: Observation) -> str:
    def items(tag: str, item: str, values: list[str]) -> str:
        return f"<{tag}>" + "".join(f"<{item}>{escape(v)}</{item}>" for v in values) + f"</{tag}>"

    return ("<observation>\n"
            f"  <type>{o.type}</type>\n  <title>{escape(o.title)}</title>\n  <subtitle>{escape(o.subtitle)}</subtitle>\n"
            f"  {items('facts', 'fact', o.facts)}\n  <narrative>{escape(o.narrative)}</narrative>\n"
            f"  {items('concepts', 'concept', o.concepts)}\n  {items('files_read', 'file', o.files_read)}\n"
            f"  {items('files_modified', 'file', o.files_modified)}\n</observation>")


@pytest.mark.slow
@fast
@given(st.lists(observations, min_size=1, max_size=3), st.sampled_from(["", "Here you go:\n```xml\n"]))
def test_rendered_observations_round_trip(expected: list[Observation], prefix: str) -> None:
    result = parse_reply(prefix + "\n".join(render(o) for o in expected) + ("\n```" if prefix else ""))
    assert result.observations == expected
    assert result.problems == []


summaries = st.builds(Summary, request=_line, investigated=_narrative, learned=_narrative, completed=_line,
                      next_steps=_narrative, notes=_narrative, files_read=_items, files_edited=_items)


@pytest.mark.slow
@fast
@given(summaries)
def test_rendered_summary_round_trips(expected: Summary) -> None:
    body = "".join(f"<{name}>{escape(getattr(expected, name))}</{name}>"
                   for name in ("request", "investigated", "learned", "completed", "next_steps", "notes"))
    files = "".join(f"<{tag}>" + "".join(f"<file>{escape(v)}</file>" for v in getattr(expected, tag)) + f"</{tag}>"
                    for tag in ("files_read", "files_edited"))
    result = parse_reply(f"<summary>{body}{files}</summary>")
    assert result.summary == expected


# Raw, unescaped text: the letters cannot spell any of our tags, an entity name or CDATA, so
# every <, > and & in it is stray and must come back exactly as written.
_raw = st.text(st.sampled_from("xyz<>&;#/![]='\" "), min_size=1, max_size=40).filter(lambda s: s.strip())


@fast
@given(_raw, _raw, _raw)
def test_unescaped_lt_gt_amp_come_back_verbatim(title: str, narrative: str, fact: str) -> None:
    o = one(obs_xml(f"<type>change</type><title>{title}</title><narrative>{narrative}</narrative><facts><fact>{fact}</fact></facts>"))
    assert (o.title, o.narrative, o.facts) == (" ".join(title.split()), " ".join(narrative.split()), [" ".join(fact.split())])


def test_a_title_of_control_characters_alone_is_no_title() -> None:
    """Kept through lxml as stand-ins and put back, \\x1c-\\x1f are whitespace to Python: such an
    observation has no title, so none is stored (found by the reply fuzzer)."""
    result = parse_reply("<OBSERVATION>\x1f")
    assert result.observations == [] and any("control characters only" in p for p in result.problems)
    [kept] = parse_reply("<observation><type>change</type><title>a\x1fb</title></observation>").observations
    assert kept.title == "a\x1fb"


def test_control_characters_at_a_titles_ends_are_kept_as_written() -> None:
    """Python's str.split() counts \\x1f as whitespace, the parser does not: it is kept (found by the
    reply fuzzer as `<observation>0\\x1f`)."""
    [kept] = parse_reply("<observation>0\x1f").observations
    assert kept.title == "0\x1f"
    _check_invariants(parse_reply("<observation>0\x1f"))
