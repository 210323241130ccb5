"""What a command's output says happened: the test tally, the first failing test and its
assertion, the exception and where it was raised, the commit made.

Pattern-matching only, over the text the hooks stored (already redacted and cut to head and
tail), for the runners people use most: pytest, unittest, ExUnit, Jest/Vitest, go test, cargo
test, and the usual `file:line: message` and traceback shapes of compilers and linters.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from claude_mem.text.shorten import clip

_EXIT = re.compile(r"^Exit code (\d+)\s*\n?")
_DECORATION = re.compile(r"^[\s=\-_*#~.+|<>`┃│]*$|^=+ .* =+$|^(?:platform|rootdir|cachedir|configfile|testpaths|plugins|asyncio|"
                         r"collecting|collected)[: ]")
# pytest's closing line ("==== 1 failed, 3 passed in 0.2s ===="), and its -q form.
_PYTEST_TALLY = re.compile(r"\b(\d+) (failed|passed|errors?|skipped|xfailed|xpassed)\b")
_PYTEST_END = re.compile(r"\bin [\d.]+s\b|^=+ .* =+$")
_EXUNIT = re.compile(r"\b(?:\d+ doctests?, )?(?:\d+ properties, )?\d+ tests?, \d+ failures?(?:, \d+ \w+)*")
_JEST = re.compile(r"^Tests?:?\s+(.*\d+ (?:passed|failed|total).*)$")
_CARGO = re.compile(r"test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in ")
_UNITTEST_END = re.compile(r"^(OK|FAILED)\b(?: \((.*)\))?")
_NO_TESTS = re.compile(r"\bno tests (?:ran|collected)\b|\b0 selected\b")

_FAILED_NODE = re.compile(r"^(?:FAILED|ERROR) (\S+?)(?: - (.+))?$")
_VERBOSE_NODE = re.compile(r"^(\S+::\S+) (?:FAILED|ERROR)\b")
_PYTEST_HEADER = re.compile(r"^_{3,} (?:ERROR (?:at|collecting) )?(\S.*?) _{3,}$")
_EXUNIT_TEST = re.compile(r"^\s*\d+\) test (.+?) \(([\w.]+)\)\s*$")
_JEST_TEST = re.compile(r"^\s*● (.+?)\s*$")
_GO_TEST = re.compile(r"^\s*--- FAIL: (\S+)")
_CARGO_TEST = re.compile(r"^---- (\S+) stdout ----")
_UNITTEST_TEST = re.compile(r"^(?:FAIL|ERROR): (\w+) \(([\w.]+)\)")

_WHERE_CALL = re.compile(r"^E\s+\+\s+where (.+?) = (.+)$")
_ASSERT = re.compile(r"^assert (.+?) (==|!=|<=|>=|<|>|not in|in|is not|is) (.+)$")
_PY_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_PYTEST_WHERE = re.compile(r"^(\S+\.py):(\d+): (?:in \S+|\w+)$")
_LOCATION = re.compile(r"^\s*(?:-->\s*)?((?:[\w.~-]*/)*[\w.-]+\.[A-Za-z]\w{0,5})[:(](\d+)(?:[:,]\d+)?\)?:?\s*(.*)$")
_EXCEPTION = re.compile(r"^(?:E\s+)?((?:[A-Za-z_]\w*\.)*([A-Z]\w*(?:Error|Exception|Exit|Interrupt|Failure|Fault|Warning)))"
                        r"(?::\s*(.*))?$")
_ELIXIR_EXCEPTION = re.compile(r"^\s*\*\* \(([\w.]+)\) (.*)$")
_GENERIC_ERROR = re.compile(r"^(?:\w+: )?(?:error|ERROR|Error|fatal|FATAL|npm ERR!|panic)(?:\[\w+\])?:?\s+(.+)$")
_NOT_FOUND = re.compile(r"(command not found|No such file or directory|not found|Permission denied|cannot access)", re.I)
_TOOL_ERROR_TAG = re.compile(r"</?tool_use_error>")
_COMMIT = re.compile(r"^\[([\w./-]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\] (.+)$", re.M)
_PUSHED = re.compile(r"^\s*(?:\*\s+\[new branch\]|[0-9a-f]{7,}\.\.[0-9a-f]{7,}|\+\s*[0-9a-f]{7,}\.\.\.[0-9a-f]{7,})\s+(\S+)\s+->\s+(\S+)",
                     re.M)
_LISTENING = re.compile(r"(?:listening|running|serving|started|available|ready|local)\b.{0,200}?(https?://[\w.\-\[\]:]+(?::\d+)?\S*)",
                        re.I | re.S)
# What a shell's startup files print before the command runs (a broken line in ~/.bashrc, a
# missing locale, no terminal): not what the command said, so not its first line or its error.
_STARTUP_FILE = (r"(?:\S*/)?(?:\.bashrc|\.bash_profile|\.bash_login|\.profile|\.zshrc|\.zshenv|\.zprofile|\.zlogin|"
                 r"bash\.bashrc|etc/profile(?:\.d/[^:\s]+)?|etc/zsh/\w+)")
_SHELL_NOISE = re.compile(rf"^\s*(?:-?[\w/]*sh: )?{_STARTUP_FILE}(?::[a-z]+)?(?::\d+:|: line \d+:)"
                          r"|^\s*(?:-?[\w/]*sh: )?warning: setlocale: "
                          r"|^\s*-?[\w/]*sh: (?:no job control in this shell|cannot set terminal process group)"
                          r"|^\s*(?:stty|mesg|tput): ")
_TEST_NAME_CHARS = 60


@dataclass
class Outcome:
    """What one run showed. Every field may be empty: most output says little."""

    failed: bool = False
    exit_code: int | None = None
    tests: str = ""  # "1 failed, 3 passed"
    failures: int = 0
    failed_tests: list[str] = field(default_factory=list)
    assertion: str = ""  # "assert add(2, 3) == 5, got -1"
    explanation: str = ""  # "add(2, 3) returned -1, not 5" (pytest's `where` line)
    error: str = ""  # "ImportError: cannot import name 'x' from 'y'"
    where: str = ""  # "calc.py:5"
    first_line: str = ""  # the first line worth reading

    def why(self) -> str:
        """`test_add failed because add(2, 3) returned -1, not 5`: the answer to "why did it fail"."""
        test = self.failed_tests[0] if self.failed_tests else ""
        cause = self.explanation or self.assertion or self.error
        return f"{test} failed because {cause}" if test and cause else ""

    def reason(self) -> str:
        """Why it failed, as briefly as the output allows."""
        test = self.failed_tests[0] if self.failed_tests else ""
        what = self.assertion or self.error
        if test and what:
            text = f"{test}: {what}"
        else:
            text = test or what or self.first_line or (f"exit {self.exit_code}" if self.exit_code else "")
        return text + (f" ({self.where})" if self.where and self.where not in text else "")


def read(text: str, *, failed: bool, cwd: str | None = None) -> Outcome:
    """Parse one command's output (stdout and stderr, or the failure text Claude Code gave)."""
    out = Outcome(failed=failed)
    if "\\n\\n" in text:  # output a tool printed JSON-escaped (pre-commit hooks do)
        text = text.replace("\\n", "\n")
    exit_match = _EXIT.match(text)
    if exit_match:
        out.exit_code = int(exit_match.group(1))
        text = text[exit_match.end():]
    lines = [line.rstrip() for line in text.splitlines()]
    said = [line for line in lines if not _SHELL_NOISE.match(line)]
    if any(line.strip() for line in said):  # noise alone is all there is to go by (a `source ~/.bashrc`)
        lines = said
    out.first_line = _first_line(lines)
    _tally(out, lines)
    if out.failures:
        out.failed = True
    if out.failed or out.failures:
        _failed_tests(out, lines)
        _assertion(out, lines)
        if not out.assertion:
            out.error = _error(lines) or _located_message(lines)
        out.where = _where(lines, cwd)
    return out


