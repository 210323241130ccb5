"""The heuristic synthesizer's parts, one at a time (tests/test_heuristic.py drives them together):
a command as a person names it and its kind, what an output says, what an edit touched."""

from __future__ import annotations

import pytest

from claude_mem.demo import PYTEST_FAILED
from claude_mem.text.shorten import clip
from claude_mem.worker.heuristic import bash, edits, outputs

CWD = "/home/dev/calc"


@pytest.mark.parametrize(("command", "shown", "kind"), [
    (f"cd {CWD} && source .venv/bin/activate && python -m pytest -q tests/test_calc.py 2>&1 | tail -20",
     "pytest -q tests/test_calc.py", "test"),
    ('git add -A && git commit -m "Fix add()"', 'git add -A && git commit -m "Fix add()"', "commit"),
    ("git commit -m \"$(cat <<'EOF'\nFix the parser\n\nbody\nEOF\n)\"", "git commit", "commit"),
    ('uv pip install requests "httpx>=0.27"', 'uv pip install requests "httpx>=0.27"', "install"),
    ("npm run dev -- --port 5173", "npm run dev -- --port 5173", "server"),
    ("ruff check . && make build", "ruff check . && make build", "lint"),
    ("git status", "git status", "git"),
    ('python -c "\nimport x\nprint(1)"', 'python -c "…"', "other"),
])
def test_a_command_as_a_person_names_it_and_its_kind(command: str, shown: str, kind: str) -> None:
    assert bash.display(command, CWD) == shown
    assert bash.kind(command) == kind


def test_what_a_command_gives_away() -> None:
    install = 'uv pip install requests "httpx>=0.27" -r req.txt --index-url http://mirror -e .'
    assert bash.packages(install) == ["requests", "httpx>=0.27", "packages from req.txt"]
    assert bash.install_tool(install) == "uv pip install"
    assert bash.packages("pip install -e .") is None and bash.kind("pip install -e .") != "install"
    assert bash.commit_message("git commit -m \"$(cat <<'EOF'\nFix the parser\n\nbody\nEOF\n)\"") == "Fix the parser"
    assert bash.commit_message("git commit --message='One line'") == "One line"
    assert bash.commit_message("git commit") == ""
    assert bash.port("uvicorn app:app --port 8001") == "8001" and bash.port("make") == ""
    # A background command is a server unless it is a test run.
    assert bash.kind("python app.py", {"run_in_background": True}) == "server"
    assert bash.kind("pytest -x", {"run_in_background": True}) == "test"
    assert bash.is_script('python -c "\nprint(1)"') and not bash.is_script("python -c 'print(1)'")


def test_two_runs_are_the_same_check_when_tool_and_targets_match() -> None:
    assert bash.check_key("pytest -x tests/test_calc.py") == bash.check_key("cd x && pytest tests/test_calc.py")
    assert bash.check_key("pytest tests/a.py") != bash.check_key("pytest tests/b.py")
    assert bash.check_key("ruff check . && make build") == "make build"


def test_clip_cuts_at_a_word_with_an_ellipsis() -> None:
    assert clip("short  text", 40) == "short text"
    cut = clip("word " * 30, 40)
    assert len(cut) <= 40 and cut.endswith("word…")


def test_a_failing_pytest_run_names_its_test_assertion_and_place() -> None:
    out = outputs.read(PYTEST_FAILED, failed=True, cwd=CWD)
    assert (out.tests, out.failures, out.failed_tests) == ("1 failed", 1, ["test_add"])
    assert out.assertion == "assert add(2, 3) == 5, got -1"
    assert out.explanation == "add(2, 3) returned -1, not 5" and out.where == "test_calc.py:5"
    assert out.why() == "test_add failed because add(2, 3) returned -1, not 5"
    assert out.reason() == "test_add: assert add(2, 3) == 5, got -1 (test_calc.py:5)"


