"""text/shell.py: one reading of a shell command line, shared by the pre hook's lookup key
(text/command_keys.py) and the worker's heuristic titles (worker/heuristic/bash.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from claude_mem.text.command_keys import command_key
from claude_mem.text.shell import OPERATOR, REDIRECT, WORD, commands, tokens
from claude_mem.worker.heuristic import bash as heuristic


def ran(line: str) -> list[str]:
    """What the line ran: each command's program and arguments, set-up left out."""
    return [" ".join(c.words) for c in commands(line) if not c.setup and c.words]


@pytest.mark.parametrize(("line", "expected"), [
    # Quotes: operators inside them are text; the quotes themselves go.
    ('git commit -m "fix: a; b && c | d"', ["git commit -m fix: a; b && c | d"]),
    ("grep -n 'def (x)' \"a b.py\"", ["grep -n def (x) a b.py"]),
    ("echo $'it\\'s' && make", ["echo it\\'s", "make"]),
    ("pytest tests/a\\ b.py", ["pytest tests/a b.py"]),
    # Every operator ends a command; parentheses only group.
    ("a && b || c; d | e |& f & g", ["a", "b", "c", "d", "e", "f", "g"]),
    ("(cd sub && make test) || (make clean)", ["make test", "make clean"]),
    # Set-up, assignments, wrappers with their options, runners.
    ("cd /repo && source .venv/bin/activate && export X=1 && pytest -q", ["pytest -q"]),
    ("FOO=1 BAR='a b' BAZ+=2 pytest tests", ["pytest tests"]),
    ("sudo -E -u ci env -u HOME A=1 time -p nice -n 10 nohup pytest -x", ["pytest -x"]),
    ("timeout -s KILL 60 make check", ["make check"]),
    ("command -v pytest", ["command -v pytest"]),
    ("python -m pytest tests", ["pytest tests"]),
    (".venv/bin/python3.11 -X dev -u -m pytest", ["pytest"]),
    ("python script.py --fast", ["python script.py --fast"]),
    ('python -c "print(1)"', ["python -c print(1)"]),
    ("uv run --with pytest-cov pytest -x", ["pytest -x"]),
    ("uv run -- pytest", ["pytest"]),
    ("uv pip install x", ["uv pip install x"]),
    ("poetry run python -m mypy .", ["mypy ."]),
    ("npx --yes jest --ci", ["jest --ci"]),
    ("npx -p typescript tsc --noEmit", ["tsc --noEmit"]),
    ("uvx ruff check .", ["ruff check ."]),
    ("git -C /repo -c core.pager=cat --no-pager push origin main", ["git push origin main"]),
    # Redirections are not arguments; a heredoc's body is stdin, not commands.
    ("pytest 2>&1 | tail -5", ["pytest", "tail -5"]),
    ("make >/dev/null 2>/dev/null; pytest &> log.txt", ["make", "pytest"]),
    ("cat <<EOF > f.txt\npytest\nEOF\nmake", ["cat", "make"]),
    ("cat <<-'EOF'\n\tnot a command\n\tEOF\nmake", ["cat", "make"]),
    ("git commit -m \"$(cat <<'EOF'\nDon't (break\nEOF\n)\" && git push",
     ["git commit -m $(cat <<'EOF'\nDon't (break\nEOF\n)", "git push"]),
    ("kill $(lsof -t -i:8000) `pgrep x` ${PID:-1}", ["kill $(lsof -t -i:8000) `pgrep x` ${PID:-1}"]),
    # Lines, comments, continuations, shell grammar.
    ("# the tests\npytest -q # fast\nruff check", ["pytest -q", "ruff check"]),
    ("pytest \\\n  -q", ["pytest -q"]),
    ("for f in *.py; do ruff check $f; done", ["ruff check $f"]),
    ("if pytest; then echo ok; else echo no; fi", ["pytest", "echo ok", "echo no"]),
    # Unbalanced quotes run to the end, as the shell would read them were more to come.
    ("pytest 'tests/a b", ["pytest tests/a b"]),
    ('echo "$(date', ["echo $(date"]),
    ("", []), ("   ", []), ("&& ; ||", []), ("export A=1; B=2", []),
])
def test_a_line_reads_as_its_commands(line: str, expected: list[str]) -> None:
    assert ran(line) == expected


def test_commands_keep_their_operators_set_up_and_redirections() -> None:
    parts = list(commands("cd x && FOO=1; .venv/bin/pytest -q 2>&1 >out.txt | tail -5 &"))
    assert [(c.program, c.setup, c.op) for c in parts] == [
        ("cd", True, "&&"), ("", True, ";"), ("pytest", False, "|"), ("tail", False, "&")]
    assert parts[2].args == ["-q"]
    assert [(t.kind, t.text, t.target, t.raw) for t in parts[2].tokens] == [
        (WORD, ".venv/bin/pytest", "", ".venv/bin/pytest"), (WORD, "-q", "", "-q"),
        (REDIRECT, ">&", "1", "2>&1"), (REDIRECT, ">", "out.txt", ">out.txt")]
    assert [(t.kind, t.text) for t in tokens("a\nb")] == [(WORD, "a"), (OPERATOR, "\n"), (WORD, "b")]
    # The raw form is kept for whoever shows the command: quotes and all.
    assert [t.raw for t in tokens('pip install "httpx>=0.27"')] == ["pip", "install", '"httpx>=0.27"']