def tool_error(text: str) -> str:
    """A non-Bash tool's error text, without the tags Claude Code wraps it in."""
    text = _TOOL_ERROR_TAG.sub("", text).strip()
    if text.startswith("The user doesn't want to proceed"):
        return "rejected by the user"
    if text.startswith("Sibling tool call errored"):
        return "cancelled: a parallel call failed"
    return clip(text.split("\n", 1)[0], 160)


def commit(text: str) -> tuple[str, str] | None:
    """(hash, subject) of the commit a `git commit` output reports."""
    match = _COMMIT.search(text)
    return (match.group(2)[:7], match.group(3).strip()) if match else None


def pushed(text: str) -> str:
    match = _PUSHED.search(text)
    return match.group(2) if match else ""


def listening(text: str) -> str:
    match = _LISTENING.search(text)
    return match.group(1).rstrip(".,)") if match else ""


def _first_line(lines: list[str]) -> str:
    """The first line worth reading; with the next one when it only announces it ("failed:")."""
    found = [line.strip() for line in lines if not _DECORATION.match(line) and not line.startswith(("[... ", "warning: "))][:2]
    if len(found) == 2 and found[0].endswith(":"):
        return clip(f"{found[0]} {found[1]}", 90)
    return clip(found[0], 90) if found else ""


