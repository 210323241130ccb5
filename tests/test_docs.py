"""The README and docs/ cannot drift from the code: the README's test command is the one CI runs,
every command, option, setting and hook is described, links resolve, and figures are current."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import click
import pytest

from claude_mem.cli.app import cli
from claude_mem.settings import SETTINGS
from scripts import commands_md
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = {path.name: path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").glob("*.md"))}
DOCS = {"README.md": README, **{f"docs/{name}": text for name, text in PAGES.items()}}
README_MAX_LINES = 200
FIRST_LINES = 40  # a new user finds how to run it and how to test it on the first screen


def fenced_commands(text: str = README) -> list[str]:
    return [line.strip() for block in re.findall(r"```(?:bash|sh)?\n(.*?)```", text, re.S) for line in block.splitlines()]


def ci_test_command() -> str:
    """The line of .ci/run that makes the venv and runs the suite (a report follows it)."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    [command] = [line.strip() for line in lines if line.startswith("python3 -m venv .venv && ")]
    return command


def hook_table() -> list[tuple[str, str, str | None]]:
    """(Claude Code event, hook command, matcher) from the plugin's hooks/hooks.json, which
    tests/test_plugin.py holds to the code's own hook table."""
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    return [(event, entry["command"].rsplit(" ", 1)[-1], group.get("matcher"))
            for event, groups in hooks.items() for group in groups for entry in group["hooks"]
            if not entry["command"].endswith(" plugin-check")]


HOOK_COMMANDS = {command for _, command, _ in hook_table()}


def sections(text: str) -> dict[str, str]:
    """Each heading's text (without `#`s and backticks) -> its body, up to the next heading."""
    parts = re.split(r"^#{1,6} (.+)$", re.sub(r"```.*?```", "", text, flags=re.S), flags=re.M)
    return {title.replace("`", "").strip(): body for title, body in zip(parts[1::2], parts[2::2], strict=True)}


def slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    return re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")


def long_options(command: click.Command) -> list[str]:
    """Its long options but hidden ones (an older spelling still taken, such as `prune --days`)."""
    return [opt for param in command.params if isinstance(param, click.Option) and not param.hidden
            for opt in (*param.opts, *param.secondary_opts) if opt.startswith("--") and opt != "--json"]


# The README: a front door.

def test_ci_runs_the_readmes_test_command() -> None:
    command = ci_test_command()
    assert command.startswith("python3 -m venv .venv && ") and "pytest" in command
    assert command in fenced_commands(), "README's test command and .ci/run's last line must be the same"


def test_the_two_commands_sit_in_the_readmes_first_lines() -> None:
    first = "\n".join(README.splitlines()[:FIRST_LINES])
    commands = fenced_commands(first + "\n```")  # a fence the cut may have left open
    assert "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/claude-mem demo" in commands, "run it"
    assert "/plugin install memory@claude-mem" in commands, "run it inside Claude Code"
    assert ci_test_command() in commands, "test it"


def test_the_readme_is_short_and_links_every_page() -> None:
    assert len(README.splitlines()) <= README_MAX_LINES
    linked = set(re.findall(r"\]\(docs/([\w.-]+\.md)(?:#[^)]*)?\)", README))
    assert sorted(set(PAGES) - linked) == []


