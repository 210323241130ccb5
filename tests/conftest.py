"""Shared fixtures. Tests never touch the real home directory: every test gets its own data
dir through CLAUDE_MEM_DATA_DIR, and workers are not auto-started unless a test asks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from claude_mem import settings
from tests.stores import Stored, populate

if TYPE_CHECKING:
    from claude_mem.recall.index import Index

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
TRANSCRIPTS = SHARED_DATA / "transcripts"


# A memory service started outside any test's own environment (by a module-scoped fixture) must
# not outlive the run by the default half hour; the session's end stops whatever is left anyway.
os.environ["CLAUDE_MEM_SERVICE_IDLE_S"] = "15"


@pytest.fixture(autouse=True, scope="session")
def no_service_outlives_the_tests(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield
    import psutil

    base = str(tmp_path_factory.getbasetemp())
    leftovers = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            cmd = proc.info["cmdline"] or []
            if "claude_mem" in cmd and "service" in cmd and proc.cwd().startswith(base):
                proc.terminate()
                leftovers.append(proc)
        except (psutil.Error, OSError):
            continue
    psutil.wait_procs(leftovers, timeout=10)


@pytest.fixture(autouse=True)
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    directory = tmp_path / "data"
    for name in list(os.environ):
        if name.startswith("CLAUDE_MEM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("CLAUDE_MEM_DATA_DIR", str(directory))
    monkeypatch.setenv("CLAUDE_MEM_WORKER_AUTOSTART", "0")
    # A memory service some test started and nobody stopped (it was still starting when the
    # test ended) goes away by itself soon after.
    monkeypatch.setenv("CLAUDE_MEM_SERVICE_IDLE_S", "15")
    yield directory
    # A worker, a search or the viewer may have started the data folder's memory service.
    from claude_mem.service.control import stop_service

    stop_service(str(directory))


@pytest.fixture
def stored(data_dir: Path) -> Stored:
    """The CLI tests' store (tests/stores.py `populate`) in this test's data dir. Recall tests that
    want the other store (`build`) name their own fixture."""
    return populate()


@pytest.fixture
def index(stored: Stored) -> Iterator[Index]:
    """The embedded Chroma index of `stored`, caught up."""
    from claude_mem.recall.index import Index

    ix = Index(settings.load())
    ix.index_missing(stored.conn)
    yield ix
    ix.close()


@pytest.fixture
def live_worker(stored: Stored) -> Iterator[str]:
    """This test process registered as sess-alpha's live worker."""
    from tests.cli_helpers import registered_worker

    with registered_worker("sess-alpha") as session_id:
        yield session_id


def run_hook(command: str, payload: dict | str | bytes, *, env: dict[str, str] | None = None,
             timeout: float = 30) -> subprocess.CompletedProcess[str]:
    """Run one hook command as Claude Code does: a fresh process, JSON on stdin."""
    if isinstance(payload, dict):
        data = json.dumps(payload).encode()
    elif isinstance(payload, str):
        data = payload.encode()
    else:
        data = payload
    proc = subprocess.run([sys.executable, "-m", "claude_mem", command], input=data, capture_output=True,
                          timeout=timeout, env={**os.environ, **(env or {})})
    return subprocess.CompletedProcess(proc.args, proc.returncode, proc.stdout.decode(), proc.stderr.decode(errors="replace"))


def cli_json(*args: str, env: dict[str, str] | None = None) -> object:
    """Run `claude-mem ARGS --json` in a subprocess and decode its output."""
    proc = subprocess.run([sys.executable, "-m", "claude_mem", *args, "--json"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true", default=False,
                     help="deeper hardening runs (tests/hardening): every event, more kills, more fuzz cases")


@pytest.fixture(scope="session")
def long_run(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--long"))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # noqa: ANN001
    """The hardening suite's numbers, one table (the README's reliability section shows it)."""
    from tests.hardening.support import REPORT, report_table

    if REPORT:
        terminalreporter.section("claude-mem reliability" + (" (--long)" if config.getoption("--long") else ""))
        for line in report_table(REPORT):
            terminalreporter.write_line(line)
