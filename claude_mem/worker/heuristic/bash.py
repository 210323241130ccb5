"""Shell commands as a person would name them: the command without its scaffolding, and its kind.

`cd repo && source .venv/bin/activate && python -m pytest -q tests/x.py 2>&1 | tail -20` is
"pytest -q tests/x.py"; a heredoc commit is "git commit". The kind says what kind of outcome to
look for (a test summary, a commit, a package added, a server started). How a line splits into
commands and what is scaffolding is text/shell.py's reading, the one the pre hook's lookup key
uses too; what is here is the titles' own: what to show, and what kind of command it is.
"""

from __future__ import annotations

import functools
import os
import re

from claude_mem.text import shell
from claude_mem.text.shorten import clip
from claude_mem.worker.heuristic.paths import relative

# `$(cat <<'EOF' ... EOF)`, tried where `$(cat` stands (a few places at most): searched for
# anywhere, the lazy body made a 200 KB command of openers take 40 s.
_HEREDOC = re.compile(r"\$\(cat\s+<<-?\s*\\?['\"]?(\w+)['\"]?[ \t]*\n(.*?)\n[ \t]*\1\b", re.DOTALL)
_HEREDOC_TRIES = 3
DISPLAY_CHARS = 72

_TEST = re.compile(
    r"^(?:pytest|py\.test|tox|nox|jest|vitest|mocha|ava|rspec|phpunit|ctest|unittest|trial|behave|cucumber|playwright test)\b"
    r"|^(?:mix|go|cargo|dotnet|deno|bun|swift|zig|dart|flutter|gradle|mvn|sbt|lein|stack|cabal)\s+test\b"
    r"|^(?:npm|yarn|pnpm)\s+(?:run\s+)?test\b|^make\s+(?:test|check)\b|^(?:\./)?manage\.py\s+test\b|^(?:bin/)?rails\s+test\b")
_LINT = re.compile(
    r"^(?:ruff|flake8|pylint|mypy|pyright|black|isort|eslint|prettier|tsc|golangci-lint|rubocop|shellcheck|stylelint|"
    r"biome|pre-commit)\b|^mix\s+(?:format|credo|dialyzer)\b|^cargo\s+(?:clippy|fmt)\b|^go\s+vet\b"
    r"|^(?:npm|yarn|pnpm)\s+(?:run\s+)?(?:lint|typecheck|format|check)\b")
_BUILD = re.compile(
    r"^(?:make|cmake|ninja|gradle|mvn|bazel)\b|^(?:mix\s+compile|cargo\s+build|go\s+build|dotnet\s+build|docker\s+build|"
    r"uv\s+build|build)\b|^(?:npm|yarn|pnpm)\s+(?:run\s+)?build\b")
_INSTALL = re.compile(
    r"^(?P<tool>(?:uv\s+)?pip3?\s+install|uv\s+add|poetry\s+add|pdm\s+add|pipx\s+install|conda\s+install|"
    r"(?:npm|pnpm)\s+(?:install|i|add)|yarn\s+add|bun\s+add|cargo\s+add|cargo\s+install|go\s+get|go\s+install|"
    r"gem\s+install|bundle\s+add|composer\s+require|dotnet\s+add\s+package|"
    r"(?:apt-get|apt|dnf|yum|apk|brew)\s+(?:install|add))\b")
_SERVER = re.compile(
    r"^(?:uvicorn|gunicorn|hypercorn|daphne|waitress-serve|http-server|live-server|serve|vite|webpack-dev-server)\b"
    r"|^(?:flask\s+run|fastapi\s+(?:dev|run)|http\.server|streamlit\s+run|jupyter\s+(?:lab|notebook))\b"
    r"|manage\.py\s+runserver\b|^(?:npm|yarn|pnpm|bun)\s+(?:run\s+)?(?:dev|start|serve|preview)\b"
    r"|^(?:next|nuxt|astro|remix)\s+(?:dev|start)\b|^(?:iex\s+-S\s+)?mix\s+phx\.server\b|^(?:bin/)?rails\s+(?:s|server)\b"
    r"|^docker[\s-]compose\s+up\b|^(?:hugo|jekyll)\s+serve|^(?:php\s+artisan\s+serve|php\s+-S)\b")


def display(command: str, cwd: str | None = None) -> str:
    """The command as a person would name it, at most DISPLAY_CHARS characters."""
    return clip(clean(command, cwd), DISPLAY_CHARS)


def clean(command: str, cwd: str | None = None) -> str:
    """The commands as written, without the set-up in front (`cd`, `source`, `export`), the
    wrappers and runners (text/shell.py reads them), the noise (`2>&1`, `>/dev/null`, a closing
    `| tail -20`), a commit message's heredoc and an inline script's code (`python -c "…"`)."""
    parts = [c for c in _parse(command) if c.tokens]
    ran = next((k for k, c in enumerate(parts) if not c.setup), len(parts) - 1)
    parts = parts[max(ran, 0):]  # `cd x` alone is shown; in front of a command it is not
    if len(parts) > 1 and parts[-2].op in ("|", "|&") and _is_pager(parts[-1]):
        parts.pop()
    shown = []
    for k, part in enumerate(parts):
        if k:
            shown.append(";" if parts[k - 1].op in (";", "\n", ";;") else " " + parts[k - 1].op)
            shown.append(" ")
        shown.append(_shown(part))
    text = relative("".join(shown), cwd)  # before it is clipped: paths from the project's root (paths.py)
    return " ".join(text.split())


