"""The built wheel ships its data folders, and its hooks run in a fresh venv with no dependencies
installed (the hook path needs only the standard library)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                           str(ROOT), "-w", str(out)], capture_output=True, text=True, timeout=300, cwd=out)
    assert proc.returncode == 0, proc.stderr
    [built] = list(out.glob("claude_mem-*.whl"))
    return built


def test_wheel_ships_migrations_and_prompts(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    migrations = sorted(p.name for p in (ROOT / "migrations").glob("*.sql"))
    assert migrations
    for name in migrations:
        assert f"claude_mem/migrations/{name}" in names
    for prompt in (ROOT / "prompts").iterdir():
        if prompt.is_file():
            assert f"claude_mem/prompts/{prompt.name}" in names
    assert any(n.startswith("claude_mem/prompts/") for n in names)
    # The Claude Code plugin is the repository itself (.claude-plugin/), not a part of the package.
    assert not any(n.startswith("claude_mem/hooks/") for n in names)
    for module in ("entry.py", "hooks.py", "hosts/payloads.py", "hosts/hook_table.py", "text/redact.py", "mcp/shim.py", "store/db.py",
                   "store/queue.py"):
        assert f"claude_mem/{module}" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "claude-mem = claude_mem.entry:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def test_hooks_run_from_the_wheel_in_a_bare_venv(wheel: Path, tmp_path: Path, data_dir: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(CLAUDE_MEM_DATA_DIR=str(data_dir), CLAUDE_MEM_WORKER_AUTOSTART="0")
    work = tmp_path / "project"
    work.mkdir()

    where = subprocess.run([str(python), "-c", "import claude_mem, click"], capture_output=True, text=True, cwd=work, env=env)
    assert "No module named 'click'" in where.stderr  # nothing but the wheel is installed
    where = subprocess.run([str(python), "-c", "import claude_mem; print(claude_mem.__file__)"], capture_output=True,
                           text=True, cwd=work, env=env, check=True)
    assert where.stdout.strip().startswith(str(venv))

    claude_mem = venv / "bin" / "claude-mem"
    common = {"session_id": "wheel-session", "cwd": str(work), "transcript_path": str(work / "t.jsonl")}
    for command, payload in [
        ("new", {**common, "hook_event_name": "UserPromptSubmit", "prompt": "from the wheel"}),
        ("save", {**common, "hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "toolu_w",
                  "tool_input": {"command": "echo hi"}, "tool_response": {"stdout": "hi\n"}}),
    ]:
        proc = subprocess.run([str(claude_mem), command], input=json.dumps(payload), capture_output=True, text=True,
                              timeout=60, cwd=work, env=env)
        assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        assert json.loads(proc.stdout) == {"continue": True, "suppressOutput": True}

    conn = sqlite3.connect(data_dir / "claude-mem.db")
    assert conn.execute("SELECT prompt_number, prompt_text FROM user_prompts").fetchall() == [(1, "from the wheel")]
    assert conn.execute("SELECT tool_name, tool_use_id, prompt_number FROM observation_queue").fetchall() == [("Bash", "toolu_w", 1)]
    migrations = len(list((ROOT / "migrations").glob("*.sql")))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == migrations
    conn.close()
