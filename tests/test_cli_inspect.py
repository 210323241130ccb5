"""The looking commands: sessions, show, observations, summaries, queue, workers, status, logs,
and the shared table/colour formatting. In-process through click's runner unless a real
terminal or a signal is the point."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.cli.format import Column, plural, table_lines
from claude_mem.store.db import connect, transaction
from claude_mem.store.records import record_reply
from claude_mem.worker import spawn
from tests.cli_helpers import dead_chroma, invoke, invoke_json, one_error_line
from tests.stores import Stored
from tests.waiting import read_line

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def columns_start_alike(lines: list[str]) -> None:
    """Every row's cells start where the header's columns do."""
    header = lines[0]
    starts = [m.start() for m in re.finditer(r"(?<=  )\S", header)]
    for line in lines[1:]:
        for start in starts:
            assert line[start - 2:start] == "  " or line[start - 1] == " ", (line, start)


# --- formatting ----------------------------------------------------------------------------------

def test_table_lines_align_right_pad_and_cut_to_width() -> None:
    lines = table_lines([Column("ID", ">"), Column("NAME"), Column("NOTE", fit=True)],
                        [(7, "a\nb", "short"), (1234, "longer name", "x" * 80)], width=40)
    assert lines[0] == "  ID  NAME         NOTE"
    assert lines[1] == "   7  a b          short"
    assert lines[2].startswith("1234  longer name  xxx") and lines[2].endswith("…") and len(lines[2]) <= 40
    assert table_lines([Column("A"), Column("B")], [(None, "")])[1] == "-"


def test_sessions_table_and_json(stored: Stored) -> None:
    out = invoke("sessions").output
    lines = out.splitlines()
    assert lines[0].split() == ["SESSION", "HOST", "PROJECT", "STATUS", "PROMPTS", "OBS", "SUMS", "STARTED", "FIRST", "PROMPT"]
    assert [line.split()[:2] for line in lines[1:]] == [["sess-beta", "claude-code"], ["sess-alpha", "claude-code"],
                                                        ["sess-old", "claude-code"]]  # newest first
    columns_start_alike(lines)
    assert "\x1b[" not in out  # not a terminal: no colour
    rows = invoke_json("sessions", "--project", "alpha")
    assert {r["claude_session_id"]: (r["observations"], r["summaries"]) for r in rows} == {"sess-alpha": (3, 2), "sess-old": (1, 0)}
    assert [r["claude_session_id"] for r in invoke_json("sessions", "--since", "30d")] == ["sess-beta", "sess-alpha"]
    assert [r["claude_session_id"] for r in invoke_json("sessions", "--until", "2000-01-01")] == []
    assert invoke("sessions", "--project", "nothing-here").output == "no sessions match\n"


@pytest.mark.parametrize("args", [("sessions", "--since", "last tuesday"), ("observations", "--until", "2026-13-45"),
                                  ("summaries", "--since", "soon")])
def test_a_malformed_date_is_one_line_and_exit_2(stored: Stored, args: tuple[str, ...]) -> None:
    line = one_error_line(invoke(*args, code=2).output)
    assert "is not a date" in line and "2026-11-22" in line and args[1] in line


def test_show_an_observation_summary_and_prompt(stored: Stored) -> None:
    login = stored.obs["login"]
    text = invoke("show", str(login)).output
    assert text == invoke("show", f"obs:{login}").output
    assert text.splitlines()[0] == f"obs:{login}  Fixed login crash"
    for expected in ("bugfix", "sess-alpha", "The refresh token was null after logout", "  - token refresh raced with logout",
                     "files modified", "  - src/session.py", "race condition"):
        assert expected in text
    data = invoke_json("show", f"obs:{login}")
    assert data["kind"] == "observation" and data["facts"] == ["token refresh raced with logout", "a lock now guards the refresh"]
    summary = invoke("show", f"sum:{stored.sums['alpha1']}").output
    assert "login works again" in summary and "src/session.py" in summary
    assert invoke_json("show", f"sum:{stored.sums['alpha1']}")["learned"] == "tokens expire"
    assert "why is CI slow" in invoke("show", "prompt:3").output and "reply" not in invoke("show", "prompt:3").output
    conn = connect(settings.load().db_path)
    with transaction(conn):
        record_reply(conn, "sess-beta", "The runner has two cores: jobs wait for each other.", None)
    conn.close()
    shown = invoke("show", "prompt:3").output
    assert "Claude's reply" in shown and "jobs wait for each other" in shown
    assert invoke_json("show", "prompt:3")["reply_text"] == "The runner has two cores: jobs wait for each other."


def test_show_a_session_in_order(stored: Stored) -> None:
    text = invoke("show", "sess-alpha").output
    order = [text.index(s) for s in ("fix the login crash", "Fixed login crash", "Ran the test suite", "login works again",
                                     "now add a dark theme", "Dark mode toggle", "persist the choice")]
    assert order == sorted(order)
    assert "(heuristic)" in text and text.startswith("session sess-alpha\n")
    data = invoke_json("show", "sess-al")  # a unique prefix is enough
    assert data["session"]["claude_session_id"] == "sess-alpha"
    assert [p["prompt_number"] for p in data["prompts"]] == [1, 2]
    assert [o["title"] for o in data["observations"]] == ["Fixed login crash", "Ran the test suite", "Dark mode toggle"]
    assert [s["prompt_number"] for s in data["summaries"]] == [1, 2]


@pytest.mark.parametrize(("ref", "code", "expected"), [
    ("999", 1, "no observation 999"), ("obs:999", 1, "no observation 999"), ("sum:42", 1, "no summary 42"),
    ("nobody", 1, "no session or observation 'nobody'"), ("sess-", 2, "starts 3 session ids"),
])
def test_show_unknown_or_ambiguous(stored: Stored, ref: str, code: int, expected: str) -> None:
    assert expected in one_error_line(invoke("show", ref, code=code).output)


def test_observation_filters(stored: Stored) -> None:
    def titles(*args: str) -> list[str]:
        return [o["title"] for o in invoke_json("observations", *args)]

    assert titles("--type", "bugfix") == ["Fixed login crash"]
    assert titles("--project", "beta") == ["The CI runner has two cores"]
    assert titles("--session", "sess-alpha", "--file", "theme.css") == ["Dark mode toggle"]
    assert titles("--file", "src/") == ["Fixed login crash"]
    assert titles("--until", "60d") == ["Chose PostgreSQL for billing"]
    assert "Chose PostgreSQL for billing" not in titles("--since", "yesterday")
    assert titles("--limit", "2") == ["Dark mode toggle", "The CI runner has two cores"]  # the newest two, oldest first
    lines = invoke("observations").output.splitlines()
    assert lines[0].split() == ["ID", "WHEN", "TYPE", "SOURCE", "PROJECT", "TITLE"]
    assert len(lines) == 6 and any("heuristic" in line for line in lines)
    columns_start_alike(lines)
    assert invoke("observations", "--type", "refactor").output == "no observations match\n"
    assert "no session 'ghost'" in one_error_line(invoke("observations", "--session", "ghost", code=1).output)
    assert "'idea' is not one of" in invoke("observations", "--type", "idea", code=2).output


def test_summary_filters(stored: Stored) -> None:
    assert [s["request"] for s in invoke_json("summaries", "--project", "alpha")] == ["fix the login", "dark theme"]
    assert [s["request"] for s in invoke_json("summaries", "--file", "session.py")] == ["fix the login"]
    lines = invoke("summaries").output.splitlines()
    assert lines[0].split() == ["ID", "WHEN", "SESSION", "#", "REQUEST", "COMPLETED"] and len(lines) == 4
    assert "no session 'ghost'" in invoke("summaries", "--session", "ghost", code=1).output


def test_queue_table(stored: Stored) -> None:
    lines = invoke("queue").output.splitlines()
    assert lines[0].split() == ["ID", "STATUS", "#", "SESSION", "EVENT", "TRIES", "LAST", "ERROR"]
    assert [line.split()[1] for line in lines[1:]] == ["pending", "done"]
    assert invoke("queue", "--status", "skipped").output == "no queued events match\n"
    assert "no session 'ghost'" in invoke("queue", "--session", "ghost", code=1).output


def test_queue_json_lists_every_column_but_the_guard_note_decoded(stored: Stored) -> None:
    """`claude-mem queue --json` as it was before the rows became records (store/rows.py): the same
    keys in the same order, JSON columns decoded, the flag a bool, the status its string."""
    first, done = invoke_json("queue")
    assert list(first) == [
        "id", "session_id", "kind", "tool_name", "tool_input", "tool_response", "tool_use_id", "is_error", "duration_ms",
        "agent_id", "cwd", "prompt_number", "status", "attempts", "last_error", "next_attempt_epoch", "claimed_by",
        "processed_by", "created_at", "created_at_epoch", "updated_at_epoch"]
    assert {k: first[k] for k in ("session_id", "tool_input", "tool_response", "is_error", "status", "prompt_number", "attempts")} \
        == {"session_id": "sess-alpha", "tool_input": {"command": "make test"}, "tool_response": {"stdout": "ok"},
            "is_error": False, "status": "pending", "prompt_number": 2, "attempts": 0}
    assert done["status"] == "done" and [r["id"] for r in invoke_json("queue", "--status", "done")] == [done["id"]]


@pytest.mark.parametrize("args", [("observations",), ("summaries",), ("show", "1"), ("status", "--json")])
def test_no_database_yet(data_dir: Path, args: tuple[str, ...]) -> None:
    if args[0] == "status":
        info = invoke_json("status")
        assert info["database_exists"] is False and info["counts"] == {}
        assert "none yet" in invoke("status").output
    else:
        assert "no database" in one_error_line(invoke(*args, code=1).output)
    assert not (data_dir / "claude-mem.db").exists()


# --- workers and status ------------------------------------------------------------------------------

def test_workers_table(live_worker: str) -> None:
    lines = invoke("workers").output.splitlines()
    assert lines[0].split() == ["PID", "SYNTHESIZER", "STARTED", "SESSION"]
    assert lines[1].split()[0] == str(os.getpid()) and lines[1].endswith("sess-alpha")
    assert [w["session_id"] for w in invoke_json("workers")] == ["sess-alpha"]


def test_status_reports_counts_queue_workers_model_and_errors(stored: Stored, live_worker: str, data_dir: Path,
                                                              monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no Claude Code login there
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    stored.conn.execute("UPDATE sdk_sessions SET observer_error = 'auth: invalid api key', observer_error_at_epoch = 5"
                        " WHERE claude_session_id = 'sess-beta'")
    stored.conn.execute("UPDATE observation_queue SET last_error = 'model timed out', attempts = 1 WHERE tool_use_id = 't-1'")
    (data_dir / "logs" / "claude-mem.log").write_text("2026-01-01T00:00:00Z pid=1 new: error: disk full\n"
                                                      "2026-01-01T00:00:01Z pid=1 worker: all good\n")
    info = invoke_json("status")
    assert info["counts"] == {"sessions": 3, "prompts": 4, "observations": 5, "summaries": 3, "raw_replies": 1}
    assert info["queue"] == {"pending": 1, "processing": 0, "done": 1, "skipped": 0}
    assert [w["session_id"] for w in info["workers"]] == ["sess-alpha"]
    assert info["credentials"] is None and info["model"] == "claude-haiku-4-5"
    assert info["model_outages"][0]["observer_error"] == "auth: invalid api key"
    assert info["last_queue_error"]["last_error"] == "model timed out"
    assert info["last_error"].endswith("error: disk full")
    assert info["index"] == {"state": "not built", "rows_to_index": 12, "embedder": "minilm",
                             "embedder_reason": "set by the embedder setting"}
    assert info["database_bytes"] > 0
    text = invoke("status").output
    for expected in ("3 sessions, 4 prompts, 5 observations, 3 summaries", "1 pending, 0 processing, 1 done, 0 skipped",
                     "1 live: pid", "no credentials found", "auth: invalid api key", "model timed out", "error: disk full",
                     "not built yet (12 rows to index", "minilm (all-MiniLM-L6-v2: English): set by the embedder setting",
                     "model cannot be used since 1970-01-01"):
        assert expected in text, expected
    assert "model cannot be used since 1970-01-01" in invoke("show", "sess-beta").output
    labels = [line.split("  ")[0] for line in text.splitlines()]
    assert len({len(line) - len(line.lstrip()) for line in labels}) == 1
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    text = invoke("status").output
    assert "ANTHROPIC_API_KEY is set" in text and "secret-value" not in text
    assert "not used" in invoke("status", env={"CLAUDE_MEM_SYNTHESIZER": "heuristic"}).output


def test_status_index_health_in_sync_drift_and_unavailable(stored: Stored) -> None:
    from claude_mem.index.semantic_index import Index

    index = Index(settings.load())
    index.index_missing(stored.conn)
    health = invoke_json("status")["index"]
    assert health["state"] == "in sync" and health["observation"] == {"sqlite": 5, "indexed": 5, "missing": 0, "stale": 0, "unfilled": 0}
    assert "in sync (5/5 observations, 3/3 summaries, 4/4 prompts indexed)" in invoke("status").output
    stored.conn.execute("DELETE FROM observations WHERE id = ?", (stored.obs["ci"],))
    health = invoke_json("status")["index"]
    assert health["state"] == "drift" and health["observation"]["stale"] == 1
    assert "drift: 0 rows missing, 1 stale" in invoke("status").output
    dead = dead_chroma()
    health = invoke_json("status", env=dead)["index"]
    assert health["state"] == "unavailable" and "127.0.0.1" in health["reason"]
    assert re.search(r"^index +unavailable: semantic index at http://127.0.0.1", invoke("status", env=dead).output, re.M)
    index.close()


# --- logs -------------------------------------------------------------------------------------------

def test_logs_tail_json_and_missing(data_dir: Path) -> None:
    assert "no log yet" in one_error_line(invoke("logs", code=1).output)
    logs = data_dir / "logs"
    logs.mkdir(parents=True)
    (logs / "claude-mem.log").write_text("".join(f"line {i}\n" for i in range(100)))
    assert invoke("logs").output.splitlines() == [f"line {i}" for i in range(60, 100)]
    assert invoke("logs", "-n", "3").output == "line 97\nline 98\nline 99\n"
    assert invoke_json("logs", "-n", "2")["lines"] == ["line 98", "line 99"]
    (logs / f"worker-{spawn.session_key('s/1')}.log").write_text("worker started\n")
    assert invoke("logs", "--session", "s/1").output == "worker started\n"
    assert "for session other" in invoke("logs", "--session", "other", code=1).output
    assert "-n" in invoke("logs", "-n", "-1", code=2).output


def test_logs_follow_prints_new_lines_until_ctrl_c(data_dir: Path) -> None:
    log = data_dir / "logs" / "claude-mem.log"
    log.parent.mkdir(parents=True)
    log.write_text("old line\n")
    # Ctrl-C as at a terminal: a shell starts background jobs with SIGINT ignored, and a Python
    # child keeps it ignored, so the test restores the default whatever ran pytest.
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "logs", "-f", "-n", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ},
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        assert read_line(proc) == "old line"
        with log.open("a") as fh:
            fh.write("new line\n")
        assert read_line(proc) == "new line"
        log.rename(log.with_suffix(".log.1"))  # rotation, as logs.py does it
        log.write_text("after rotation\n")
        assert read_line(proc) == "after rotation"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
        assert "Traceback" not in proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_plural_words() -> None:
    assert [plural(1, "summary"), plural(2, "summary"), plural(3, "raw model reply"), plural(0, "key"), plural(2, "row")] == [
        "1 summary", "2 summaries", "3 raw model replies", "0 keys", "2 rows"]


# --- colour -------------------------------------------------------------------------------------------

def run_in_terminal(args: list[str], env: dict[str, str]) -> str:
    """Run the CLI with a pseudo-terminal as stdout, as a person at a terminal would."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", *args], stdout=follower, stderr=follower,
                            stdin=subprocess.DEVNULL, env=env)
    os.close(follower)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 30)
            if not ready:
                break
            try:
                data = os.read(leader, 4096)
            except OSError:  # EIO: the other side closed
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(leader)
        proc.wait(30)
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_and_never_with_no_color(stored: Stored) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    coloured = run_in_terminal(["queue"], env)
    assert "\x1b[" in coloured and "pending" in ANSI.sub("", coloured)
    plain = run_in_terminal(["queue"], {**env, "NO_COLOR": "1"})
    assert "\x1b[" not in plain and "pending" in plain
    assert ANSI.sub("", coloured).replace("\r\n", "\n") == plain.replace("\r\n", "\n")