def test_readme_has_the_inner_loop_and_the_marker_is_registered() -> None:
    assert '.venv/bin/pytest -q -m "not slow" -n 2' in fenced_commands()
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^markers = \[\n\s+"slow: ', pyproject, re.M), "pytest knows the slow marker"


def test_the_screenshot_exists() -> None:
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert images, "the README shows the viewer"
    for path in images:
        assert (ROOT / path).is_file(), path


def test_the_readme_names_every_hook() -> None:
    """What `install` writes into Claude Code's settings: each event followed by its command (the
    next one in backticks), and the tools PreToolUse matches in between."""
    text = sections(README)["Use it with Claude Code"]
    for event, command, matcher in hook_table():
        said = re.search(rf"\b{event}\b([^`]*)`(\w+)`", text)
        assert said and said.group(2) == command, (event, command)
        for tool in (matcher or "*").split("|"):
            assert tool == "*" or re.search(rf"\b{tool}\b", said.group(1)), (event, tool)


# docs/: every command, option, setting and hook.

def test_the_command_reference_is_the_commands_help() -> None:
    """docs/commands.md carries each visible command's --help (a group's with its subcommands') as
    scripts/commands_md.py writes it now: a changed option or help text fails until it is run."""
    assert PAGES["commands.md"] == commands_md.generate(PAGES["commands.md"]), "run: python scripts/commands_md.py"


def test_the_reference_generator_writes_every_visible_command_and_no_hidden_one() -> None:
    page = PAGES["commands.md"]
    for name, command in cli.commands.items():
        if name in HOOK_COMMANDS:
            assert command.hidden, name  # the names older installs wrote: `claude-mem hook NAME` is documented
    shown = re.findall(r"^<!-- `claude-mem ([a-z -]+) --help`", page, re.M)
    assert sorted(shown) == sorted(commands_md.visible_commands()) and "hook" not in shown
    for name, command in commands_md.visible_commands().items():
        block = page[page.index(f"<!-- `claude-mem {name} --help`"):]
        block = block[:block.index(commands_md.END)]
        assert f"Usage: claude-mem {name} " in block and all(opt in block for opt in long_options(command)), name
        for sub in getattr(command, "commands", {}):
            assert f"Usage: claude-mem {name} {sub} " in block, (name, sub)
    # A visible command without a heading is named, not silently left out.
    without = page.replace("### `claude-mem reindex`", "### Rebuilding the index")
    with pytest.raises(commands_md.MissingSection, match="no heading for reindex"):
        commands_md.generate(without)
    assert "claude-mem hook --help" not in page and "Usage: claude-mem hook" not in page
    assert "claude-mem hook" in sections(page), "the hidden hook group keeps its hand-written section"


def test_every_setting_is_documented_with_its_default() -> None:
    """docs/configuration.md has one row per setting, none stale, each with the code's default."""
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", PAGES["configuration.md"], re.M)
    keys = [key for key, _ in rows]
    assert sorted(keys) == sorted(SETTINGS), "one row per setting, and no row for a setting that is gone"
    for key, cell in rows:
        default = SETTINGS[key].default
        if isinstance(default, bool):
            assert cell.strip() == f"`{str(default).lower()}`", key
        elif isinstance(default, (int, float)):
            assert cell.strip() == f"`{default:g}`", key
        elif isinstance(default, str) and default:
            assert cell.strip() == f"`{default}`", key


def test_the_hook_table_is_documented() -> None:
    """docs/how-it-works.md has, for each Claude Code event, a row naming its hook command (and
    the tools PreToolUse matches)."""
    rows = re.findall(r"^\| ([^|]+) \| ([^|]+) \|$", PAGES["how-it-works.md"], re.M)
    for event, command, matcher in hook_table():
        row = [cells for cells in rows if re.search(rf"\b{event}\b", cells[0]) and f"`{command}`" in cells[1]]
        assert row, (event, command)
        for tool in (matcher or "*").split("|"):
            assert tool == "*" or re.search(rf"\b{tool}\b", row[0][0]), (event, tool)
    assert "`plugin-check`" in PAGES["plugin.md"]


def test_links_and_paths_resolve() -> None:
    """Relative links (and their anchors) point at files and headings that exist; a `.py` path
    named in the docs is a file of the repository or of claude_mem/."""
    broken: list[str] = []
    for name, text in DOCS.items():
        base = ROOT / os.path.dirname(name)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (base / path) if path else ROOT / name
            if not file.exists():
                broken.append(f"{name}: {target}")
            elif anchor and file.suffix == ".md" and anchor not in {slug(t) for t in sections(file.read_text(encoding="utf-8"))}:
                broken.append(f"{name}: {target} (no such heading)")
        for path in re.findall(r"`((?:[\w.-]+/)+[\w.-]+\.py)`", re.sub(r"```.*?```", "", text, flags=re.S)):
            if not (ROOT / path).is_file() and not (ROOT / "claude_mem" / path).is_file():
                broken.append(f"{name}: {path}")
    assert broken == []


def test_benchmark_tables_carry_current_figures_only() -> None:
    """Figures live in docs/benchmarks.md, current ones: how they came to be belongs to the
    experiment logs (search-tuning.md and its kind)."""
    rows = [line for line in PAGES["benchmarks.md"].splitlines() if line.startswith("| ")]
    assert len(rows) > 10
    history = re.compile(r"\bused to\b|\bwas\b|\bwere\b|\bmain:|\bnow\b|\(before\b|\bbefore the\b|\bsince\)", re.I)
    assert [row[:80] for row in rows if history.search(row)] == []


@pytest.mark.slow
def test_the_suite_size_is_stated_once_and_current() -> None:
    """One place says how big the suite is, close to what pytest collects; any other "N tests"
    near that size would be a second, stale statement of it (other counts, a transcript's own
    test run, are far from it)."""
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider"],
                               cwd=ROOT, capture_output=True, text=True, timeout=300)
    count = int(re.search(r"^(\d+) tests collected", collected.stdout, re.M).group(1))
    stated = [(name, int(number.replace(",", ""))) for name, text in DOCS.items()
              for number in re.findall(r"\b(\d[\d,]*) tests\b", text)]
    statements = [(name, number) for name, number in stated if abs(number - count) <= count * 0.3]
    assert len(statements) == 1, (statements, count)
    assert abs(statements[0][1] - count) <= count * 0.1, (statements, count)


