"""How the suite itself runs: in parallel (pytest-xdist), the tests that share a module-scoped
fixture in one worker, and the hardening table printed the same whichever worker ran what."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED_FIXTURE_MODULES, xdist_scope


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    return info is not None and any(defs and defs[-1].scope == "module" for defs in info.name2fixturedefs.values())


def test_no_test_module_imports_another() -> None:
    """What several test modules share lives in a helper module (docs/development.md): importing a
    test module runs its module-level set-up and collects its tests' names into another."""
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}" for path in sorted((ROOT / "tests").rglob("*.py"))
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if re.match(r"\s*(from tests(\.\w+)*\.test_\w+ import|import tests(\.\w+)*\.test_)", line)]
    assert found == []


def test_tests_sharing_a_module_fixture_are_scheduled_together(request: pytest.FixtureRequest) -> None:
    items = request.session.items
    sharing = {item.nodeid.split("::", 1)[0] for item in items if _uses_a_module_fixture(item)}
    assert sharing - SHARED_FIXTURE_MODULES == set(), "add these to SHARED_FIXTURE_MODULES in tests/conftest.py"
    # (Deselected tests are not in the session: a stale entry is found in the source.)
    stale = [path for path in SHARED_FIXTURE_MODULES if 'scope="module"' not in (ROOT / path).read_text(encoding="utf-8")]
    assert stale == [], "no module fixture there any more: drop them from the list"
    assert xdist_scope("tests/test_replay.py::test_real_hooks_all_exit_clean") == "tests/test_replay.py"
    assert xdist_scope("tests/test_worker.py::test_chaos_kill_9_loses_and_duplicates_nothing[3]") == \
        "tests/test_worker.py::test_chaos_kill_9_loses_and_duplicates_nothing[3]"


CONFTEST = """
from tests.conftest import (  # noqa: F401  (the hooks and fixtures that fill and print the table)
    long_run, pytest_addoption, pytest_configure, pytest_runtest_logreport, pytest_terminal_summary, reliability_rows)
"""
FIRST = """
import os
import pathlib
import time
from tests.hardening.support import record

def test_records_two_rows():
    # In parallel, the other file's row arrives first: the case the table must be ordered in.
    if os.environ.get("PYTEST_XDIST_WORKER"):
        deadline = time.monotonic() + 60
        while not pathlib.Path("second-recorded").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        pathlib.Path("first-waited").write_text("yes" if pathlib.Path("second-recorded").exists() else "no")
    record("first: one", events=3, note="collected first")
    record("first: two", lost=0, max_hook_ms=12.0)

def test_records_nothing():
    pass
"""
SECOND = """
import pathlib
from tests.hardening.support import record

def test_records_one_row():
    record("second: one", fuzz_cases=7)
    pathlib.Path("second-recorded").write_text("")
"""


@pytest.mark.slow
def test_the_reliability_table_is_the_same_with_and_without_xdist(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_first.py").write_text(FIRST)
    (tmp_path / "test_second.py").write_text(SECOND)
    # Not this run's xdist worker's variables: the serial run would take itself for a worker (and
    # its first file wait a minute for the second).
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_XDIST", "PYTEST_CURRENT"))}, "PYTHONPATH": str(ROOT)}

    def table(*args: str) -> list[str]:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c", str(tmp_path / "pytest.ini"),
                               "--rootdir", str(tmp_path), *args, str(tmp_path)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        match = re.search(r"=+ claude-mem reliability =+\n(.*?\nTOTAL[^\n]*)\n", proc.stdout, re.S)
        assert match, proc.stdout[-3000:]
        return match.group(1).splitlines()

    serial = table("-n", "0")
    (tmp_path / "second-recorded").unlink()
    parallel = table("-n", "2", "--dist", "loadfile")  # a file a worker: the two files run side by side
    assert (tmp_path / "first-waited").read_text() == "yes", "the second file's row did not come first"
    assert parallel == serial
    assert [line.split("  ")[0] for line in serial[2:]] == ["first: one", "first: two", "second: one", "TOTAL"]
    assert serial[-1].split()[1:7] == ["3", "0", "0", "0", "7", "12"]