# --- every command ---------------------------------------------------------------------------------

def all_commands() -> list[tuple[str, ...]]:
    import click

    from claude_mem.cli.app import cli

    found: list[tuple[str, ...]] = []
    for name, command in sorted(cli.commands.items()):
        found.append((name,))
        if isinstance(command, click.Group):
            found += [(name, sub) for sub in sorted(command.commands)]
    return found


def test_every_command_has_help(data_dir: Path) -> None:
    names = all_commands()
    for expected in ("status", "sessions", "show", "observations", "summaries", "queue", "retry", "workers", "logs",
                     "forget", "prune", "export", "import", "doctor", "settings"):
        assert (expected,) in names
    for args in names:
        out = invoke(*args, "--help").output
        assert out.startswith("Usage: ") and len(out.splitlines()) > 3, args
    assert not data_dir.exists()  # asking for help touches nothing


def test_semantic_index_off(stored: Stored) -> None:
    off = {"CLAUDE_MEM_SEMANTIC_INDEX": "false"}
    assert invoke_json("status", env=off)["index"] == {"state": "off"}
    assert "off (setting semantic_index)" in invoke("status", env=off).output
    assert "ok    index drift: the semantic index is off" in invoke("doctor", env={**off, "CLAUDE_MEM_WORKER_AUTOSTART": "0"},
                                                                   code=1).output
    assert not (Path(settings.load().data_dir) / "chroma").exists()
