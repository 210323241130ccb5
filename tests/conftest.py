"""Shared fixtures. Tests never touch the real home directory: every test gets its own data
dir through CLAUDE_MEM_DATA_DIR, and workers are not auto-started unless a test asks."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from claude_mem import settings
from tests.claude_cli import PROJECT
from tests.stores import Stored, populate

if TYPE_CHECKING:
    from claude_mem.index.semantic_index import Index

# Bytecode is written, whatever the environment says (PYTHONDONTWRITEBYTECODE is set on some
# machines, this one among them): else every hook, worker, service and CLI process a test starts
# compiles the editable install's sources again, and every xdist worker rewrites every test
# module's asserts (a fresh clone's collection took twice as long). A wheel has pip's bytecode.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
TRANSCRIPTS = SHARED_DATA / "transcripts"


# A memory service started outside any test's own environment (by a module-scoped fixture) must
# not outlive the run by the default half hour; the session's end stops whatever is left anyway.
os.environ["CLAUDE_MEM_SERVICE_IDLE_S"] = "15"
# MiniLM, which `auto` runs for an English store, without judging each test's store (the tests
# of auto itself, tests/test_embedder_choice.py, and of the multilingual model ask for theirs).
os.environ["CLAUDE_MEM_EMBEDDER"] = "minilm"


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
    monkeypatch.setenv("CLAUDE_MEM_EMBEDDER", "minilm")  # as above
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))  # `install --codex` never reaches ~/.codex
    # A memory service some test started and nobody stopped (it was still starting when the
    # test ended) goes away by itself soon after.
    monkeypatch.setenv("CLAUDE_MEM_SERVICE_IDLE_S", "15")
    yield directory
    # A worker, a search or the viewer may have started the data folder's memory service.
    from claude_mem.service.control import stop_service

    stop_service(str(directory))


@pytest.fixture
def two_projects(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """A fresh database with two sessions: s1 in project alpha, s2 in beta."""
    from claude_mem.store.db import connect
    from claude_mem.store.records import ensure_session

    db = connect(str(tmp_path / "claude-mem.db"))
    ensure_session(db, "s1", project="alpha", cwd=None, transcript_path=None)
    ensure_session(db, "s2", project="beta", cwd=None, transcript_path=None)
    yield db
    db.close()


@pytest.fixture
def stored(data_dir: Path) -> Stored:
    """The CLI tests' store (tests/stores.py `populate`) in this test's data dir. Recall tests that
    want the other store (`build`) name their own fixture."""
    return populate()


@pytest.fixture
def index(stored: Stored) -> Iterator[Index]:
    """The embedded Chroma index of `stored`, caught up."""
    from claude_mem.index.semantic_index import Index

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


def cli_json(*args: str, env: dict[str, str] | None = None) -> object:
    """Run `claude-mem ARGS --json` in a subprocess and decode its output."""
    proc = subprocess.run([sys.executable, "-m", "claude_mem", *args, "--json"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


# --- pytest-xdist ---------------------------------------------------------------------------------
# The suite runs in parallel (`-n` in pyproject's addopts). The tests of these modules share a
# module-scoped fixture (the replay of the real transcripts, a memory service, a Chroma server, an
# indexed store, a built wheel, a browser): each module runs in one worker, so its fixture is made
# once, not once per worker. Every other test is scheduled on its own. tests/test_suite.py checks
# the list against the fixtures the tests use. (xdist's own `--dist loadgroup` cannot do this
# here: it marks groups by rewriting node ids, which pytest 9.2 no longer lets it do, and then
# silently groups nothing: pytest-xdist issue 1386.)
SHARED_FIXTURE_MODULES = frozenset(f"tests/{name}.py" for name in (
    "hardening/test_hardening_fuzz", "test_index", "test_layout", "test_mcp_server", "test_recall_cli", "test_replay", "test_search",
    "test_multilingual", "test_search_quality", "test_search_turns", "test_service", "test_team", "test_viewer_browser",
    "test_wheel"))


def xdist_scope(nodeid: str) -> str:
    """The unit of work a test is scheduled in: its module if that shares a fixture, else itself."""
    module = nodeid.split("::", 1)[0]
    return module if module in SHARED_FIXTURE_MODULES else nodeid


class _SharedFixtureScheduling:
    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: object) -> object:
        if config.getvalue("dist") != "load":  # an explicit --dist is the user's choice
            return None
        from xdist.scheduler import LoadScopeScheduling

        class Scheduling(LoadScopeScheduling):
            def _split_scope(self, nodeid: str) -> str:
                return xdist_scope(nodeid)

        return Scheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Slow tests first (in their order): in parallel the longest work starts at once and the
    quick tests fill in around it, rather than a slow test starting near the end and running alone."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_SharedFixtureScheduling(), "claude-mem-xdist-scheduling")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--long", action="store_true", default=False,
                     help="deeper hardening runs (tests/hardening): every event, more kills, more fuzz cases")


@pytest.fixture(scope="session")
def long_run(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--long"))


# The hardening scenarios' rows (tests/hardening/support.py `record`) travel with each test's
# report, so the table is the same whether the tests ran here or in pytest-xdist workers: a
# worker's own list never reaches the process that prints the summary.
RELIABILITY_PROPERTY = "claude_mem_reliability"
_reliability_rows: list[tuple[int, int, dict]] = []


@pytest.fixture(autouse=True)
def reliability_rows(request: pytest.FixtureRequest) -> Iterator[None]:
    support = sys.modules.get("tests.hardening.support")
    start = len(support.REPORT) if support else 0
    yield
    support = sys.modules.get("tests.hardening.support")
    if support is None or len(support.REPORT) == start:
        return
    # Collection order (the same in every xdist worker) puts the rows in one order however the
    # tests were spread.
    order = request.session.items.index(request.node) if request.node in request.session.items else len(request.session.items)
    for n, row in enumerate(support.REPORT[start:]):
        request.node.user_properties.append((RELIABILITY_PROPERTY, {"order": [order, n], "row": asdict(row)}))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when != "teardown":  # the fixture above adds the rows while the test is torn down
        return
    for name, value in report.user_properties:
        if name == RELIABILITY_PROPERTY:
            _reliability_rows.append((*value["order"], value["row"]))


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:  # noqa: ANN001
    """The hardening suite's numbers, one table (docs/reliability.md shows it)."""
    if not _reliability_rows:
        return
    from tests.hardening.support import Row, report_table

    rows = [Row(**row) for *_, row in sorted(_reliability_rows, key=lambda r: (r[0], r[1]))]
    terminalreporter.section("claude-mem reliability" + (" (--long)" if config.getoption("--long") else ""))
    for line in report_table(rows):
        terminalreporter.write_line(line)


