"""`claude-mem demo`, as a new user runs it: no account, a fresh home, the whole loop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def test_demo_shows_the_whole_loop_without_an_account(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "ANTHROPIC_"))}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), TMPDIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "demo"], env=env, capture_output=True, text=True, timeout=600,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout
    assert "7/7 queued events done" in out
    assert "no model could be used" in out and "(heuristic)" in out
    # Without a model the observations still say what happened: the failing test and
    # its assertion, grouped with the edit that fixed it; the function an edit touched.
    assert "[bugfix] test_add failed: assert add(2, 3) == 5, got -1 — fixed in calc.py add()  (heuristic)" in out
    assert "test_add failed because add(2, 3) returned -1, not 5" in out
    assert "[change] Edited calc.py: add() docstring  (heuristic)" in out
    search = out.split("4. Searching memory")[1].split("5. ")[0]
    assert "'why did test_add fail' (hybrid search" in search
    first_hit = search.splitlines()[1].strip()
    assert first_hit.startswith("obs:") and "test_add" in first_hit and "assert add(2, 3) == 5" in first_hit, search
    digest = out.split("5. What the next session")[1]
    assert "# claude-mem: what happened recently in calc-project" in digest
    assert "[bugfix] test_add failed: assert add(2, 3) == 5, got -1" in digest and "[change] Edited calc.py: add() docstring" in digest
    assert not list(tmp_path.glob("claude-mem-demo-*")), "the demo's temporary data dir is removed"