def _tally(out: Outcome, lines: list[str]) -> None:
    for line in reversed(lines):
        stripped = line.strip()
        if _PYTEST_TALLY.search(stripped) and _PYTEST_END.search(stripped):
            counts = _PYTEST_TALLY.findall(stripped)
            out.tests = ", ".join(f"{n} {word}" for n, word in counts)
            out.failures = sum(int(n) for n, word in counts if word in ("failed", "error", "errors"))
            return
        match = _EXUNIT.search(stripped)
        if match:
            out.tests = match.group(0)
            counted = re.search(r"(\d+) failures?", match.group(0))
            out.failures = int(counted.group(1)) if counted else 0
            return
        match = _JEST.match(stripped)
        if match:
            out.tests = clip(match.group(1).replace(" | ", ", "), 60)
            failed = re.search(r"(\d+) failed", match.group(1))
            out.failures = int(failed.group(1)) if failed else 0
            return
        match = _CARGO.search(stripped)
        if match:
            out.tests = f"{match.group(1)} passed, {match.group(2)} failed"
            out.failures = int(match.group(2))
            return
        match = _UNITTEST_END.match(stripped)
        if match and any(_UNITTEST_RAN.match(x) for x in lines):
            ran = next(m.group(1) for x in lines if (m := _UNITTEST_RAN.match(x)))
            out.tests = f"{ran} tests" + (f", {match.group(2)}" if match.group(2) else ", OK")
            out.failures = sum(int(n) for n in re.findall(r"(?:failures|errors)=(\d+)", match.group(2) or ""))
            return
    if any(_NO_TESTS.search(line) for line in lines):
        out.tests = "no tests ran"


def _failed_tests(out: Outcome, lines: list[str]) -> None:
    names: list[str] = []
    for pattern in (_FAILED_NODE, _VERBOSE_NODE, _PYTEST_HEADER, _EXUNIT_TEST, _GO_TEST, _CARGO_TEST, _UNITTEST_TEST,
                    _JEST_TEST):
        for line in lines:
            match = pattern.match(line)
            if not match:
                continue
            name = match.group(1)
            if pattern in (_FAILED_NODE, _VERBOSE_NODE):
                name = name.split("::")[-1]
                if pattern is _FAILED_NODE and match.group(2) and not out.assertion:
                    out.assertion = clip(match.group(2), 120)
            elif pattern is _PYTEST_HEADER:
                name = name.split(".")[-1] if "." in name and " " not in name else name
            elif pattern is _EXUNIT_TEST:
                name = f"test {name} ({match.group(2).split('.')[-1]})"
            if name not in names:
                names.append(clip(name, _TEST_NAME_CHARS))
        if names:
            break
    if not names:  # no header or summary: the test function the failing line is in
        names = [m.group(1) for line in lines if (m := re.match(r"^\s*(?:async\s+)?def (test_?\w*)\(", line))][:1]
    out.failed_tests = names[:5]


