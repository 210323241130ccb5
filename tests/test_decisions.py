"""Memory that helps on a coding task and does not mislead (issue 51): a decision a person states
is a memory of its own, with its scope; rival decisions are marked as conflicting and shown
together or not at all; a rule for another component stays out; decisions come before notes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from claude_mem.ask.answer import DONT_KNOW, ask
from claude_mem.marks.apply import mark_stored
from claude_mem.push.digest import build_digest
from claude_mem.recall.search import search
from claude_mem.settings import load
from claude_mem.store import marks
from claude_mem.store.db import connect, transaction
from claude_mem.text.scope import in_scope, paths_in, scope_of
from claude_mem.worker.heuristic.decisions import stated, statements
from tests.cli_helpers import invoke, invoke_json
from tests.push_helpers import Memory
from tests.push_helpers import ask as push

# --- what counts as a stated decision -------------------------------------------------------------

STATED = [
    ("Thanks. Decision: services/audit/events.log is append-only. Never rewrite past lines. Please remove the truncate call.",
     "services/audit/events.log is append-only. Never rewrite past lines."),
    ("Ok. We decided that money in services/billing is always integer cents, never floats. Fix invoice.py accordingly.",
     "Money in services/billing is always integer cents, never floats."),
    ("From now on, every timestamp stored in the backend is UTC. Fix daily.py.", "Every timestamp stored in the backend is UTC."),
    ("Never deploy a DAG with catchup enabled. Fix daily_revenue.py.", "Never deploy a DAG with catchup enabled."),
    ("The rule is that client/ retries only GET requests, at most 3 times.", "Client/ retries only GET requests, at most 3 times."),
    ("Convention: warehouse column names are snake_case.", "Warehouse column names are snake_case."),
    ("Rule for web/dashboard: no inline styles, colours come from the theme.",
     "For web/dashboard: no inline styles, colours come from the theme."),
]
NOT_STATED = [
    "I never remember the command to regenerate the fixtures. What is it?",
    "Should we always squash merge? What do you think?",
    "We haven't decided on the release date yet, just update the changelog.",
    "Never mind the search box for now; can you make the sidebar collapsible?",
    "```\n# Decision: this is a comment in a pasted file\n```\nWhat does this file do?",
    "> Decision: quoted from the old wiki\nIs this still true?",
    "<task-notification>Decision: never deploy on Fridays</task-notification>",
]


@pytest.mark.parametrize(("prompt", "rule"), STATED)
def test_a_stated_decision_is_its_rule_in_the_users_words(prompt: str, rule: str) -> None:
    assert [s for s, _ in statements(prompt)] in ([rule], [rule[:1].lower() + rule[1:]])


@pytest.mark.parametrize("prompt", NOT_STATED)
def test_questions_habits_quotes_and_code_state_nothing(prompt: str) -> None:
    assert stated(prompt) == []


def test_a_decision_observation_keeps_its_scope_and_the_files_it_names() -> None:
    [obs] = stated("Decision: in services/billing, invoice.py never sums floats. Thanks!", files=["/r/services/billing/invoice.py"])
    assert (obs.type, obs.scope, obs.files_read) == ("decision", "services/billing", ["/r/services/billing/invoice.py"])
    assert obs.title == "In services/billing, invoice.py never sums floats." and "stated" in obs.concepts
    # Claude's closing message counts only for what it plainly records as decided, not for a loose "always".
    assert stated("Done. Always run the tests before pushing.", by="reply") == []
    [agreed] = stated("Done: converted the barrel.\n\nFrom now on: web/src uses named exports only.", by="reply")
    assert agreed.title == "Web/src uses named exports only." or agreed.title == "web/src uses named exports only."
    # "Decision update:" stays in what was said: it tells a replacement from a rival.
    [update] = stated("Decision update: the log is now rotated monthly instead.")
    assert update.narrative.startswith("Decision update:") and update.title == "The log is now rotated monthly instead."


def test_a_turn_stores_its_decision_once_through_a_real_worker(data_dir: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    from claude_mem.hooks import store_in_process

    repo = tmp_path / "ledger"
    repo.mkdir()
    base = {"session_id": "s", "transcript_path": "/dev/null", "cwd": str(repo)}
    config = load()
    config.ensure_dirs()
    conn = connect(config.db_path)
    store_in_process(config, conn, [
        {**base, "hook_event_name": "UserPromptSubmit", "prompt": "Decision: events.log is append-only. Please fix nightly.py.",
         "prompt_id": "p1"},
        {**base, "hook_event_name": "PostToolUse", "tool_name": "Edit", "tool_use_id": "t1", "prompt_id": "p1",
         "tool_input": {"file_path": f"{repo}/scripts/nightly.py", "old_string": "trim()", "new_string": "pass"},
         "tool_response": {"filePath": f"{repo}/scripts/nightly.py", "oldString": "trim()", "newString": "pass"}},
        {**base, "hook_event_name": "Stop", "prompt_id": "p1",
         "last_assistant_message": "Done. Decision recorded: events.log is append-only."}])
    conn.close()
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", "s", "--drain", "--synthesizer", "heuristic"],
                          env={**os.environ, "CLAUDE_MEM_SEMANTIC_INDEX": "0"}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    conn = connect(config.db_path)
    try:
        decided = conn.execute("SELECT title, subtitle FROM observations WHERE type = 'decision'").fetchall()
        request = conn.execute("SELECT request FROM session_summaries").fetchone()[0]
        refused = conn.execute("SELECT coalesce(sum(echoes_refused), 0) FROM worker_runs").fetchone()[0]
    finally:
        conn.close()
    assert [tuple(d) for d in decided] == [("events.log is append-only.", "Stated by the user; applies to the whole project")]
    assert request == "Please fix nightly.py." and refused == 0  # the summary keeps the ask; nothing stored twice


def test_a_scope_is_read_from_the_statement_and_matched_to_a_task() -> None:
    assert scope_of("Money in services/billing is integer cents") == "services/billing"
    assert scope_of("serve/ uses dynamic batching") == "serve"
    assert scope_of("Keep timestamps in Australia/Sydney local time") == ""  # not a path of ours
    assert scope_of("services/audit/events.log is append-only") == ""  # a file is what the rule is about
    assert paths_in("Fix web/src/pages/Product.tsx and /v1/teams") == ["web/src/pages/product.tsx"]
    assert in_scope("services/audit", "In web/dashboard, trim access.log") is False  # another path named
    assert in_scope("services/audit", "The audit log is huge") is True  # its name said
    assert in_scope("services/audit", "Add a discount field") is None  # says nothing: the rule is kept
    assert in_scope("web/dashboard", "make the mobile badge red", known=["mobile"]) is False  # another known area named
    assert in_scope("", "anything") is True


def test_the_models_decision_keeps_its_scope_and_its_conflicts() -> None:
    from claude_mem.worker.parse import parse_reply

    reply = ("<observation><type>decision</type><title>Amounts are integer cents</title><scope>./services/billing/</scope>"
             "<conflicts>obs:12</conflicts></observation><observation><type>decision</type><title>Timestamps are UTC</title>"
             "<scope>the whole project</scope></observation>")
    first, second = parse_reply(reply).observations
    assert (first.scope, first.conflicts, second.scope) == ("services/billing", [12], "")


def test_titles_name_paths_from_the_projects_root_whatever_machine_recorded_them() -> None:
    from claude_mem.worker.events import Event
    from claude_mem.worker.heuristic import observe

    def read(path: str, n: int) -> Event:
        return Event(id=n, kind="tool", tool_name="Read", tool_input={"file_path": path}, tool_response={"type": "text"},
                     is_error=False, prompt_number=1, created_at_epoch=1, cwd="/home/dev/ledger")

    def run(command: str, n: int) -> Event:
        return Event(id=n, kind="tool", tool_name="Bash", tool_input={"command": command},
                     tool_response={"error": "Exit code 1\nboom"}, is_error=True, prompt_number=1, created_at_epoch=1,
                     cwd="/home/dev/ledger")

    windows = "C:\\Users\\dev\\AppData\\Local\\Temp\\tmp1a2b\\ledger\\services\\billing\\invoice.py"
    said = " ".join(o.title + " " + " ".join(o.facts) for o in observe([
        read("/home/dev/ledger/services/audit/writer.py", 1), run(f"python {windows} --check", 2)]))
    assert "services/billing/invoice.py" in said and "C:\\" not in said and "/home/dev" not in said and "Temp" not in said


# --- rival and replacing decisions: the marks ----------------------------------------------------

def _decision(mem: Memory, session: str, text: str, at: int, project: str = "shop") -> int:
    [obs] = stated(text)
    return mem.obs(session, project, obs.title, "decision", at=at, narrative=obs.narrative, concepts=obs.concepts, scope=obs.scope,
                   subtitle=obs.subtitle)


def _mark(mem: Memory, *ids: int) -> list[tuple[int, int, str]]:
    with transaction(mem.conn):
        return [(m.old_id, m.new_id, m.relation) for m in mark_stored(mem.conn, list(ids))]


def test_a_rival_decision_conflicts_and_an_update_supersedes(data_dir: Path, tmp_path: Path) -> None:
    mem = Memory(data_dir)
    mem.session("a", "shop", tmp_path)
    first = _decision(mem, "a", "Decision: API errors are JSON with a machine-readable code; never plain-text error bodies.", 1)
    other = _decision(mem, "a", "Decision: the web bundle uses named exports only.", 2)
    rival = _decision(mem, "a", "Decision: API errors return only a plain-text reason line; clients never parse error bodies.", 3)
    assert _mark(mem, first, other) == []
    assert _mark(mem, rival) == [(first, rival, "conflicts")]
    assert marks.superseded_ids(mem.conn, [first, rival]) == set()  # a conflict leaves both current
    assert marks.conflicting(mem.conn, [first, rival, other]) == {first: [rival], rival: [first]}
    update = _decision(mem, "a", "Decision update: API errors now follow RFC 7807 problem+json, replacing our error bodies.", 4)
    made = _mark(mem, update)
    assert len(made) == 1 and made[0][1:] == (update, "supersedes") and made[0][0] in (first, rival)
    gone = made[0][0]
    assert marks.conflicting(mem.conn, [first, rival]) == {}  # a rival replaced since is no rival any more
    assert marks.superseded_ids(mem.conn, [first, rival, update]) == {gone}
    mem.close()


def test_a_person_marks_and_undoes_a_conflict_from_either_side(data_dir: Path, tmp_path: Path) -> None:
    mem = Memory(data_dir)
    mem.session("a", "shop", tmp_path)
    one = mem.obs("a", "shop", "Timestamps are UTC", "decision", at=1)
    two = mem.obs("a", "shop", "Timestamps are Sydney local time", "decision", at=2)
    mem.close()
    assert invoke_json("marks", "add", f"obs:{two}", f"obs:{one}", "--conflicts")["relation"] == "conflicts"
    listed = invoke_json("marks")
    assert [(m["old"], m["new"], m["relation"]) for m in listed] == [(f"obs:{one}", f"obs:{two}", "conflicts")]
    shown = invoke("show", f"obs:{one}")
    assert shown.exit_code == 0 and f"conflicts with obs:{two}" in shown.output
    invoke("marks", "add", str(one), str(two), "--conflicts", "--duplicate", code=2)
    invoke("marks", "undo", str(two), str(one))  # from the newer side
    assert invoke_json("marks") == []


# --- the readers: push, digest, search, ask ----------------------------------------------------------

@pytest.fixture
def shop(data_dir: Path, tmp_path: Path) -> dict[str, int]:
    """A shop repository's memory: a rule for its billing service, one for its dashboard, two rival
    decisions on the audit log, and tool-call notes about the same files."""
    repo = tmp_path / "shop"
    repo.mkdir()
    mem = Memory(data_dir)
    mem.session("old", "shop", repo)
    ids = {
        "note": mem.obs("old", "shop", "Edited invoice.py: total() now sums price_cents for the invoice total", "change", at=1),
        "cents": _decision(mem, "old", "Rule: in services/billing, invoice amounts are always integer cents, never floats.", 2),
        "tokens": _decision(mem, "old", "Rule for web/dashboard: badge colours come from the theme tokens, no inline styles.", 3),
        "keep": _decision(mem, "old", "Decision: the audit events.log is append-only; never trim old audit entries.", 4),
        "trim": _decision(mem, "old", "Decision: trimming old audit entries out of events.log is fine after a backup to S3.", 5),
    }
    assert _mark(mem, *ids.values()) == [(ids["keep"], ids["trim"], "conflicts")]
    mem.close()
    return ids


def test_the_push_shows_decisions_first_rivals_together_and_no_other_scope(shop: dict[str, int], tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    text = push(repo, "s1", "Add a discount to the invoice total in services/billing/invoice.py")
    assert text is not None
    lines = text.splitlines()[1:-1]
    assert lines[0].startswith(f"- obs:{shop['cents']} ") and "always integer cents, never floats" in lines[0]  # whole, first
    assert any(f"obs:{shop['note']} " in line for line in lines[1:])
    assert f"obs:{shop['tokens']} " not in text
    rivals = push(repo, "s2", "Trim old audit entries from the audit events.log")
    assert rivals is not None
    [pair] = [line for line in rivals.splitlines() if f"obs:{shop['keep']}" in line or f"obs:{shop['trim']}" in line]
    assert pair.startswith(f"- obs:{shop['keep']} + obs:{shop['trim']} decisions that conflict")
    assert "append-only" in pair and "backup to S3" in pair
    # A rule for the component a prompt names comes, whatever else matched (here: nothing).
    named = push(repo, "s4", "Before the release: anything to keep in mind for billing?")
    assert named is not None and named.splitlines()[1].startswith(f"- obs:{shop['cents']} ")
    # A badge colour task in the mobile app: the dashboard's rule is not its rule.
    elsewhere = push(repo, "s3", "Make the overdue badge colour red in mobile/src/screens/Invoices.tsx, using the theme")
    assert elsewhere is None or f"obs:{shop['tokens']} " not in elsewhere


def test_the_decision_that_closed_an_investigation_comes_with_it(data_dir: Path, tmp_path: Path) -> None:
    """A later task matches the investigation's words, not the rule's: the rule comes with its session."""
    repo = tmp_path / "ledger"
    repo.mkdir()
    mem = Memory(data_dir)
    mem.session("inv", "ledger", repo)
    mem.session("other", "ledger", repo)
    found = mem.obs("inv", "ledger", "The nightly job truncates events.log and breaks the audit hash chain", "discovery", at=1)
    rule = _decision(mem, "inv", "Decision: corrections are appended as new lines; a written line never changes.", 2, "ledger")
    elsewhere = _decision(mem, "other", "Decision: dashboard badges use the theme colours.", 3, "ledger")
    mem.close()
    text = push(repo, "s1", "The nightly job truncates events.log again; should the audit chain job trim it?")
    assert text is not None
    lines = text.splitlines()[1:-1]
    assert lines[0].startswith(f"- obs:{rule} ") and any(f"obs:{found} " in line for line in lines[1:])
    assert f"obs:{elsewhere} " not in text


def test_the_digest_lists_decisions_and_rivals_as_one_line(shop: dict[str, int]) -> None:
    conn = connect(str(load().db_path))
    try:
        digest = build_digest(conn, "shop")
    finally:
        conn.close()
    section = digest.split("## Decisions and rules stated in this project (newest first)\n", 1)[1].split("\n## ", 1)[0]
    assert f"- decision obs:{shop['cents']} (" in section and "for services/billing): " in section
    assert section.count(f"obs:{shop['keep']}") == 1 and f"obs:{shop['keep']} + obs:{shop['trim']} decisions that conflict" in section
    assert "[decision] " not in digest  # not listed a second time among the recent observations


def test_search_and_ask_show_both_rivals_with_the_conflict_said(shop: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_MEM_SEMANTIC_INDEX", "0")  # words alone: the same answer whether a memory service runs or not
    config = load()
    conn = connect(str(config.db_path))
    try:
        hits = search(conn, "may old audit entries be trimmed from events.log", project="shop", limit=5).hits
        ids = [h.id for h in hits if h.kind == "observation"]
        assert shop["keep"] in ids and shop["trim"] in ids and abs(ids.index(shop["keep"]) - ids.index(shop["trim"])) == 1
        assert {h.id: h.conflicts_with for h in hits if h.conflicts_with} == {shop["keep"]: [f"obs:{shop['trim']}"],
                                                                            shop["trim"]: [f"obs:{shop['keep']}"]}
        # Cut short, a pair is left out whole rather than split.
        one = search(conn, "may old audit entries be trimmed from events.log", project="shop", limit=1).hits
        assert not any(h.conflicts_with for h in one)
        answer = ask(config, conn, "may old audit entries be trimmed from events.log?", project="shop")
        assert answer.answer != DONT_KNOW and "Decisions that conflict" in answer.answer
        assert f"obs:{shop['keep']}" in answer.refs and f"obs:{shop['trim']}" in answer.refs
        billing = ask(config, conn, "What should the invoice total in services/billing hold?", project="shop")
        assert billing.answer.splitlines()[0].startswith("- In services/billing, invoice amounts are always integer cents")
    finally:
        conn.close()


def test_search_leaves_out_the_prompt_it_was_typed_as(data_dir: Path, tmp_path: Path) -> None:
    """A task's first search is its own prompt, word for word, in a session with nothing else yet:
    not a hit. The same words asked in a session that went on are memory, and found."""
    mem = Memory(data_dir)
    mem.session("old", "shop", tmp_path)
    mem.session("new", "shop", tmp_path)
    mem.prompt("old", "Trim the audit events log")
    mem.prompt("old", "and rotate it monthly after that")
    mem.prompt("new", "Trim the audit events log")
    try:
        hits = search(mem.conn, "Trim the audit events log", project="shop", limit=5).hits
    finally:
        mem.close()
    kinds = [(h.kind, h.session_id) for h in hits]
    assert ("prompt", "old") in kinds and ("prompt", "new") not in kinds, kinds


def test_marks_json_and_views_name_conflicts(shop: dict[str, int]) -> None:
    shown = invoke_json("show", f"obs:{shop['trim']}")
    rows = shown if isinstance(shown, list) else [shown]
    assert any(r.get("conflicts_with") == [f"obs:{shop['keep']}"] for r in rows), json.dumps(shown)[:500]
