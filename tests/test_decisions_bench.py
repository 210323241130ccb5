"""bench/decisions.py, small: one repository of its corpus through the real hooks, the heuristic
synthesizer, the memory service; its tasks through the digest, the push, search and ask (issue 51)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def test_one_repository_of_the_dev_suite(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    proc = subprocess.run([sys.executable, "bench/decisions.py", "--repos", "ledger", "--variants", "stated,rivals,scope",
                           "--offtopic-max", "0", "--quiet", "--json", "--keep", str(tmp_path / "work")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout)
    stated, rivals, scope = results["stated"], results["rivals"], results["scope"]
    # Every stated decision became a memory of its own, and the index was in step once the queue drained.
    assert stated["ingest"]["decisions"] >= 4 and stated["ingest"]["index_caught_up_s"] is not None
    assert stated["tasks"] == 4 and stated["counts"]["digest"].get("reached") == 4
    assert stated["counts"]["push"].get("reached", 0) >= 3 and stated["counts"]["ask"].get("reached", 0) >= 3
    # Two rival claims: never one of them alone, as fact, in the push or the answer.
    assert rivals["counts"]["push"].get("exactly_one", 0) == 0 and rivals["counts"]["ask"].get("exactly_one", 0) == 0
    # A rule stated for one component: not pushed for a task in another, still pushed for its own.
    assert scope["counts"]["push"].get("other_scope_rule", 0) == 0 and scope["counts"]["push"].get("own_scope_reached", 0) >= 2
