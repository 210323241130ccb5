"""The heuristic synthesizer (no model): observations that say what happened.

Hand-written tool events in the shapes Claude Code hands to PostToolUse hooks (Bash's
{stdout, stderr, interrupted}, a failure's {error}, Edit's originalFile), then real transcripts:
the project's fixture and the largest shared one, stored as the hooks store them and drained by
a real worker process, measured with bench/heuristic_titles.py's checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.heuristic_titles import is_generic, measure, names_something, subjects
from claude_mem.demo import CALC_BUGGY, PYTEST_FAILED
from claude_mem.kinds import OBSERVATION_TYPES
from claude_mem.replay import find_transcripts
from claude_mem.worker.events import Event
from claude_mem.worker.heuristic import observe, summarize
from tests.conftest import TRANSCRIPTS

CWD = "/home/dev/calc"
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "transcripts" / "7d3c1f0e-5b2a-4c8e-9a61-2f4e8b0c9d17.jsonl"
SHARED = find_transcripts(TRANSCRIPTS) if TRANSCRIPTS.is_dir() else []
# Issue 18 measured the largest real session: 59% of its titles were "Ran N command(s)" and the like.
LARGEST = [max(SHARED, key=lambda p: p.stat().st_size)] if SHARED else []


def tool(name: str, tool_input: dict[str, Any], response: Any = None, *, error: str | None = None) -> Event:
    tool.n += 1  # type: ignore[attr-defined]
    return Event(id=tool.n, kind="tool", tool_name=name, tool_input=tool_input,  # type: ignore[attr-defined]
                 tool_response={"error": error} if error is not None else response, is_error=error is not None,
                 prompt_number=1, created_at_epoch=1_700_000_000_000, cwd=CWD)


tool.n = 0  # type: ignore[attr-defined]


def bash(command: str, stdout: str = "", *, error: str | None = None, **extra: Any) -> Event:
    return tool("Bash", {"command": command, "description": "", **extra},
                {"stdout": stdout, "stderr": "", "interrupted": False}, error=error)


def edit(path: str, old: str, new: str, original: str) -> Event:
    return tool("Edit", {"file_path": f"{CWD}/{path}", "old_string": old, "new_string": new},
                {"filePath": f"{CWD}/{path}", "oldString": old, "newString": new, "originalFile": original})


def titles(events: list[Event]) -> list[str]:
    return [o.title for o in observe(events)]


def test_a_failing_test_and_the_edit_that_fixed_it_are_one_bugfix() -> None:
    events = [tool("Read", {"file_path": f"{CWD}/calc.py"}, {"type": "text", "file": {"content": CALC_BUGGY}}),
              bash("python -m pytest -q test_calc.py", error="Exit code 1\n" + PYTEST_FAILED),
              edit("calc.py", "return a - b", "return a + b", CALC_BUGGY),
              bash("python -m pytest -q test_calc.py", ".  [100%]\n1 passed in 0.01s")]
    [obs] = observe(events)
    assert obs.type == "bugfix"
    assert obs.title == "test_add failed: assert add(2, 3) == 5, got -1 — fixed in calc.py add()"
    assert obs.facts[0] == "test_add failed because add(2, 3) returned -1, not 5"
    assert "(test_calc.py:5)" in obs.facts[1] and obs.facts[2].endswith("ok — 1 passed")
    assert obs.files_modified == [f"{CWD}/calc.py"] and obs.files_read == [f"{CWD}/calc.py"]
    summary = summarize("test_add fails, please fix it", events, "Fixed add().")
    assert summary.completed == obs.title and summary.next_steps == ""


def test_a_failure_without_a_fix_stays_a_failure_and_is_the_next_step() -> None:
    events = [bash("cd /home/dev/calc && uv run pytest -q test_calc.py 2>&1 | tail -20", error="Exit code 1\n" + PYTEST_FAILED),
              edit("calc.py", "return a - b", "return a - b  # FIXME", CALC_BUGGY)]
    found = observe(events)
    assert [o.title for o in found] == [
        "pytest -q test_calc.py: 1 failed — test_add: assert add(2, 3) == 5, got -1 (test_calc.py:5)",
        "Edited calc.py: add()",
    ]
    assert found[0].type == "discovery" and "error" in found[0].concepts
    assert summarize("fix it", events, "").next_steps.startswith("pytest -q test_calc.py still fails: 1 failed — test_add")


@pytest.mark.parametrize(("events", "title"), [
    ([bash("python -c \"\nimport app\napp.run()\n\"", description="Start the app once",
           error='Exit code 1\nTraceback (most recent call last):\n  File "<string>", line 3, in <module>\n'
                 '  File "/home/dev/calc/app/main.py", line 12, in run\n    user = cfg["user"]\n'
                 '  File "/usr/lib/python3.12/site-packages/x.py", line 3, in get\nKeyError: \'user\'')],
     "python script (Start the app once) failed: KeyError: 'user' (main.py:12)"),
    ([bash("mix test", error="Exit code 2\n\n  1) test adds numbers (CalcTest)\n     test/calc_test.exs:5\n"
                             "     Assertion with == failed\n     code:  assert Calc.add(2, 3) == 5\n     left:  -1\n"
                             "     right: 5\n\nFinished in 0.03 seconds\n1 test, 1 failure")],
     "mix test: 1 test, 1 failure — test adds numbers (CalcTest): assert Calc.add(2, 3) == 5, left: -1, right: 5"
     " (calc_test.exs:5)"),
    ([bash("go test ./...", error="Exit code 1\n--- FAIL: TestAdd (0.00s)\n    calc_test.go:8: add(2, 3) = -1, want 5\n"
                                  "FAIL\nFAIL\texample.com/calc\t0.002s")],
     "go test ./... failed: TestAdd: add(2, 3) = -1, want 5 (calc_test.go:8)"),
    ([bash("ruff check .", error="Exit code 1\ncalc.py:3:1: F401 [*] `os` imported but unused\nFound 1 error.")],
     "ruff check . failed: F401 [*] `os` imported but unused (calc.py:3)"),
    ([bash("git add calc.py && git commit -m \"$(cat <<'EOF'\nfix: add() adds\n\nIt subtracted.\nEOF\n)\"",
           "[main 3f2a9c1] fix: add() adds\n 1 file changed, 1 insertion(+), 1 deletion(-)")],
     "Committed 3f2a9c1: fix: add() adds"),
    ([bash("git push origin main", "To github.com:dev/calc.git\n   1a2b3c4..5d6e7f8  main -> main")],
     "git push: pushed main"),
    ([bash("uv add httpx 'rich>=13'", "Resolved 12 packages in 30ms\nInstalled 2 packages in 5ms")],
     "Added dependency httpx, rich>=13 (uv add)"),
    ([bash("npm run dev", "", run_in_background=True),
      tool("BashOutput", {"bash_id": "b1"}, {"stdout": "  VITE v5.0.0  ready in 300 ms\n\n  ➜  Local:   http://localhost:5173/\n"})],
     "Started server: npm run dev"),
    ([bash("uvicorn app.main:app --port 8000", "INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)")],
     "Started server: uvicorn app.main:app --port 8000 on http://127.0.0.1:8000"),
    ([bash("ls scripts", "release.sh\n")], "ls scripts: release.sh"),
    ([bash("git status", "On branch main\nnothing to commit"), bash("git log --oneline -3", "3f2a9c1 fix: add() adds")],
     "Ran git status, git log --oneline -3"),
    ([tool("Read", {"file_path": f"{CWD}/README.md"}, error="<tool_use_error>File does not exist.</tool_use_error>"),
      tool("Read", {"file_path": f"{CWD}/calc.py"}, error="<tool_use_error>Sibling tool call errored</tool_use_error>")],
     "Read README.md failed: File does not exist. (+1 more)"),
    ([tool("Edit", {"file_path": f"{CWD}/setup.py", "old_string": "a", "new_string": "b"},
           error="The user doesn't want to proceed with this tool use. The tool use was rejected.")],
     "Edit setup.py rejected by the user"),
])
def test_each_outcome_is_named(events: list[Event], title: str) -> None:
    assert titles(events) == [title]


@pytest.mark.parametrize(("event", "title"), [
    (edit("shop.py", "return sum(prices)", "return round(sum(prices), 2)",
          "import os\n\nclass Cart:\n    def total(self, prices):\n        if prices:\n            return sum(prices)\n"),
     "Edited shop.py: Cart.total()"),
    (edit("calc.py", "def add(a, b):\n", 'def add(a, b):\n    """Return a + b."""\n', "def add(a, b):\n    return a + b\n"),
     "Edited calc.py: add() docstring"),
    (edit("calc.py", "import os\n", "import os\nimport sys\n", "import os\n\ndef add(a, b):\n    return a + b\n"),
     "Edited calc.py: imports"),
    (edit("app.ts", "  return a - b;", "  return a + b;", "export function add(a: number, b: number) {\n  return a - b;\n}\n"),
     "Edited app.ts: add()"),
    (tool("Write", {"file_path": f"{CWD}/geometry.py", "content": "class Point:\n    def norm(self):\n        return 0\n"},
          {"type": "create", "filePath": f"{CWD}/geometry.py"}),
     "Created geometry.py: Point, norm()"),
])
def test_an_edit_names_the_definitions_it_touched(event: Event, title: str) -> None:
    [obs] = observe([event])
    assert obs.title == title and obs.files_modified == [event.tool_input["file_path"]]


def test_the_bench_check_catches_the_old_generic_titles() -> None:
    """The measure must be able to fail: generic titles that name nothing score low."""
    names = subjects([{"command": "uv run pytest -q tests/test_x.py"}, {"file_path": "/p/calc.py"}])
    for old in ("Ran 4 command(s)", "Ran 5 command(s), 2 failed", "3 tool error(s) seen"):
        assert is_generic(old) and not names_something(old, names)
    assert names_something("pytest -q test_x.py: 3 passed", names) and names_something("Edited calc.py: add()", names)
    assert not is_generic("Edited calc.py: add()")


@pytest.mark.slow
@pytest.mark.parametrize("transcript", [FIXTURE, *LARGEST], ids=lambda p: p.stem[:8])
def test_a_replayed_session_has_titles_that_name_things(transcript: Path, tmp_path: Path) -> None:
    """Issue 18's bar: at most 10% generic titles and none naming nothing, whether the worker
    drains the queue in big batches or keeps up with the hooks (about one event per batch)."""
    for result in measure(transcript, tmp_path, [12000, 500]):
        assert result["not_done"] == 0 and result["observations"] > 0
        assert result["generic_share"] <= 0.10, result["titles"]
        assert result["nameless"] == [], result["nameless"]
        if transcript == FIXTURE and result["batch_chars"] == 12000:
            assert ("test_auth failed: AuthError: 401 for headers {'Authorization': '[REDACTED]'} — fixed in config.py"
                    in result["titles"])


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=40),
                     lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
                     max_leaves=12)
_TOOLS = st.sampled_from(["Bash", "Edit", "MultiEdit", "Write", "Read", "Grep", "Glob", "Task", "AskUserQuestion",
                          "ExitPlanMode", "WebFetch", "NotebookEdit", "mcp__x__y", None])
_INPUTS = st.fixed_dictionaries({}, optional={
    "command": st.text(max_size=80) | _JSON, "file_path": st.text(max_size=30) | _JSON, "old_string": st.text(max_size=60) | _JSON,
    "new_string": st.text(max_size=60) | _JSON, "content": st.text(max_size=60) | _JSON, "edits": _JSON,
    "questions": _JSON, "plan": _JSON, "description": _JSON, "run_in_background": _JSON}) | _JSON


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_TOOLS, _INPUTS, _JSON | st.text(max_size=200), st.booleans(), st.sampled_from(["tool", "finalize"])),
                max_size=6))
def test_any_events_give_observations_without_raising(specs: list[tuple[Any, Any, Any, bool, str]]) -> None:
    """The worker calls observe() and summarize() on whatever the hooks stored: they never raise."""
    events = [Event(id=n, kind=kind, tool_name=name, tool_input=i, tool_response=r, is_error=failed, prompt_number=1,
                    created_at_epoch=0, cwd=CWD) for n, (name, i, r, failed, kind) in enumerate(specs)]
    for obs in observe(events):
        assert obs.title.strip() and len(obs.title) <= 150 and obs.type in OBSERVATION_TYPES
    summarize("request", events, "last")