def _browser_tests_without_chromium(ci: str | None) -> subprocess.CompletedProcess[str]:
    """The browser tests run by a nested pytest whose PATH holds python but no chromium."""
    bin_dir = tempfile.mkdtemp(prefix="nochromium-")
    os.symlink(sys.executable, os.path.join(bin_dir, "python3"))
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PATH"] = bin_dir
    if ci is not None:
        env["CI"] = ci
    try:
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", "-rs",
                               "tests/test_viewer_browser.py"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(bin_dir, ignore_errors=True)


@pytest.mark.slow
def test_without_chromium_the_browser_tests_skip_locally_and_fail_under_ci() -> None:
    local = _browser_tests_without_chromium(None)
    assert local.returncode == 0, local.stdout[-2000:]
    browser_tests = len(re.findall(r"^def test_", (ROOT / "tests" / "test_viewer_browser.py").read_text(encoding="utf-8"), re.M))
    assert re.search(rf"\b{browser_tests} skipped\b", local.stdout) and "no chromium on PATH" in local.stdout, local.stdout[-2000:]
    ci = _browser_tests_without_chromium("true")
    assert ci.returncode != 0 and "apt-get install -y chromium" in ci.stdout, ci.stdout[-2000:]
    assert "CI=\"${CI:-true}\"" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def _code_map() -> dict[str, str]:
    """docs/how-it-works.md's code map: each top entry (a module or a package of claude_mem/)
    with the text that describes it, continuation lines included."""
    block = PAGES["how-it-works.md"].split("## The code", 1)[1].split("```", 2)[1]
    entries: dict[str, str] = {}
    current = ""
    for line in block.splitlines():
        head = re.match(r"^  (\S+)", line)
        if head:
            current = head.group(1)
        entries[current] = entries.get(current, "") + line + "\n"
    return entries


def test_the_code_map_names_every_module() -> None:
    """Every module of claude_mem/ is named in the code map: a top-level one anywhere in it, one
    inside a package (or a package inside a package) in its package's entry, by its file name."""
    entries = _code_map()
    whole = "".join(entries.values())
    missing = []
    for path in sorted((ROOT / "claude_mem").rglob("*.py")):
        parts = path.relative_to(ROOT / "claude_mem").parts
        if parts[-1] == "__init__.py" and len(parts) < 3:
            continue
        name = f"{parts[-2]}/" if parts[-1] == "__init__.py" else parts[-1]
        if len(parts) == 1:
            found = name in whole
        else:
            text = next((t for entry, t in entries.items() if f"{parts[0]}/" in entry), "")
            found = re.search(rf"(?<![\w/]){re.escape(name)}", text) is not None
        if not found:
            missing.append("/".join(parts))
    assert missing == []