def test_a_traceback_gives_the_exception_and_where_it_was_raised() -> None:
    text = f'Exit code 1\nTraceback (most recent call last):\n  File "{CWD}/main.py", line 12, in <module>\n' \
           "    print(d['user'])\nKeyError: 'user'\n"
    out = outputs.read(text, failed=True, cwd=CWD)
    assert (out.failed, out.exit_code, out.error, out.where) == (True, 1, "KeyError: 'user'", "main.py:12")
    assert out.reason() == "KeyError: 'user' (main.py:12)" and out.why() == ""


@pytest.mark.parametrize("noise", [
    "/home/dev/.bashrc: line 12: pyenv: command not found\nbash: warning: setlocale: LC_ALL: cannot change locale (en_US.UTF-8)",
    "/home/dev/.zshrc:source:5: no such file or directory: /opt/tool/env.zsh\n/home/dev/.zshrc:9: command not found: nvm",
    "-bash: /etc/profile.d/conda.sh: line 3: conda: command not found\nstty: 'standard input': Inappropriate ioctl for device",
])
def test_what_the_shell_startup_files_print_is_not_the_commands_failure(noise: str) -> None:
    text = f"Exit code 2\n{noise}\nmake: *** [Makefile:3: build] Error 2\ngcc: error: calc.c: No such file or directory\n"
    out = outputs.read(text, failed=True, cwd=CWD)
    assert out.error == "gcc: error: calc.c: No such file or directory"
    assert out.first_line == "make: *** [Makefile:3: build] Error 2"
    # With nothing else to go by, the noise is what there is (the command was `source ~/.bashrc`).
    alone = outputs.read(f"Exit code 1\n{noise}\n", failed=True, cwd=CWD)
    assert alone.first_line and alone.reason() != "exit 1"


def test_a_passing_run_is_only_its_tally() -> None:
    out = outputs.read("....s\n3 passed, 1 skipped in 0.01s\n", failed=False)
    assert (out.failed, out.tests, out.failures, out.failed_tests, out.error) == (False, "3 passed, 1 skipped", 0, [], "")


def test_tool_errors_commits_pushes_and_servers() -> None:
    assert outputs.tool_error("<tool_use_error>File does not exist.</tool_use_error>") == "File does not exist."
    assert outputs.tool_error("The user doesn't want to proceed with this tool use.") == "rejected by the user"
    assert outputs.commit("[main 1a2b3c4d5] Fix add()\n 1 file changed") == ("1a2b3c4", "Fix add()")
    assert outputs.commit("nothing to commit, working tree clean") is None
    assert outputs.pushed("To github.com:a/b.git\n   1a2b3c4..5d6e7f8  main -> main\n") == "main"
    assert outputs.listening("INFO: Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C)") == "http://127.0.0.1:8000"


def test_an_edit_is_named_by_the_definition_around_it() -> None:
    known: dict[str, str] = {}
    edits.remember_read(f"{CWD}/calc.py", {"file": {"content": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n"
                                                                 "    return a * b\n"}}, known)
    change = edits.describe("Edit", {"file_path": f"{CWD}/calc.py", "old_string": "    return a - b",
                                     "new_string": "    return a + b"}, {}, known)
    assert (change.symbols, change.snippet) == (["add()"], "return a + b")
    assert edits.label(change, "calc.py") == "calc.py: add()"


def test_a_new_file_lists_its_definitions_and_prose_has_none() -> None:
    new = edits.describe("Write", {"file_path": f"{CWD}/parser.py", "content": "class Parser:\n    pass\n\ndef parse(x):\n"
                                                                                "    return x\n"}, {}, {})
    assert (new.symbols, new.what) == (["Parser", "parse()"], "new file")
    assert edits.label(new, "parser.py") == "parser.py: Parser, parse()"
    prose = edits.describe("Edit", {"file_path": f"{CWD}/README.md", "old_string": "old text", "new_string": "new text"}, {}, {})
    assert (prose.symbols, edits.label(prose, "README.md")) == ([], "README.md")