# Where the two readers disagreed before they shared this one. Each row: the line, the pre
# hook's lookup key, the heuristic's title text and kind. Before: `sudo -E pytest` was keyed
# "-E pytest" and titled "sudo -E pytest" (kind other); `.venv/bin/python -m pytest` was
# "pytest" to the hook and "other" to the titles; `2>&1` was a subcommand to the hook ("pytest
# 2"); `export X=1 &&` left "&& pytest" in the title; `git -C` hid a push from the titles; the
# hook read a new line as a space (`cd x` then `pytest`: no key); options after `uv run` and
# `npx` were taken for the tool. The better reading won each time, and sudo now leaves the
# title as it always left the key.
@pytest.mark.parametrize(("line", "key", "shown", "kind"), [
    ("sudo -E pytest", "pytest", "pytest", "test"),
    ("cd /repo && PYTHONPATH=. .venv/bin/python -m pytest -q tests/x.py::test_a", "pytest tests/x.py",
     "pytest -q tests/x.py::test_a", "test"),
    ("pytest 2>&1 | tail -5", "pytest", "pytest", "test"),
    ("export FOO=1 && pytest", "pytest", "pytest", "test"),
    ("git -C /repo push origin main", "git push", "git push origin main", "push"),
    ("cd x\npytest -q", "pytest", "pytest -q", "test"),
    ("uv run --with pytest-cov pytest -x", "pytest", "pytest -x", "test"),
    ("npx --yes jest", "jest", "jest", "test"),
    ("timeout -s KILL 60 make check", "make check", "make check", "test"),
    ("time -p make", "make", "make", "build"),
    ("sudo apt-get install -y chromium", "apt-get install", "apt-get install -y chromium", "install"),
    ("git commit -m 'a; b && c' && git push", "git commit", "git commit -m 'a; b && c' && git push", "commit"),
])
def test_the_hook_and_the_titles_read_a_command_alike(line: str, key: str, shown: str, kind: str) -> None:
    assert command_key(line) == key
    assert heuristic.display(line) == shown
    assert heuristic.kind(line) == kind


def test_the_titles_keep_what_was_written_and_drop_the_noise() -> None:
    assert heuristic.segments("git commit -m 'a; b && c'") == ["git commit -m a; b && c"]  # was split inside the quotes
    assert heuristic.check_key("mix dialyzer 2>&1 | grep -E '^lib/'") == "mix dialyzer"  # was "mix dialyzer '"
    assert heuristic.display("git add -A && git commit -m \"$(cat <<'EOF'\nFix\nEOF\n)\" && git push") \
        == "git add -A && git commit && git push"  # the push after a heredoc commit was cut off
    assert heuristic.install_tool("sudo apt-get install -y chromium") == "apt-get install"
    assert heuristic.display("npm run dev &") == "npm run dev"
    assert heuristic.display("python -c 'import x\nprint(1)' && echo done") == "python -c 'import x…' && echo done"


_UNITS = st.sampled_from(["a", "pytest", " ", "\t", "\n", "'", '"', "`", "\\", "$", "$(", "${", "$'", "(", ")", "{", "}",
                          "&&", "||", ";", ";;", "|", "|&", "&", "<", ">", ">>", "2>&1", "&>", "<<", "<<-", "<<<", "EOF",
                          "#", "=", "FOO=1", "cd", "sudo", "-E", "env", "timeout", "60", "python", "-m", "uv", "run",
                          "npx", "git", "-C", "for", "do", "done", "if", "then", "fi", "é", "\x00"]) | st.text(max_size=3)


@settings(max_examples=300, deadline=None)
@given(st.lists(_UNITS, max_size=40).map("".join))
def test_any_line_reads_without_raising_and_its_tokens_are_its_own_text(line: str) -> None:
    at = 0
    for token in tokens(line):
        if token.kind != OPERATOR:  # every word and redirection is a piece of the line, in order
            found = line.find(token.raw, at)
            assert found >= 0, (line, token)
            at = found + len(token.raw)
    for part in commands(line):
        assert isinstance(part.program, str) and all(isinstance(w, str) for w in part.words)
    command_key(line)
    heuristic.display(line)
    heuristic.kind(line, {"run_in_background": True})
    heuristic.check_key(line)
    heuristic.packages(line)


# A bound on blow-ups, not a speed target (bench/hooks.py measures the pre hook): the densest
# shape, 100k one-letter commands, takes ~0.8 s of CPU here; a quadratic reading of it takes
# minutes. CPU time, not wall time: on a loaded machine the same work took 3-6 s of wall time
# and the wall-time bound failed now and then.
BLOW_UP_S = 12.0


@pytest.mark.parametrize("unit", ["pytest -q tests/x.py ", "a && b; c | d 2>&1 ", "x\n", "'", '"$(', "$(cat <<EOF\n",
                                  "cat <<EOF\n", "(((", "\\", "`", "it's\n", "cd x; ", "sudo -E FOO=1 python -m git -C . "])
def test_a_200_kb_command_reads_in_linear_time(unit: str) -> None:
    line = (unit * (200_000 // len(unit) + 1))[:200_000]
    start = time.process_time()
    command_key(line)  # lazy: the first command of interest
    heuristic.display(line)
    heuristic.kind(line)
    heuristic.check_key(line)
    heuristic.is_script(line)
    heuristic.commit_message(line)
    assert time.process_time() - start < BLOW_UP_S


def test_the_hook_reads_commands_with_nothing_but_the_language() -> None:
    code = ("import sys\nimport json\nbefore = set(sys.modules)\nimport claude_mem.text.shell\nalone = set(sys.modules)\n"
            "import claude_mem.push.failures\n"
            "print(json.dumps([sorted(alone - before), sorted(set(sys.modules) - before)]))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    alone, loaded = json.loads(run.stdout)
    assert [m for m in alone if not m.startswith("claude_mem") and m != "__future__"] == []  # no re, nothing to compile
    assert [m for m in loaded if m in ("shlex", "typing")] == []  # shlex compiled a regex in every pre hook
