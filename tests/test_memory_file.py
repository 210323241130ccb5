"""The memory file: a line-budgeted section between markers in CLAUDE.md or AGENTS.md,
on a real SQLite store: what goes in (kinds, fading, knowledge updates, the budget), the bytes
outside the markers kept, no churn, the root only, the command, and the SessionEnd hook path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from claude_mem import settings
from claude_mem.memory_file.choose import choose
from claude_mem.memory_file.section import END, START, MarkersBroken, render, splice
from claude_mem.memory_file.write import update
from claude_mem.replay import run_hook
from claude_mem.settings import SETTINGS, SettingsError
from claude_mem.store import marks
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, Summary, insert_observation, upsert_summary
from claude_mem.store.records import ensure_session
from tests.cli_helpers import invoke, one_error_line
from tests.waiting import wait_until

DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01


def store(data_dir: Path, project: str = "proj") -> tuple[object, dict[str, int]]:
    """A project's memory over 60 days: knowledge, a decision, a fix, old and recent progress, a
    knowledge update (a port changed; the newer one a `change`), a repeated claim, a summary."""
    data_dir.mkdir(exist_ok=True)
    conn = connect(str(data_dir / "claude-mem.db"))
    memories = {
        "layout": ("discovery", "Layout: api/ serves HTTP, core/ holds the rules", 0),
        "port_old": ("discovery", "The API listens on port 8080", 1),
        "pick_pg": ("decision", "Postgres chosen over SQLite for concurrent writers", 2),
        "fix": ("bugfix", "Flaky login test fixed by freezing the clock", 3),
        "old_progress": ("feature", "Added the CSV export endpoint", 10),
        "port_new": ("change", "The API now listens on port 9090", 20),
        "recent": ("feature", "Added rate limiting to /login", 59),
        "last": ("refactor", "Split core/rules.py into one module per rule", 60),
    }
    ids = {}
    with transaction(conn):
        ensure_session(conn, "s1", project=project, cwd=str(data_dir), transcript_path=None)
        for key, (type_, title, day) in memories.items():
            ids[key] = insert_observation(conn, "s1", project, Observation(type=type_, title=title), prompt_number=1,
                                          created_at_epoch=T0 + day * DAY)
        marks.add(conn, ids["port_old"], ids["port_new"], "supersedes", "rule", rule="changed")
        upsert_summary(conn, "s1", project, Summary(request="Speed up login", completed="Rate limit added"), prompt_number=1)
        conn.execute("UPDATE session_summaries SET created_at_epoch = ?", (T0 + 60 * DAY,))
    return conn, ids


def text_of(conn: object, lines: int = 150, project: str = "proj") -> str:
    return "\n".join(render(project, choose(conn, project, lines - 2)))


def test_the_section_holds_current_knowledge_and_fades_old_progress(data_dir: Path) -> None:
    conn, _ = store(data_dir)
    text = text_of(conn)
    for title in ("Layout: api/", "Postgres chosen", "Flaky login test fixed", "Added rate limiting", "Split core/rules.py",
                  "Speed up login → Rate limit added"):
        assert title in text
    assert "port 8080" not in text, "a superseded memory is never in it"
    # The current side of the update is knowledge: 40 days older than the newest memory and still in.
    assert "port 9090" in text.split("### How things work")[1].split("###")[0]
    assert "CSV export" not in text, "progress 50 days older than the newest memory faded"
    assert text.index("### Decisions") < text.index("### Gotchas") < text.index("### How things work") < text.index("### Recent progress")
    assert "(2026-01-01)" in text  # the memory's own date, in UTC


def test_over_budget_a_kind_says_how_many_more_and_the_lines_stay_within(data_dir: Path) -> None:
    conn, _ = store(data_dir)
    with transaction(conn):
        for n in range(60):
            insert_observation(conn, "s1", "proj", Observation(type="discovery", title=f"Module m{n} parses its own input"),
                               prompt_number=1, created_at_epoch=T0 + DAY)
    for budget in (20, 40, 60):
        lines = render("proj", choose(conn, "proj", budget - 2))
        assert len(lines) <= budget
        more = [ln for ln in lines if ln.startswith("- …and ")]
        assert more and more[0].endswith("more: ask claude-mem")
        assert "Postgres chosen" in "\n".join(lines), "a kind that needs few lines keeps them"


def test_bytes_outside_the_markers_are_kept() -> None:
    user = b"# Rules\r\n\r\nKeep it tidy.\r\n<!-- claude-mem:start -->\r\nold\r\n<!-- claude-mem:end -->\r\nAfter.\r\nno newline at end"
    out = splice(user, ["## new", "- one"])
    assert out.startswith(b"# Rules\r\n\r\nKeep it tidy.\r\n") and out.endswith(b"\r\nAfter.\r\nno newline at end")
    assert b"old" not in out and b"\r\n- one\r\n" in out
    appended = splice(b"# Rules\nno newline", ["x"])
    assert appended.startswith(b"# Rules\nno newline") and appended.endswith(f"\n\n{START}\nx\n{END}\n".encode())
    assert splice(None, ["x"]) == f"{START}\nx\n{END}\n".encode()
    assert splice(out, ["## new", "- one"]) == out
    for broken in (b"<!-- claude-mem:start -->\n", b"<!-- claude-mem:end -->\n<!-- claude-mem:start -->\n",
                   b"<!-- claude-mem:start -->\n<!-- claude-mem:end -->\n<!-- claude-mem:end -->\n"):
        with pytest.raises(MarkersBroken):
            splice(broken, ["x"])


def test_written_at_the_root_once_then_untouched(data_dir: Path, tmp_path: Path) -> None:
    conn, _ = store(data_dir)
    root = tmp_path / "repo"
    (root / "pkg" / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "AGENTS.md").write_bytes(b"# Agents\n\nBe brief.\n")
    outcome = update(conn, setting="AGENTS.md", lines=150, start_dir=str(root / "pkg" / "sub"), data_dir=str(data_dir),
                     project="proj")
    assert outcome is not None and outcome.changed and outcome.path == str(root / "AGENTS.md")
    written = (root / "AGENTS.md").read_bytes()
    assert written.startswith(b"# Agents\n\nBe brief.\n\n" + START.encode()) and b"Postgres chosen" in written
    assert [p.name for p in root.rglob("*.md")] == ["AGENTS.md"], "nothing in a subfolder"
    mtime = (root / "AGENTS.md").stat().st_mtime_ns
    again = update(conn, setting="AGENTS.md", lines=150, start_dir=str(root), data_dir=str(data_dir), project="proj")
    assert again is not None and not again.changed
    assert (root / "AGENTS.md").read_bytes() == written and (root / "AGENTS.md").stat().st_mtime_ns == mtime
    assert update(conn, setting="off", lines=150, start_dir=str(root), data_dir=str(data_dir), project="proj") is None
    empty = tmp_path / "empty"
    empty.mkdir()
    assert update(conn, setting="CLAUDE.md", lines=150, start_dir=str(empty), data_dir=str(data_dir), project="nothing") is None
    assert not (empty / "CLAUDE.md").exists(), "no file made for a project with no memory"


def test_a_linked_file_keeps_its_link_and_its_mode(data_dir: Path, tmp_path: Path) -> None:
    conn, _ = store(data_dir)
    root = tmp_path / "repo"
    root.mkdir()
    (root / "AGENTS.md").write_text("# Shared\n")
    (root / "AGENTS.md").chmod(0o664)
    (root / "CLAUDE.md").symlink_to("AGENTS.md")
    update(conn, setting="CLAUDE.md", lines=150, start_dir=str(root), data_dir=str(data_dir), project="proj")
    assert (root / "CLAUDE.md").is_symlink() and "Postgres chosen" in (root / "AGENTS.md").read_text()
    assert (root / "AGENTS.md").stat().st_mode & 0o777 == 0o664
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    update(conn, setting="CLAUDE.md", lines=150, start_dir=str(fresh), data_dir=str(data_dir), project="proj")
    assert (fresh / "CLAUDE.md").stat().st_mode & 0o777 == 0o644, "a project file, not one of our private ones"


def test_the_setting_takes_off_or_a_path_inside_the_root() -> None:
    setting = SETTINGS["memory_file"]
    assert setting.default == "off" and SETTINGS["memory_file_lines"].default == 150
    assert [setting.parse(v) for v in ("OFF", "CLAUDE.md", "AGENTS.md", "docs/AGENTS.md")] == ["off", "CLAUDE.md", "AGENTS.md",
                                                                                              "docs/AGENTS.md"]
    for bad in ("/etc/passwd", "../AGENTS.md", "docs/", "~/x.md", ""):
        with pytest.raises(SettingsError):
            setting.parse(bad)


def test_the_command_writes_and_refuses_when_off(data_dir: Path, tmp_path: Path) -> None:
    conn, _ = store(data_dir, project="proj")
    conn.close()
    root = tmp_path / "proj"
    root.mkdir()
    line = one_error_line(invoke("memory-file", "--project-dir", str(root), code=1).output)
    assert "memory_file setting is off" in line and not (root / "CLAUDE.md").exists()
    env = {"CLAUDE_MEM_MEMORY_FILE": "CLAUDE.md"}
    dry = invoke("memory-file", "--project-dir", str(root), "--dry-run", env=env)
    assert "Postgres chosen" in dry.output and not (root / "CLAUDE.md").exists()
    assert "wrote" in invoke("memory-file", "--project-dir", str(root), env=env).output
    assert (root / "CLAUDE.md").read_text() in dry.output
    assert "unchanged" in invoke("memory-file", "--project-dir", str(root), env=env).output
    (root / "CLAUDE.md").write_text(f"{START}\nhalf a section\n")
    assert "markers" in one_error_line(invoke("memory-file", "--project-dir", str(root), code=1, env=env).output)


@pytest.mark.slow
def test_session_end_has_the_worker_write_the_file_the_command_writes(data_dir: Path, tmp_path: Path) -> None:
    from tests.worker_helpers import play_demo

    root = tmp_path / "proj"
    root.mkdir()
    (root / "CLAUDE.md").write_text("# Mine\n")
    env = {**os.environ, "CLAUDE_MEM_MEMORY_FILE": "CLAUDE.md", "CLAUDE_MEM_WORKER_AUTOSTART": "1",
           "CLAUDE_MEM_SYNTHESIZER": "heuristic", "CLAUDE_MEM_SEMANTIC_INDEX": "0"}
    steps = play_demo(root, "sess-mf")
    end = {**steps[-1][1], "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}
    end.pop("stop_hook_active", None)
    proc = run_hook("summary", end, env=env)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    assert wait_until(lambda: "claude-mem:start" in (root / "CLAUDE.md").read_text(), 120), "the worker wrote the section"
    conn = connect(str(data_dir / "claude-mem.db"))
    try:
        assert conn.execute("SELECT count(*) FROM observation_queue WHERE status != 'done'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM session_summaries").fetchone()[0] >= 1, "after the session's summary"
    finally:
        conn.close()
    by_hook = (root / "CLAUDE.md").read_text()
    assert by_hook.startswith("# Mine\n\n")
    dry = subprocess.run([sys.executable, "-m", "claude_mem", "memory-file", "--dry-run", "--project-dir", str(root)],
                         env=env, capture_output=True, text=True)
    assert dry.returncode == 0 and dry.stdout == by_hook and "stay as it is" in dry.stderr


@pytest.mark.slow
def test_session_end_with_the_setting_off_writes_nothing(data_dir: Path, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    conn, _ = store(data_dir)
    with transaction(conn):
        conn.execute("UPDATE sdk_sessions SET cwd = ?", (str(root),))
    conn.close()
    env = {**os.environ, "CLAUDE_MEM_SYNTHESIZER": "heuristic", "CLAUDE_MEM_SEMANTIC_INDEX": "0"}
    proc = run_hook("summary", {"session_id": "s1", "cwd": str(root), "hook_event_name": "SessionEnd", "reason": "other"}, env=env)
    assert proc.returncode == 0 and not proc.stderr
    # The session's worker runs to its end (the ended session), the setting off: no file.
    worker = subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", "s1", "--idle", "300"],
                            env=env, capture_output=True, text=True, timeout=120)
    assert worker.returncode == 0 and "session ended" in worker.stdout, worker.stderr
    assert settings.load().memory_file == "off"
    assert os.listdir(root) == []