@pytest.fixture
def sandbox(data_dir: Path) -> Iterator[dict[str, Any]]:
    """Folders and environment for one `claude` user of the end-to-end tests (tests/claude_cli.py).
    TMPDIR is short on purpose: the CLI puts a unix socket there, and socket paths are limited to
    ~100 bytes."""
    root = Path(tempfile.mkdtemp(prefix="cm-", dir="/tmp"))
    paths = {name: root / name for name in ("home", "cfg", "t")}
    for path in paths.values():
        path.mkdir()
    project = root / PROJECT
    project.mkdir()
    env = {
        # Without the venv on PATH, a hook only works through the absolute path install wrote.
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(paths["home"]),
        "CLAUDE_CONFIG_DIR": str(paths["cfg"]),
        "TMPDIR": str(paths["t"]),
        "LANG": "C.UTF-8",
        "CLAUDE_MEM_DATA_DIR": str(data_dir),
        "CLAUDE_MEM_WORKER_AUTOSTART": "0",
        "CLAUDE_MEM_SERVICE_IDLE_S": "15",
        # The CLI connects MCP servers in the background and does not wait for them: on a busy
        # machine our server (a Python start) came up after the first request, whose tools then
        # lacked it. Blocking, with a long connect timeout, it waits (tried: a server that takes
        # 6 s to start is offered in the first request only with both set).
        "MCP_CONNECTION_NONBLOCKING": "0",
        "MCP_CONNECT_TIMEOUT_MS": "60000",
        "MCP_TIMEOUT": "60000",
        "ANTHROPIC_API_KEY": "sk-ant-fake",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_MAX_RETRIES": "1",  # a scripting mistake should fail fast, not back off for minutes
        # The checkout under test, not whatever claude-mem the venv's console script was installed from.
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
    }
    yield {"env": env, "project": project, "settings": paths["cfg"] / "settings.json", "data": data_dir}
    shutil.rmtree(root, ignore_errors=True)
