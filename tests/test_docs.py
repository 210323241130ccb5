"""The README cannot drift from the code: its test command is the one CI runs, and every command
and setting it should describe is there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

from claude_mem.cli.app import cli
from claude_mem.hook_table import HOOK_COMMANDS
from claude_mem.settings import SETTINGS
from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def fenced_commands() -> list[str]:
    return [line.strip() for block in re.findall(r"```(?:bash|sh)?\n(.*?)```", README, re.S) for line in block.splitlines()]


def test_ci_runs_the_readmes_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    command = ci[-1].strip()
    assert command.startswith("python3 -m venv .venv && ") and "pytest" in command
    assert command in fenced_commands(), "README's test command and .ci/run's last line must be the same"


def test_readme_has_the_inner_loop_and_the_marker_is_registered() -> None:
    assert '.venv/bin/pytest -q -m "not slow"' in fenced_commands()
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^markers = \[\n\s+"slow: ', pyproject, re.M), "pytest knows the slow marker"


def test_readme_has_the_run_it_command() -> None:
    assert "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/claude-mem demo" in fenced_commands()


def test_every_command_is_documented() -> None:
    missing = [name for name in cli.commands if name not in HOOK_COMMANDS and f"`claude-mem {name}" not in README
               and f"`{name}`" not in README]
    assert missing == []


def test_every_setting_is_documented() -> None:
    missing = [key for key in SETTINGS if f"`{key}`" not in README]
    assert missing == []


def test_the_screenshot_exists() -> None:
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README)
    assert images, "the README shows the viewer"
    for path in images:
        assert (ROOT / path).is_file(), path


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
