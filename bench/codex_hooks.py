"""What a Codex hook costs beside Claude Code's (issue 36): wall time of `claude-mem save --host
codex` on a Codex PostToolUse whose exit code is read from the tail of a large rollout transcript,
against `claude-mem save` on the same tool call as Claude Code sends it, interleaved in one run
(order alternating), so that load on the machine hits both alike; compare the ratio (target
<= 1.1x).

    python bench/codex_hooks.py [--runs N] [--rollout-mb MB]

Every Codex call's exit code is found (all non-zero here: each is stored as failed), which the
script checks before printing.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time


def claude_mem_argv() -> list[str]:
    beside = os.path.join(os.path.dirname(sys.executable), "claude-mem")
    return [beside] if os.path.exists(beside) else [sys.executable, "-m", "claude_mem"]


def payload(i: int, codex: bool, cwd: str, rollout: str) -> bytes:
    call = {"session_id": "s-codex" if codex else "s-claude", "cwd": cwd, "hook_event_name": "PostToolUse",
            "tool_name": "Bash", "tool_input": {"command": f"make test-{i}"}, "tool_use_id": f"call_{i}_{int(codex)}"}
    if codex:
        call.update(turn_id="turn", transcript_path=rollout, tool_response="1 failed\n")
        with open(rollout, "a", encoding="utf-8") as f:  # what Codex writes before it runs PostToolUse
            f.write(json.dumps({"type": "event_msg", "payload": {"type": "item_completed", "item": {
                "type": "CommandExecution", "id": call["tool_use_id"], "exit_code": 2}}}) + "\n")
    else:
        call.update(transcript_path="/dev/null", tool_response={"stdout": "1 failed", "stderr": "", "interrupted": False})
    return json.dumps(call).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=40, help="runs of each kind (default 40)")
    parser.add_argument("--rollout-mb", type=float, default=2.0, help="size of the rollout transcript (default 2 MB)")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="codex-hooks-")
    try:
        rollout = os.path.join(tmp, "rollout-2026-01-01T00-00-00-bench.jsonl")
        filler = json.dumps({"type": "response_item", "payload": {"type": "message", "content": "x" * 900}}) + "\n"
        with open(rollout, "w", encoding="utf-8") as f:
            f.write(filler * int(args.rollout_mb * 1e6 / len(filler)))
        env = {**os.environ, "CLAUDE_MEM_DATA_DIR": os.path.join(tmp, "data"), "CLAUDE_MEM_WORKER_AUTOSTART": "0",
               "CLAUDE_MEM_SEMANTIC_INDEX": "0"}
        times: dict[str, list[float]] = {"claude-code": [], "codex": []}
        for i in range(args.runs):
            for host in ("claude-code", "codex") if i % 2 else ("codex", "claude-code"):
                argv = [*claude_mem_argv(), "hook", "save", *(["--host", "codex"] if host == "codex" else [])]
                data = payload(i, host == "codex", tmp, rollout)
                started = time.perf_counter()
                subprocess.run(argv, input=data, env=env, check=True, capture_output=True)
                times[host].append(time.perf_counter() - started)
        conn = sqlite3.connect(os.path.join(tmp, "data", "claude-mem.db"))
        failed = conn.execute("SELECT SUM(is_error), COUNT(*) FROM observation_queue WHERE session_id = 's-codex'").fetchone()
        conn.close()
        assert failed == (args.runs, args.runs), f"Codex calls stored as failed / stored: {failed}"
        claude, codex = statistics.median(times["claude-code"]), statistics.median(times["codex"])
        print(f"save p50: Claude Code payload {claude * 1000:.1f} ms, Codex payload (exit code from a"
              f" {args.rollout_mb:g} MB rollout) {codex * 1000:.1f} ms: {codex / claude:.2f}x"
              f" ({args.runs} interleaved runs each; {failed[0]}/{failed[1]} exit codes found)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
