"""Long work shows its progress: on a terminal the long commands draw a bar (what, how
far, the rate, the time left); piped, `--json`, NO_COLOR or TERM=dumb they print their one final
line as before; Ctrl-C leaves the store and the index consistent, says how to go on, and a rerun
goes on. Real processes: the CLI under a pseudo-terminal (the pty module), the memory service and
the embedded Chroma index with the real embedding model."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.index.semantic_index import Index
from claude_mem.progress import Progress, describe
from claude_mem.service import client
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, insert_observation
from claude_mem.store.records import ensure_session
from tests.waiting import wait_until

STORE_ROWS = 1200  # "a thousand observations or so": one document each, seconds to embed (the bar moves 9+ times)
WORDS = ["parser", "cache", "index", "token", "login", "export", "import", "retry", "queue", "worker", "service", "digest",
         "prompt", "search", "vector", "summary"]


def fill(db: Path, rows: int) -> None:
    conn = connect(str(db))
    with transaction(conn):
        for s in range(-(-rows // 100)):
            ensure_session(conn, f"s{s}", project="proj", cwd="/tmp/proj", transcript_path=None)
        for i in range(rows):
            title = f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} change number {i}"
            insert_observation(conn, f"s{i // 100}", "proj", Observation(type="change", title=title), prompt_number=1)
    conn.close()


@pytest.fixture
def big_store(data_dir: Path) -> Path:
    """The data folder holding STORE_ROWS observations and no index (a second to write)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    fill(data_dir / "claude-mem.db", STORE_ROWS)
    return data_dir


