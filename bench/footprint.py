"""What an open Claude Code session costs in memory: N concurrent sessions (1 and 3 by default),
each a real transcript replayed through the real hook commands (workers start by themselves,
their observer is the fake Claude CLI from tests/fakes) with its own MCP server (`claude-mem
mcp` over stdio, the official client) searching three times during the replay. The whole process
table is sampled every 50 ms; a process is ours when it carries the run's CLAUDE_MEM_DATA_DIR.

Printed per process kind: how many ran, the peak RSS of one, and the peak of their sum; then the
peak RSS sum of every claude-mem process at one moment (the observer CLIs apart: in real use
that is Claude Code's own CLI, ~230 MiB each, not ours to shrink).

--idle S: each session replays two thirds of its events (the first burst), then all stay idle
for S seconds with their workers alive (worker_idle_s is S + 60), then replay the rest (the
second burst); the idle time is printed second by second (observer CLIs running, their RSS sum,
every other process of ours), and how the second burst was synthesised. --real-cli runs the
Claude Code CLI bundled with claude-agent-sdk as the observer, against the fake Messages API
(tests/fakes) on 127.0.0.1, instead of the fake CLI. --observer-idle sets observer_idle_s
(a value above S keeps every CLI up through the idle time, as before the observer slept).

--against DIR...: the same measure, interleaved over --rounds rounds, for this checkout and each
DIR (a checkout of another commit, e.g. `git worktree add --detach ../base main`), each by its
own copy of this script, run in it, so every measured process runs its code; printed: each run's peak, the medians and their
ratio to the first DIR's. Timings and overlaps move with the machine's load: compare only runs
of one invocation.

    .venv/bin/python bench/footprint.py [--sessions 1 3] [--events 120] [--idle 90] [--real-cli]
        [--observer-idle S] [--json] [--against DIR... [--rounds 3]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import statistics
import subprocess
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
from tests.fakes.fake_claude import per_event_reply, write_wrapper  # noqa: E402
from tests.fakes.messages_api import FakeMessagesAPI  # noqa: E402
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
        self.now: dict[str, tuple[int, int]] = {}  # kind -> (processes, RSS sum) at the last sample

    def run(self) -> None:
        while not self.stop.is_set():
            sums: dict[str, int] = defaultdict(int)
            counts: dict[str, int] = defaultdict(int)
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
                counts[kind] += 1
            self.now = {k: (counts[k], sums[k]) for k in counts}
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


def one_session(n: int, transcript: Path, tmp: Path, env: dict[str, str], events: int,
                later: dict[int, list] | None = None) -> dict:
    """Replay a session; with `later`, only its first two thirds (the rest is kept there)."""
    session_id = f"footprint-{n}"
    hook_events = session_events(transcript, session_id, tmp / f"proj-{n}", limit=events)
    if later is not None:
        cut = len(hook_events) * 2 // 3
        hook_events, later[n] = hook_events[:cut], hook_events[cut:]
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


def queue_settled(data_dir: Path) -> bool:
    try:
        with sqlite3.connect(data_dir / "claude-mem.db", timeout=5) as conn:
            return not conn.execute("SELECT COUNT(*) FROM observation_queue WHERE status IN ('pending', 'processing')").fetchone()[0]
    except sqlite3.Error:
        return False


def synthesised(data_dir: Path, after_id: int) -> dict[str, int]:
    """How the queue rows after `after_id` were processed: model, heuristic, ..."""
    with sqlite3.connect(data_dir / "claude-mem.db", timeout=5) as conn:
        return dict(conn.execute("SELECT COALESCE(processed_by, status), COUNT(*) FROM observation_queue WHERE id > ?"
                                 " GROUP BY 1", (after_id,)).fetchall())


def idle_phase(sampler: Sampler, data_dir: Path, idle_s: float) -> list[dict]:
    """Wait for the first burst to be settled, then sample once a second for `idle_s`."""
    deadline = time.monotonic() + 600
    while not queue_settled(data_dir) and time.monotonic() < deadline:
        time.sleep(0.5)
    samples = []
    started = time.monotonic()
    while (elapsed := time.monotonic() - started) < idle_s:
        now = dict(sampler.now)
        cli = now.get("observer CLI", (0, 0))
        ours = [v for k, v in now.items() if k != "observer CLI"]
        samples.append({"t": round(elapsed), "observer_clis": cli[0], "observer_mib": round(cli[1] / MIB),
                        "workers": now.get("worker", (0, 0))[0], "ours_mib": round(sum(v[1] for v in ours) / MIB)})
        time.sleep(1.0)
    return samples


def stop_workers(data_dir: str) -> None:
    for proc in psutil.process_iter(["pid", "cmdline"]):
        if kind_of(proc) == "worker" and _ours(proc, data_dir):
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGTERM)


def run(sessions: int, tmp: Path, observer_env: dict[str, str], events: int, idle_s: float, observer_idle_s: float | None,
        embedder: str = "auto") -> dict:
    data_dir = tmp / f"data-{sessions}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update(CLAUDE_MEM_DATA_DIR=str(data_dir), CLAUDE_MEM_SYNTHESIZER="model",
               CLAUDE_MEM_WORKER_IDLE_S=str(idle_s + 60 if idle_s else 5), CLAUDE_MEM_SERVICE_IDLE_S="5",
               CLAUDE_CONFIG_DIR=str(tmp / "claude-config"), CLAUDE_MEM_EMBEDDER=embedder, **observer_env)
    if observer_idle_s is not None:
        env["CLAUDE_MEM_OBSERVER_IDLE_S"] = str(observer_idle_s)
    paths = transcripts()
    sampler = Sampler(str(data_dir))
    sampler.start()
    started = time.perf_counter()
    later: dict[int, list] | None = {} if idle_s else None
    with ThreadPoolExecutor(sessions) as pool:
        done = list(pool.map(lambda n: one_session(n, paths[n % len(paths)], tmp, env, events, later), range(sessions)))
    idle: list[dict] = []
    second: dict[str, int] = {}
    if later is not None:
        idle = idle_phase(sampler, data_dir, idle_s)
        with sqlite3.connect(data_dir / "claude-mem.db") as conn:
            last_id = conn.execute("SELECT COALESCE(MAX(id), 0) FROM observation_queue").fetchone()[0]
        with ThreadPoolExecutor(sessions) as pool:
            list(pool.map(lambda n: play_subprocess(later[n], env=env), range(sessions)))
        deadline = time.monotonic() + 600
        while not queue_settled(data_dir) and time.monotonic() < deadline:
            time.sleep(0.5)
        second = synthesised(data_dir, last_id)
        stop_workers(str(data_dir))
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
            "peak_total_mib": round(sampler.peak_total / MIB), "idle": idle, "second_burst": second}


def _ours(proc: psutil.Process, data_dir: str) -> bool:
    try:
        return proc.environ().get("CLAUDE_MEM_DATA_DIR") == data_dir
    except (psutil.Error, OSError):
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--events", type=int, default=120, help="tool events replayed per session (with their prompts and Stops)")
    parser.add_argument("--idle", type=float, default=0, help="seconds idle between two bursts, workers alive")
    parser.add_argument("--real-cli", action="store_true", help="the bundled Claude Code CLI against a fake Messages API")
    parser.add_argument("--observer-idle", type=float, help="setting observer_idle_s (default: the setting's default)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--embedder", choices=("auto", "minilm", "multilingual"), default="auto",
                        help="the semantic index's model (the setting; auto: multilingual when installed)")
    parser.add_argument("--against", nargs="+", metavar="DIR", help="checkouts of other commits, measured interleaved")
    parser.add_argument("--rounds", type=int, default=3, help="with --against: runs of each checkout")
    args = parser.parse_args()
    if args.against:
        compare(args, [str(ROOT), *(str(Path(d).resolve()) for d in args.against)])
        return
    with tempfile.TemporaryDirectory(prefix="cm-footprint-") as name, contextlib.ExitStack() as stack:
        tmp = Path(name)
        if args.real_cli:
            api = stack.enter_context(FakeMessagesAPI(lambda request: per_event_reply(_last_text(request))))
            short_tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="cm-", dir="/tmp"))  # the CLI's socket
            (tmp / "home").mkdir()
            observer_env = {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-fake", "HOME": str(tmp / "home"),
                            "TMPDIR": short_tmp}
        else:
            script = tmp / "script.json"
            script.write_text(json.dumps({"steps": [], "default": {"per_event": True}}))
            observer_env = {"CLAUDE_MEM_CLI_PATH": write_wrapper(tmp / "fakebin"), "FAKE_CLAUDE_SCRIPT": str(script)}
        results = [run(n, tmp, observer_env, args.events, args.idle, args.observer_idle, args.embedder) for n in args.sessions]
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
        if r["idle"]:
            print(f"  idle time, workers alive ({len(r['idle'])} s): {'s':>4} {'observer CLIs':>14} {'their MiB':>10}"
                  f" {'workers':>8} {'ours MiB':>9}")
            for row in r["idle"]:
                if row["t"] % 10 == 0 or row is r["idle"][-1]:
                    print(f"  {'':<33}{row['t']:>4} {row['observer_clis']:>14} {row['observer_mib']:>10} {row['workers']:>8}"
                          f" {row['ours_mib']:>9}")
            print(f"  second burst, queue rows by synthesizer: {r['second_burst']}")


def compare(args: argparse.Namespace, trees: list[str]) -> None:
    """Run this script once per checkout and round, interleaved; print the peaks at once."""
    # Each checkout's own script, run in it: `python -m` puts the working folder before PYTHONPATH.
    options = ["--sessions", *map(str, args.sessions), "--events", str(args.events), "--json",
               *(["--embedder", args.embedder] if args.embedder != "auto" else []), *(["--real-cli"] if args.real_cli else [])]
    peaks: dict[str, dict[int, list[int]]] = {tree: defaultdict(list) for tree in trees}
    for round_no in range(1, args.rounds + 1):
        for tree in trees:
            out = subprocess.run([sys.executable, "bench/footprint.py", *options], cwd=tree, env={**os.environ, "PYTHONPATH": tree},
                                 capture_output=True, text=True, check=True)
            for r in json.loads(out.stdout):
                peaks[tree][r["sessions"]].append(r["peak_total_mib"])
                kinds = ", ".join(f"{k} {v['peak_sum_mib']}" for k, v in r["kinds"].items() if k != "observer CLI")
                print(f"round {round_no} {tree}: {r['sessions']} session(s) {r['peak_total_mib']} MiB ({kinds};"
                      f" load {os.getloadavg()[0]:.1f})", flush=True)
    baseline = trees[1]
    for n in args.sessions:
        print(f"\n{n} concurrent session(s), peak RSS of all claude-mem processes at once (MiB), median of {args.rounds}:")
        for tree in trees:
            median = statistics.median(peaks[tree][n])
            ratio = median / statistics.median(peaks[baseline][n])
            print(f"  {median:7.0f}  {ratio:5.2f}x  {tree}  (runs: {', '.join(map(str, peaks[tree][n]))})")


def _last_text(request: object) -> str:
    content = request.messages[-1].get("content") if request.messages else ""  # type: ignore[attr-defined]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content if isinstance(b, dict))


if __name__ == "__main__":
    main()
