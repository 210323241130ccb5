"""What the worker tests share: the fake Claude CLI's environment and log, the demo session
played through the hooks, a worker run, well-formed replies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from claude_mem.demo import scripted_session
from claude_mem.replay import run_hook
from tests.hardening.support import model_env

GOOD_XML = """Here is what I noticed.

```xml
<observation>
  <type>bugfix</type>
  <title>add() subtracted instead of adding</title>
  <subtitle>calc.add returned a - b</subtitle>
  <facts><fact>calc.py add() used `a - b`; test_add expected add(2, 3) == 5</fact></facts>
  <narrative>The failing test pointed at add(); the operator was wrong &amp; got fixed.</narrative>
  <concepts><concept>arithmetic</concept><concept>tests</concept></concepts>
  <files_read><file>calc.py</file></files_read>
  <files_modified><file>calc.py</file></files_modified>
</observation>
```
"""


SUMMARY_XML = ("<summary><request>fix test_add</request><investigated>calc.py</investigated><learned>add used minus</learned>"
               "<completed>fixed add()</completed><next_steps>none</next_steps><notes>-</notes></summary>")


def play_demo(project_dir: Path, session_id: str = "sess-demo") -> list[tuple[str, dict]]:
    steps = scripted_session(str(project_dir), session_id)
    for command, payload in steps:
        proc = run_hook(command, payload)
        assert proc.returncode == 0 and not proc.stderr, proc.stderr
    return steps


def fake_env(tmp_path: Path, steps: list[dict], default: dict | None = None, **extra: str) -> dict[str, str]:
    # Loading chromadb and the model costs each worker ~1.5 s of CPU: only tests about the index pay it.
    return model_env(tmp_path, steps, default or {"per_event": True}, **{"CLAUDE_MEM_SEMANTIC_INDEX": "0", **extra})


def run_worker(session_id: str, env: dict[str, str], *args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", session_id, "--drain", *args],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=timeout)


def fake_log(tmp_path: Path) -> list[dict]:
    path = tmp_path / "fake.log"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def user_messages(tmp_path: Path) -> list[str]:
    """What the fake CLIs were sent, in order."""
    texts = []
    for entry in fake_log(tmp_path):
        message = entry.get("message") or {}
        if entry["event"] == "recv" and message.get("type") == "user":
            content = message["message"]["content"]
            texts.append(content if isinstance(content, str) else "".join(b.get("text", "") for b in content))
    return texts