def _shown(part: shell.Command) -> str:
    words: list[str] = []
    for token in part.tokens:
        if token.kind == shell.REDIRECT:
            if not (token.target == "/dev/null" or (token.text == ">&" and token.target in ("1", "2"))):
                words.append(token.raw)
        elif "\n" not in token.raw:
            words.append(token.raw)
        elif "<<" in token.raw:  # `-m "$(cat <<'EOF' ...)"`: the message is not the command
            if words and words[-1] in ("-m", "--message", "-F", "--file"):
                words.pop()
        else:  # an inline script: its first line says nothing
            closing = token.raw[-1] if token.raw[-1] in "\"'" else ""
            words.append(token.raw.split("\n", 1)[0].rstrip() + "…" + closing)
    return " ".join(words)


def _is_pager(part: shell.Command) -> bool:
    """`tail -20`, `head -n 5`: what the command printed was cut, not changed."""
    return part.program in ("tail", "head") and all(a.startswith("-") or a.isdigit() for a in part.args)


def is_script(command: str) -> bool:
    """An inline script (`python -c "<lines>"`): its first line says nothing of what it does."""
    return "\n" in command.strip() and not _heredoc(command)


def _heredoc(command: str) -> re.Match[str] | None:
    start = command.find("$(cat")
    for _ in range(_HEREDOC_TRIES):
        if start < 0:
            break
        match = _HEREDOC.match(command, start)
        if match:
            return match
        start = command.find("$(cat", start + 1)
    return None


@functools.lru_cache(maxsize=4)
def _parse(command: str) -> tuple[shell.Command, ...]:
    """text/shell.py's reading, once per command: a Bash event asks display, kind and check_key."""
    return tuple(shell.commands(command))


@functools.lru_cache(maxsize=4)
def _runs(command: str) -> tuple[tuple[shell.Command, str], ...]:
    """The commands that ran something (no set-up, no bare redirection), each with what the
    kinds' patterns read: `program args`, each argument to its first line."""
    return tuple((c, " ".join(_words(c))) for c in _parse(command) if not c.setup and c.words)


def _words(part: shell.Command) -> list[str]:
    return [part.program, *(a.split("\n", 1)[0] for a in part.args)]


def segments(command: str) -> list[str]:
    """The commands of a `a && b | c` line, each as `program args` without its scaffolding."""
    return [text for _, text in _runs(command)]


def kind(command: str, tool_input: dict | None = None) -> str:
    """commit, push, install, server, test, lint, build, git or other: the most telling part wins."""
    runs = _runs(command)
    if isinstance(tool_input, dict) and tool_input.get("run_in_background") and not any(_TEST.search(t) for _, t in runs):
        return "server"
    found = set()
    seen = set()
    for each, part in runs:
        if part in seen:  # `make; make; make`: once is enough
            continue
        seen.add(part)
        if part.startswith("git commit"):
            found.add("commit")
        elif part.startswith("git push"):
            found.add("push")
        elif part.startswith("git "):
            found.add("git")
        elif (match := _INSTALL.search(part)) and _packages(each, match) is not None:
            found.add("install")
        elif _SERVER.search(part):
            found.add("server")
        elif _TEST.search(part):
            found.add("test")
        elif _LINT.search(part):
            found.add("lint")
        elif _BUILD.search(part):
            found.add("build")
    for name in ("commit", "push", "install", "server", "test", "lint", "build", "git"):
        if name in found:
            return name
    return "other"


def packages(command: str) -> list[str] | None:
    """The packages an install command adds (None when it installs nothing new by name)."""
    for part, text in _runs(command):
        match = _INSTALL.search(text)
        if match:
            return _packages(part, match)
    return None


def _packages(part: shell.Command, match: re.Match[str]) -> list[str] | None:
    names: list[str] = []
    it = iter(part.words[len(match["tool"].split()):])
    for word in it:
        if word in ("-r", "--requirement"):
            names.append("packages from " + next(it, "a requirements file"))
        elif word in ("-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-t", "--target"):
            next(it, None)
        elif not (word.startswith(("-", "./", "/")) or word in (".", "..")):
            names.append(word)
    return names or None


def install_tool(command: str) -> str:
    for part in segments(command):
        match = _INSTALL.search(part)
        if match:
            return " ".join(match["tool"].split())
    return ""


def commit_message(command: str) -> str:
    """The first line of the message a `git commit` command gives, if it gives one."""
    heredoc = _heredoc(command)
    if heredoc:
        lines = [line.strip() for line in heredoc.group(2).splitlines() if line.strip()]
        return lines[0] if lines else ""
    start = command.find("git commit")
    match = start >= 0 and re.search(r"(?:-m|--message)[= ]\s*(\"(?:[^\"\\]|\\.)*\"|'[^']*'|\S+)", command[start:])
    if not match:
        return ""
    message = match.group(1)
    if message[:1] in "\"'":
        message = message[1:-1]
    return message.replace('\\"', '"').strip().split("\n", 1)[0]


def port(command: str) -> str:
    match = re.search(r"(?:--port[= ]|-p\s+|:)(\d{2,5})\b", command)
    return match.group(1) if match else ""


def check_key(command: str) -> str:
    """What two runs must share to count as the same check: a test, lint or build tool with the
    files it was pointed at (`pytest -x` and `pytest` match; `pytest a.py` and `pytest b.py` do
    not), else the whole command."""
    for each, part in reversed(_runs(command)):
        if _TEST.search(part) or _LINT.search(part) or _BUILD.search(part):
            words = _words(each)
            tool = words[0] if len(words) < 2 or words[1].startswith("-") or "/" in words[1] or "." in words[1] \
                else " ".join(words[:2])
            targets = sorted({os.path.basename(w.split("::")[0].rstrip("/")) for w in words[1:]
                              if not w.startswith("-") and ("/" in w or "." in w or "::" in w)})
            return " ".join([tool, *targets])
    return clean(command)

