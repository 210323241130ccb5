"""What an open Claude Code session costs in memory: N concurrent sessions (1 and 3 by default),
each a real transcript replayed through the real hook commands (workers start by themselves,
their observer is the fake Claude CLI from tests/fakes) with its own MCP server (`claude-mem
mcp` over stdio, the official client) searching three times during the replay. The whole process
table is sampled every 50 ms; a process is ours when it carries the run's CLAUDE_MEM_DATA_DIR.

Printed per process kind: how many ran, the peak RSS of one, and the peak of their sum; then the
peak RSS sum of every claude-mem process at one moment (the observer CLIs apart: in real use
that is Claude Code's own CLI, ~230 MiB each, not ours to shrink).

    .venv/bin/python bench/footprint.py [--sessions 1 3] [--events 120] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import transcripts  # noqa: E402
from claude_mem.replay import play_subprocess  # noqa: E402
from tests.fakes.fake_claude import write_wrapper  # noqa: E402
from tests.hardening.support import session_events  # noqa: E402

QUERIES = ("what failed in the tests", "which files were edited", "how was the bug fixed")
MIB = 2**20


def kind_of(proc: psutil.Process) -> str | None:
    cmd = proc.info["cmdline"] or []
    text = " ".join(cmd)
    if "fake_claude" in text or (cmd and os.path.basename(cmd[0]) == "claude"):
        return "observer CLI"
    if "claude_mem" not in text:
        return "observer CLI" if "fakebin" in text else None
    for name in ("service", "worker", "mcp"):
        if name in cmd:
            return {"service": "memory service", "worker": "worker", "mcp": "MCP server"}[name]
    return "hook"


class Sampler(threading.Thread):
    def __init__(self, data_dir: str) -> None:
        super().__init__(daemon=True)
        self.data_dir = data_dir
        self.stop = threading.Event()
        self.peak_one: dict[str, int] = defaultdict(int)
        self.peak_kind_sum: dict[str, int] = defaultdict(int)
        self.pids: dict[str, set[int]] = defaultdict(set)
        self.peak_total = 0  # every process of ours but the observer CLIs, at one moment

    def run(self) -> None:
        while not self.stop.is_set():
            sums: dict[str, int] = defaultdict(int)
            for proc in psutil.process_iter(["pid", "cmdline"]):
                try:
                    if proc.environ().get("CLAUDE_MEM_DATA_DIR") != self.data_dir:
                        continue
                    kind = kind_of(proc)
                    if kind is None:
                        continue
                    rss = proc.memory_info().rss
                except (psutil.Error, OSError):
                    continue
                self.pids[kind].add(proc.pid)
                self.peak_one[kind] = max(self.peak_one[kind], rss)
                sums[kind] += rss
            for kind, total in sums.items():
                self.peak_kind_sum[kind] = max(self.peak_kind_sum[kind], total)
            self.peak_total = max(self.peak_total, sum(v for k, v in sums.items() if k != "observer CLI"))
            time.sleep(0.05)


async def mcp_session(env: dict[str, str], session_id: str, searches_at: list[threading.Event]) -> int:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "claude_mem", "mcp"],
                                   env={**env, "CLAUDE_CODE_SESSION_ID": session_id})
    answered = 0
    async with Client(params) as client:
        for query, due in zip(QUERIES, searches_at, strict=True):
            while not due.is_set():
                await asyncio.sleep(0.1)
            result = await client.call_tool("search", {"query": query, "project": "*"})
            answered += not result.is_error
    return answered


def one_session(n: int, transcript: Path, tmp: Path, env: dict[str, str], events: int) -> dict:
    session_id = f"footprint-{n}"
    hook_events = session_events(transcript, session_id, tmp / f"proj-{n}", limit=events)
    marks = [threading.Event() for _ in QUERIES]
    mcp = threading.Thread(target=lambda: results.update(answered=asyncio.run(mcp_session(env, session_id, marks))))
    results: dict = {}
    mcp.start()
    thirds = [len(hook_events) * (i + 1) // (len(QUERIES) + 1) for i in range(len(QUERIES))]
    start = 0
    for mark, end in zip(marks, thirds, strict=True):
        play_subprocess(hook_events[start:end], env=env)
        mark.set()
        start = end
    play_subprocess(hook_events[start:], env=env)
    mcp.join(300)
    return {"events": len(hook_events), "searches answered": results.get("answered", 0)}


def run(sessions: int, tmp: Path, fake_cli: str, script: Path, events: int, embedder: str = "auto") -> dict:
    data_dir = tmp / f"data-{sessions}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update(CLAUDE_MEM_DATA_DIR=str(data_dir), CLAUDE_MEM_CLI_PATH=fake_cli, FAKE_CLAUDE_SCRIPT=str(script),
               CLAUDE_MEM_SYNTHESIZER="model", CLAUDE_MEM_WORKER_IDLE_S="5", CLAUDE_MEM_SERVICE_IDLE_S="5",
               CLAUDE_CONFIG_DIR=str(tmp / "claude-config"), CLAUDE_MEM_EMBEDDER=embedder)
    paths = transcripts()
    sampler = Sampler(str(data_dir))
    sampler.start()
    started = time.perf_counter()
    with ThreadPoolExecutor(sessions) as pool:
        done = list(pool.map(lambda n: one_session(n, paths[n % len(paths)], tmp, env, events), range(sessions)))
    # Until everything of ours has exited (idle), so the peaks include the tail of the work.
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and any(
            p.info["cmdline"] and "claude_mem" in " ".join(p.info["cmdline"]) and _ours(p, str(data_dir))
            for p in psutil.process_iter(["pid", "cmdline"])):
        time.sleep(0.5)
    sampler.stop.set()
    sampler.join()
    return {"sessions": sessions, "wall_s": round(time.perf_counter() - started, 1), "replayed": done,
            "kinds": {k: {"processes": len(sampler.pids[k]), "peak_one_mib": round(sampler.peak_one[k] / MIB),
                          "peak_sum_mib": round(sampler.peak_kind_sum[k] / MIB)} for k in sorted(sampler.pids)},
            "peak_total_mib": round(sampler.peak_total / MIB)}


def _ours(proc: psutil.Process, data_dir: str) -> bool:
    try:
        return proc.environ().get("CLAUDE_MEM_DATA_DIR") == data_dir
    except (psutil.Error, OSError):
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--events", type=int, default=120, help="tool events replayed per session (with their prompts and Stops)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--embedder", choices=("auto", "minilm", "multilingual"), default="auto",
                        help="the semantic index's model (the setting; auto: multilingual when installed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cm-footprint-") as name:
        tmp = Path(name)
        fake_cli = write_wrapper(tmp / "fakebin")
        script = tmp / "script.json"
        script.write_text(json.dumps({"steps": [], "default": {"per_event": True}}))
        results = [run(n, tmp, fake_cli, script, args.events, args.embedder) for n in args.sessions]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    for r in results:
        print(f"\n{r['sessions']} concurrent session(s), {r['wall_s']} s: "
              + ", ".join(f"{d['events']} events/{d['searches answered']} searches" for d in r["replayed"]))
        print(f"  {'process kind':<16}{'processes':>10}{'peak one MiB':>14}{'peak sum MiB':>14}")
        for kind, k in r["kinds"].items():
            print(f"  {kind:<16}{k['processes']:>10}{k['peak_one_mib']:>14}{k['peak_sum_mib']:>14}")
        print(f"  peak RSS of all claude-mem processes at once (observer CLIs apart): {r['peak_total_mib']} MiB")


if __name__ == "__main__":
    main()