def ctrl_c_as_at_a_terminal() -> None:
    """In the child: SIGINT as a terminal's foreground job has it. A shell starts background jobs
    with SIGINT ignored and a Python child keeps it so; these tests must not depend on what ran pytest."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def on_terminal(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> tuple[int, str]:
    """Run `claude-mem ARGS` with stdin, stdout and stderr on a pseudo-terminal; (exit status, output)."""
    environ = {**os.environ, "TERM": "xterm", **(env or {})}
    if "NO_COLOR" not in (env or {}):
        environ.pop("NO_COLOR", None)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", *args], stdin=slave, stdout=slave, stderr=slave, env=environ,
                            close_fds=True)
    os.close(slave)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other side closed (Linux says EIO)
                break
            if not chunk:
                break
            out += chunk
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=30), out.decode(errors="replace")


def piped(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "claude_mem", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


BAR = re.compile(r"rebuilding the index\s+\[[#\- ]*\]\s+(\d+)/(\d+)")


# --- reindex ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_reindex_on_a_terminal_draws_a_bar_to_the_total_and_piped_prints_one_line(big_store: Path) -> None:
    status, out = on_terminal("reindex")
    assert status == 0, out[-2000:]
    frames = [(int(done), int(total)) for done, total in BAR.findall(out)]
    counts = [done for done, _ in frames]
    assert len(set(counts)) >= 3, f"the bar moved several times: {counts}"
    assert counts == sorted(counts) and counts[-1] == STORE_ROWS and {t for _, t in frames} == {STORE_ROWS}
    assert re.search(r"rows/s, \d+ (s|min) left", out), "the rate and the time left are shown"
    assert f"reindexed {STORE_ROWS} observations, 0 summaries and 0 prompts" in out.splitlines()[-1]

    quiet = piped("reindex")
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert quiet.stdout.splitlines() == [quiet.stdout.strip()] and quiet.stdout.startswith(f"reindexed {STORE_ROWS} obs")
    for env, args in (({"NO_COLOR": "1"}, ()), ({"TERM": "dumb"}, ()), ({}, ("--json",))):
        status, out = on_terminal("reindex", *args, env=env)
        assert status == 0 and not BAR.search(out) and "\r" not in out.replace("\r\n", "\n"), (env, args, out)
        if args:
            assert json.loads(out)["observation"] == STORE_ROWS
        else:
            assert out.strip().splitlines() == [out.strip()], (env, out)


def job(data_dir: Path) -> dict | None:
    try:
        return client.call(str(data_dir), "progress", timeout_s=2, start=False)["job"]
    except (client.ServiceUnavailable, client.ServiceError):
        return None


@pytest.mark.slow
def test_ctrl_c_during_reindex_keeps_the_index_consistent_and_a_second_reindex_finishes(big_store: Path) -> None:
    assert piped("reindex").returncode == 0  # built once: the Ctrl-C below stops a rebuild, not a first build
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "reindex"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, preexec_fn=ctrl_c_as_at_a_terminal)
    under_way = wait_until(lambda: (j := job(big_store)) is not None and j["what"] == "rebuilding the index" and j["done"] > 0, 120,
                           step=0.05)
    assert under_way, "the rebuild got going"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and out == "", (proc.returncode, out, err)
    assert err.startswith("interrupted: ") and "`claude-mem status` shows how far" in err and "`claude-mem reindex`" in err

    # The service goes on with the rebuild by itself, as the message says: once its job is over
    # (waited on, not guessed at), the index is whole and status says so.
    assert wait_until(lambda: job(big_store) is None, 120, step=0.2), "the service finished the rebuild"
    index = json.loads(piped("status", "--json").stdout)["index"]
    assert index["state"] == "in sync" and index["observation"]["indexed"] == STORE_ROWS, index
    text = piped("status").stdout
    assert "in sync" in text and "catching up" not in text, text

    again = piped("reindex")
    assert again.returncode == 0 and again.stdout.startswith(f"reindexed {STORE_ROWS} observations"), again
    final = json.loads(piped("status", "--json").stdout)["index"]
    assert final["state"] == "in sync" and final["observation"]["indexed"] == STORE_ROWS, final


@pytest.mark.slow  # a real memory service (or the export of a whole store) for seconds
def test_a_rebuild_cut_short_is_resumed_not_started_over(data_dir: Path) -> None:
    """In one process (as `reindex` runs without a memory service): Ctrl-C between two chunks
    keeps what was rebuilt, index_state says exactly that, and the next reindex does the rest."""
    rows = 600  # three chunks of the index's upserts
    config = settings.load()
    config.ensure_dirs()
    fill(Path(config.db_path), rows)
    conn = connect(config.db_path)
    index = Index(config)
    index.index_missing(conn)

    def ctrl_c_after_the_first_chunk(progress: Progress) -> None:
        if progress.done:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index.reindex(conn, Progress("rebuilding", on_change=ctrl_c_after_the_first_chunk))
    stopped = index.drift(conn)
    kept = conn.execute("SELECT COUNT(*) FROM index_state").fetchone()[0]
    assert 0 < kept < rows and stopped["observation"]["indexed"] == kept, "index_state says which rows are in"
    assert (Path(config.data_dir) / "reindex.unfinished").exists()

    progress = Progress("rebuilding")
    counts = index.reindex(conn, progress)
    assert index.resumed and counts["observation"] == rows - kept and progress.done == progress.total == rows - kept
    assert index.drift(conn)["in_sync"] and not (Path(config.data_dir) / "reindex.unfinished").exists()
    again = index.reindex(conn)
    assert not index.resumed and again["observation"] == rows, "a finished rebuild is not resumed: the next starts over"
    conn.close()
    index.close()


def test_progress_says_how_far_the_rate_and_the_time_left() -> None:
    progress = Progress("indexing", 1000)
    progress.advance(250)
    progress.started -= 5  # as if the 250 rows took five seconds
    line = describe(progress.as_dict())
    assert line == "indexing: 250 of 1,000 rows (25%), 50 rows/s, about 15 s left", line
    assert describe({"what": "catching up", "done": 0, "total": 0}) == "catching up: 0 of 0 rows"


# --- import, forget, reprocess ----------------------------------------------------------------------

IMPORT_ROWS = 600


@pytest.fixture
def export_file(tmp_path: Path) -> Path:
    """An export of IMPORT_ROWS observations, made in a data folder of its own."""
    source = tmp_path / "source"
    source.mkdir()
    fill(source / "claude-mem.db", IMPORT_ROWS)
    out = tmp_path / "export.jsonl"
    made = piped("export", "-o", str(out), env={"CLAUDE_MEM_DATA_DIR": str(source), "CLAUDE_MEM_SEMANTIC_INDEX": "0"})
    assert made.returncode == 0, made.stderr
    return out


def frames(out: str, what: str) -> list[tuple[int, int]]:
    return [(int(d), int(t)) for d, t in re.findall(re.escape(what) + r"\s+\[[#\- ]*\]\s+(\d+)/(\d+)", out)]


@pytest.mark.slow
def test_import_shows_its_rows_then_their_indexing_and_forget_its_removal(export_file: Path, data_dir: Path) -> None:
    status, out = on_terminal("import", str(export_file))
    assert status == 0, out
    added, indexed = frames(out, "adding rows"), frames(out, "indexing the new rows")
    assert added and added[-1][0] == added[-1][1] == IMPORT_ROWS + IMPORT_ROWS // 100  # the sessions too
    assert indexed and indexed[-1] == (IMPORT_ROWS, IMPORT_ROWS) and len({d for d, _ in indexed}) >= 2, indexed
    assert out.splitlines()[-1].startswith(f"imported {IMPORT_ROWS // 100} sessions, {IMPORT_ROWS} observations")
    again = piped("import", str(export_file))
    assert again.returncode == 0 and again.stderr == "" and again.stdout.count("\n") == 1, again

    status, out = on_terminal("forget", "--project", "proj", "--yes")
    assert status == 0, out
    assert frames(out, "forgetting rows")[-1] == (IMPORT_ROWS, IMPORT_ROWS), out
    assert frames(out, "dropping their documents from the semantic index")[-1] == (IMPORT_ROWS, IMPORT_ROWS), out
    assert "compacting the database (VACUUM)…" in out and "forgot 6 sessions, 600 observations" in out
    quiet = piped("forget", "--project", "proj", "--yes")
    assert quiet.returncode == 1 and quiet.stdout == "" and quiet.stderr.count("\n") == 1, "nothing left: one line"


@pytest.mark.slow
def test_ctrl_c_while_an_import_indexes_keeps_the_rows_and_the_index_catches_up(export_file: Path, data_dir: Path) -> None:
    environ = {**os.environ, "TERM": "xterm"}
    environ.pop("NO_COLOR", None)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "import", str(export_file)], stdin=slave, stdout=slave,
                            stderr=slave, env=environ, close_fds=True, preexec_fn=ctrl_c_as_at_a_terminal)
    os.close(slave)
    out = ""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not re.search(r"indexing the new rows\s+\[[#\- ]*\]\s+[1-9]\d*/", out):
        if select.select([master], [], [], 0.1)[0]:
            out += os.read(master, 65536).decode(errors="replace")
    proc.send_signal(signal.SIGINT)  # what Ctrl-C sends the foreground process
    while select.select([master], [], [], 5)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk.decode(errors="replace")
    os.close(master)
    assert proc.wait(timeout=60) == 130, out
    assert "interrupted: the rows are imported and searchable by keyword" in out and "claude-mem doctor --fix" in out
    rows = connect(str(data_dir / "claude-mem.db")).execute("SELECT COUNT(*) FROM observations").fetchone()[0]
    assert rows == IMPORT_ROWS, "the import itself was whole"
    again = piped("import", str(export_file))
    assert again.returncode == 0 and again.stdout.startswith("nothing new"), again
    fixed = piped("doctor", "--fix")
    assert "index" in fixed.stdout, fixed.stdout
    final = json.loads(piped("status", "--json").stdout)["index"]
    assert final["state"] == "in sync" and final["observation"]["indexed"] == IMPORT_ROWS, final


@pytest.mark.slow
def test_reprocess_wait_shows_the_events_redone(tmp_path: Path, data_dir: Path) -> None:
    from tests.worker_helpers import fake_env, play_demo

    play_demo(tmp_path / "proj")
    heuristic = {"CLAUDE_MEM_SYNTHESIZER": "heuristic", "CLAUDE_MEM_SEMANTIC_INDEX": "0"}
    assert subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", "sess-demo", "--drain"],
                          env={**os.environ, **heuristic}, capture_output=True, timeout=90).returncode == 0
    env = fake_env(tmp_path, [], default={"per_event": True, "sleep": 0.3})
    status, out = on_terminal("reprocess", "--session", "sess-demo", "--wait", env=env)
    assert status == 0, out
    shown = frames(out, "events redone by the model")
    assert shown and shown[-1] == (7, 7), out
    assert "re-queued 7 event(s) of sess-demo for the model" in out and "no attempt counted" not in out
    assert "nothing to reprocess" in piped("reprocess", "--session", "sess-demo", "--wait", env=env).stderr


@pytest.mark.slow
def test_the_services_catch_up_shows_in_status_and_the_viewer(big_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A store with no index (an upgrade, an import done elsewhere): the memory service catches up
    by itself, and `status` and the viewer say how far it is, its rate and the time left."""
    from claude_mem.viewer import data

    # What the page shows, not how long it waits: at 0.5 s, a service busy embedding beside a
    # loaded suite (four xdist workers) once went unanswered for the whole catch-up.
    monkeypatch.setattr(data, "SERVICE_TIMEOUT_S", 10.0)
    assert client.call(str(big_store), "ping", timeout_s=60, wait=True)["pid"]
    config = settings.load()

    def viewer_job() -> dict | None:
        conn = connect(config.db_path)
        try:
            return data.health(config, conn)["service"]["index_job"]
        finally:
            conn.close()

    def text() -> str | None:
        out = piped("status").stdout
        return out if "catching up: " in out and "rows/s" in out else None

    # Each of `status --json`, `status` and the viewer watched at once, each seen showing the job
    # while it runs: one after the other, a round of three took longer than a loaded machine's
    # whole catch-up (each `status` ~3.5 s beside six busy processes, the catch-up ~10 s).
    watchers = {"job": lambda: json.loads(piped("status", "--json").stdout)["service"].get("index_job"),
                "text": text, "viewed": viewer_job}
    with ThreadPoolExecutor(len(watchers)) as pool:
        seen = dict(zip(watchers, pool.map(lambda watch: wait_until(watch, 120, step=0.1), watchers.values()), strict=True))
    assert all(seen.values()), seen
    assert seen["job"]["what"] == "catching up" and seen["job"]["total"] == STORE_ROWS and seen["job"]["done"] <= STORE_ROWS
    assert re.search(rf"catching up: [\d,]+ of {STORE_ROWS:,} rows \(\d+%\), [\d,]+ rows/s", seen["text"]), seen["text"]
    assert "catching up by itself" in seen["text"]
    assert seen["viewed"]["what"] == "catching up" and seen["viewed"]["total"] == STORE_ROWS, seen["viewed"]
    assert wait_until(lambda: json.loads(piped("status", "--json").stdout)["index"]["state"] == "in sync", 120)
    assert "describeJob(service.index_job)" in (Path(data.__file__).parent / "static" / "app.js").read_text()