def _assertion(out: Outcome, lines: list[str]) -> None:
    """pytest shows the failing line after `>` and the evaluated values after `E`; ExUnit shows
    `code:`, `left:` and `right:`."""
    source = detail = ""
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not source and stripped.startswith(">") and len(stripped) > 1:
            source = stripped[1:].strip()
        elif not detail and re.match(r"^E\s{2,}\S", line) and not stripped[1:].strip().startswith(("+", "where", "-")):
            detail = stripped[1:].strip()
        elif stripped.startswith("code: assert") or stripped.startswith("code:  assert"):
            left = next((x.strip()[5:].strip() for x in lines[i + 1 : i + 4] if x.strip().startswith("left:")), "")
            right = next((x.strip()[6:].strip() for x in lines[i + 1 : i + 5] if x.strip().startswith("right:")), "")
            text = stripped[5:].strip() + (f", left: {left}, right: {right}" if left or right else "")
            out.assertion = out.assertion or clip(text, 120)
            return
        if source and detail:
            break
    if detail and not detail.startswith("assert") and _EXCEPTION.match(detail) and not source.startswith("assert"):
        out.error = clip(_short_exception(detail), 120)
        return
    if source.startswith("assert"):
        wanted, got = _ASSERT.match(source), _ASSERT.match(detail.removeprefix("AssertionError: "))
        if wanted and got and got.group(2) == wanted.group(2) and got.group(3) == wanted.group(3) and got.group(1) != wanted.group(1):
            out.assertion = clip(f"{source}, got {got.group(1)}", 120)
            call = next((m.group(2) for m in map(_WHERE_CALL.match, lines) if m and m.group(1) == got.group(1)), "")
            if call:
                expected = f", not {wanted.group(3)}" if wanted.group(2) == "==" else ""
                out.explanation = clip(f"{call} returned {got.group(1)}{expected}", 120)
        elif detail and detail != source and len(detail) <= 40:
            out.assertion = clip(f"{source} ({detail})", 120)
        else:
            out.assertion = clip(source, 120)
    elif detail and not out.assertion:
        out.assertion = clip(detail, 120)


def _short_exception(line: str) -> str:
    match = _EXCEPTION.match(line.strip())
    if not match:
        return line.strip()
    return match.group(2) + (f": {match.group(3).strip()}" if match.group(3) else "")


def _error(lines: list[str]) -> str:
    """The exception a traceback ends with, else the first line that says error."""
    for line in reversed(lines):
        stripped = line.strip()
        if _EXCEPTION.match(stripped) and (stripped.count(" ") == 0 or ":" in stripped):
            return clip(_short_exception(stripped), 120)
        match = _ELIXIR_EXCEPTION.match(line)
        if match:
            return clip(f"{match.group(1).split('.')[-1]}: {match.group(2)}", 120)
    for line in lines:
        stripped = line.strip()
        match = _GENERIC_ERROR.match(stripped)
        if match:
            return clip(stripped, 120)
        if _NOT_FOUND.search(stripped):
            return clip(stripped, 120)
    return ""


def _located_message(lines: list[str]) -> str:
    """`calc_test.go:8: add(2, 3) = -1, want 5`, `x.py:3:1: F401 ...`: the message after the place."""
    for line in lines:
        match = _LOCATION.match(line)
        if match and match.group(3).strip() and not match.group(1).startswith(("http", "www.")):
            return clip(match.group(3).strip(), 120)
    return ""


def _where(lines: list[str], cwd: str | None) -> str:
    """file:line of the failure: pytest's `test_x.py:5: AssertionError`, the innermost frame of
    a traceback that is not a library's, or the first `file:line:` a compiler or linter printed."""
    for line in lines:
        match = _PYTEST_WHERE.match(line.strip())
        if match:
            return f"{os.path.basename(match.group(1))}:{match.group(2)}"
    frames = [(f, n) for f, n in _PY_FRAME.findall("\n".join(lines))
              if not f.startswith("<") and "site-packages" not in f and "/lib/python" not in f]
    if frames:
        return f"{os.path.basename(frames[-1][0])}:{frames[-1][1]}"
    for line in lines:
        match = _LOCATION.match(line)
        if match and not match.group(1).startswith(("http", "www.")):
            return f"{os.path.basename(match.group(1))}:{match.group(2)}"
    return ""
