"""Shell commands as a person would name them: the command without its scaffolding, and its kind.

`cd repo && source .venv/bin/activate && python -m pytest -q tests/x.py 2>&1 | tail -20` is
"pytest -q tests/x.py"; a heredoc commit is "git commit". The kind says what kind of outcome to
look for (a test summary, a commit, a package added, a server started).
"""

from __future__ import annotations

import os
import re
import shlex

# Set-up that says nothing about what ran: a directory change, an activated venv, variables.
_SCAFFOLD = re.compile(
    r"^\s*(?:cd\s+(?:\"[^\"]*\"|'[^']*'|\S+)\s*(?:&&|;)"
    r"|(?:source|\.)\s+\S+\s*(?:&&|;)"
    r"|(?:export\s+)?[A-Za-z_]\w*=(?:\"[^\"]*\"|'[^']*'|\S*)\s"
    r"|env\s+(?=[A-Za-z_]\w*=)"
    r"|(?:time|nice|timeout\s+\S+)\s)\s*")
# Launchers in front of the tool that matters.
_LAUNCHER = re.compile(r"^(?:python3?(?:\.\d+)?\s+-m\s+|uv\s+run\s+(?:--\S+\s+)*|poetry\s+run\s+|pipenv\s+run\s+|"
                       r"hatch\s+run\s+|pdm\s+run\s+|npx\s+|bunx\s+|bundle\s+exec\s+)")
_NOISE = re.compile(r"\s+2>&1|\s+[12]?>\s*/dev/null|\s*\|\s*(?:tail|head)(?:\s+-n)?(?:\s+-?\d+)?\s*$")
_HEREDOC = re.compile(r"\"?\$\(cat\s+<<-?\s*\\?['\"]?(\w+)['\"]?\s*\n(.*?)\n\s*\1\b", re.DOTALL)
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
    r"(?:sudo\s+)?(?:apt-get|apt|dnf|yum|apk|brew)\s+(?:install|add))\b(?P<rest>.*)$")
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
    text = command.strip()
    heredoc = _HEREDOC.search(text)
    if heredoc:  # `git commit -m "$(cat <<'EOF' ... EOF)"`: the message is not the command
        text = text[: heredoc.start()].rstrip(" -m").rstrip()
    if text.startswith("(") and text.endswith(")"):  # a subshell around the whole command
        text = text[1:-1].strip()
    text = text.split("\n", 1)[0].strip()
    while True:
        stripped = _SCAFFOLD.sub("", text, count=1)
        if stripped == text or not stripped:
            break
        text = stripped
    text = _NOISE.sub("", _NOISE.sub("", text)).strip()
    text = _LAUNCHER.sub("", text)
    if cwd:
        text = text.replace(cwd.rstrip("/") + "/", "")
    if "\n" in command.strip() and not heredoc:  # an inline script: its first line says nothing
        text = text.rstrip() + ("…\"" if text.endswith('"') else "…'" if text.endswith("'") else " …")
    return " ".join(text.split())


def is_script(command: str) -> bool:
    """An inline script (`python -c "<lines>"`): its first line says nothing of what it does."""
    return "\n" in command.strip() and not _HEREDOC.search(command)


def segments(command: str) -> list[str]:
    """The commands of a `a && b; c` line, each cleaned like display()."""
    parts = re.split(r"\s*(?:&&|\|\||;)\s*", clean(command).removesuffix(" …"))
    return [_LAUNCHER.sub("", p.strip()) for p in parts if p.strip()]


def kind(command: str, tool_input: dict | None = None) -> str:
    """commit, push, install, server, test, lint, build, git or other: the most telling part wins."""
    if isinstance(tool_input, dict) and tool_input.get("run_in_background") and not _TEST.search(clean(command)):
        return "server"
    found = set()
    for part in segments(command):
        if part.startswith("git commit"):
            found.add("commit")
        elif part.startswith("git push"):
            found.add("push")
        elif part.startswith("git "):
            found.add("git")
        elif _INSTALL.search(part) and packages(part) is not None:
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
    for part in segments(command):
        match = _INSTALL.search(part)
        if not match:
            continue
        try:
            words = shlex.split(match["rest"])
        except ValueError:
            words = match["rest"].split()
        names: list[str] = []
        it = iter(words)
        for word in it:
            if word in ("-r", "--requirement"):
                names.append("packages from " + next(it, "a requirements file"))
            elif word in ("-c", "--constraint", "-i", "--index-url", "--extra-index-url", "-t", "--target"):
                next(it, None)
            elif not (word.startswith(("-", "./", "/")) or word in (".", "..")):
                names.append(word)
        return names or None
    return None


def install_tool(command: str) -> str:
    for part in segments(command):
        match = _INSTALL.search(part)
        if match:
            return " ".join(match["tool"].split())
    return ""


def commit_message(command: str) -> str:
    """The first line of the message a `git commit` command gives, if it gives one."""
    heredoc = _HEREDOC.search(command)
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
    for part in reversed(segments(command)):
        if _TEST.search(part) or _LINT.search(part) or _BUILD.search(part):
            words = part.split()
            tool = words[0] if len(words) < 2 or words[1].startswith("-") or "/" in words[1] or "." in words[1] \
                else " ".join(words[:2])
            targets = sorted({os.path.basename(w.split("::")[0].rstrip("/")) for w in words[1:]
                              if not w.startswith("-") and ("/" in w or "." in w or "::" in w)})
            return " ".join([tool, *targets])
    return clean(command)


def clip(text: str, limit: int) -> str:
    """Cut at a word boundary with an ellipsis: a title is read, not parsed."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if space > limit * 0.6:
        cut = cut[:space]
    return cut.rstrip(" ,;:—-") + "…"
