"""Wall time of `claude-mem save`, the hook Claude Code runs after every tool call, against the
floor any Python hook pays: start this interpreter, parse the payload, insert one row into a WAL,
synchronous=NORMAL SQLite table; and the same hook started as the Claude Code plugin starts it,
through plugin/claude-mem (target <= 1.2x the console script run directly), and `claude-mem summary`
on PreCompact, which only asks the session's worker for a checkpoint (target <= 1.5x). Then the
pushes (issue 13): `claude-mem pre` (PreToolUse, SQL
only: target <= 1.3x the floor) and `claude-mem new` searching through a warm memory service
(target <= 3x), and `claude-mem context` (SessionStart: the digest, and the memory service
started when none runs) with the service up and with none running (each run's service is
stopped before the next), against the same floor in the same run. Then a burst: many hook
processes at once into one database.

    python bench/hooks.py [--runs N] [--json] [--no-push] [--burst-procs 16] [--burst-events 50] [--against DIR]

Payloads are real PostToolUse events rebuilt from ../shared/data/transcripts (or the test
fixture when that folder is absent), cycled, each with a fresh tool_use_id so every run inserts.
Measurements are interleaved (one of each kind per round, order rotating) so that load from
other processes on the machine hits every kind alike; compare ratios, not absolute times.
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
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import transcripts  # noqa: E402
from bench.pace import tree_env  # noqa: E402
from claude_mem.hooks import matches_skip_list  # noqa: E402
from claude_mem.replay import TOOL_EVENTS, transcript_events  # noqa: E402
from claude_mem.settings import DEFAULT_SKIP_TOOLS  # noqa: E402
from tests.plugin_helpers import adopt_environment  # noqa: E402

TARGET_RATIO = 1.3
LAUNCHER_TARGET = 1.2  # the plugin's launcher against the same hook run directly
PRECOMPACT_TARGET = 1.5  # `claude-mem summary` on PreCompact (issue 34): it only asks for a checkpoint
PUSH_TARGETS = {"pre (file)": 1.3, "pre (command)": 1.3, "new (prompt recall)": 3.0, "context (service up)": 1.6,
                "context (no service)": 1.6}

FLOOR_SCRIPT = """\
import json, sqlite3, sys
event = json.loads(sys.stdin.buffer.read())
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA synchronous = NORMAL")
conn.execute("INSERT INTO events (tool_use_id, body) VALUES (?, ?)", (event.get("tool_use_id"), json.dumps(event)))
conn.close()
"""


def real_payloads() -> tuple[list[dict[str, Any]], str]:
    paths = transcripts()
    # Skip-listed tools (TodoWrite, ...) are left out: the hook drops them without writing, so
    # they would neither measure the write path nor count as queued in the burst.
    payloads = [e.payload for path in paths for e in transcript_events(path)
                if e.event in TOOL_EVENTS and not matches_skip_list(e.payload["tool_name"], DEFAULT_SKIP_TOOLS)]
    return payloads, str(paths[0].parent if paths else "")


def percentiles(samples: Sequence[float]) -> dict[str, float]:
    cuts = statistics.quantiles(samples, n=100, method="inclusive")
    return {"p50": statistics.median(samples), "p95": cuts[94], "p99": cuts[98], "min": min(samples), "n": len(samples)}


def timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[bytes]]:
    started = time.perf_counter()
    proc = subprocess.run(argv, input=stdin, capture_output=True, env=env)
    return time.perf_counter() - started, proc


def check(proc: subprocess.CompletedProcess[bytes], what: str) -> None:
    if proc.returncode != 0 or proc.stderr.strip():
        raise SystemExit(f"{what} failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace').strip()}")


def bench_latency(runs: int, payloads: list[dict[str, Any]], work: Path, env: dict[str, str],
                  against: str | None = None) -> dict[str, Any]:
    floor_py = work / "floor.py"
    floor_py.write_text(FLOOR_SCRIPT)
    floor_db = work / "floor.db"
    conn = sqlite3.connect(floor_db)
    conn.execute("PRAGMA journal_mode = WAL")  # persistent: the floor script need not set it
    conn.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, tool_use_id TEXT, body TEXT)")
    conn.close()

    script = shutil.which("claude-mem", path=os.path.dirname(sys.executable))
    # The plugin's hooks start at plugin/claude-mem, which runs the same console script from the
    # environment in the plugin's data folder: here one adopted from this venv.
    env = {**env, "CLAUDE_PLUGIN_DATA": str(work / "plugin-data")}
    adopt_environment(work / "plugin-data", Path(sys.executable).parent)
    kinds: dict[str, list[str] | None] = {
        "floor": [sys.executable, str(floor_py), str(floor_db)],
        "save (console script)": [script, "hook", "save"] if script else None,
        "save (plugin launcher)": [str(ROOT / "plugin" / "claude-mem"), "hook", "save"] if script else None,
        "save (python -m)": [sys.executable, "-m", "claude_mem", "hook", "save"],
        "precompact (console script)": [script, "summary"] if script else None,
        "python -c pass": [sys.executable, "-c", "pass"],
    }
    # Another checkout's `save` (--against, e.g. main before a change), in the same rounds: its own
    # data dir (its schema may be older) and its code first on the path.
    envs = {}
    if against:
        kinds["save (python -m, against)"] = [sys.executable, "-m", "claude_mem", "save"]
        envs["save (python -m, against)"] = {**env, **tree_env(Path(against)), "CLAUDE_MEM_DATA_DIR": str(work / "against-data")}
    argvs = {k: v for k, v in kinds.items() if v is not None}
    samples: dict[str, list[float]] = {k: [] for k in argvs}
    sizes: list[int] = []

    def body(i: int, kind: str) -> bytes:
        # Same payload for every kind in a round; its own tool_use_id per kind, so no save is a
        # duplicate that the database would skip.
        payload = dict(payloads[i % len(payloads)])
        if kind.startswith("precompact"):
            payload = {k: payload.get(k) for k in ("transcript_path", "cwd")}
            payload.update(hook_event_name="PreCompact", trigger="auto", custom_instructions="")
        payload["tool_use_id"] = f"{payload.get('tool_use_id')}-bench-{i}-{kind}"
        payload["session_id"] = "bench-latency"
        return json.dumps(payload).encode()

    # Warm-up (not counted): creates and migrates the database, fills the OS file cache.
    for name, argv in argvs.items():
        for i in range(3):
            check(timed(argv, body(-1 - i, name), envs.get(name, env))[1], name)
    names = list(argvs)
    for i in range(runs):
        sizes.append(len(body(i, "")))
        for name in names[i % len(names):] + names[: i % len(names)]:  # rotate who goes first
            seconds, proc = timed(argvs[name], body(i, name), envs.get(name, env))
            check(proc, name)
            samples[name].append(seconds)
    stats = {name: percentiles(s) for name, s in samples.items()}
    ratios = {name: stats[name]["p50"] / stats["floor"]["p50"] for name in stats if name.startswith(("save", "precompact"))}
    conn = sqlite3.connect(Path(env["CLAUDE_MEM_DATA_DIR"]) / "claude-mem.db")
    stored = conn.execute("SELECT COUNT(*) FROM observation_queue WHERE session_id = 'bench-latency'").fetchone()[0]
    conn.close()
    saves = sum(1 for name in argvs if name.startswith("save") and name not in envs)
    if stored != saves * (runs + 3):
        raise SystemExit(f"expected {saves * (runs + 3)} queued events from the timed saves, found {stored}")
    if against:
        ratios["python -m / against"] = stats["save (python -m)"]["p50"] / stats["save (python -m, against)"]["p50"]
    if "save (plugin launcher)" in stats:
        ratios["plugin launcher / console script"] = stats["save (plugin launcher)"]["p50"] / stats["save (console script)"]["p50"]
    return {"runs": runs, "console_script": script, "payload_bytes": percentiles(sizes), "stats": stats, "ratios": ratios}


def bench_burst(procs: int, events: int, payloads: list[dict[str, Any]], work: Path, base_env: dict[str, str]) -> dict[str, Any]:
    data_dir = work / "burst"
    env = {**base_env, "CLAUDE_MEM_DATA_DIR": str(data_dir)}
    script = shutil.which("claude-mem", path=os.path.dirname(sys.executable))
    argv = [script, "hook", "save"] if script else [sys.executable, "-m", "claude_mem", "hook", "save"]
    # The database exists before the burst, as it does after a session's first prompt.
    check(subprocess.run(argv, input=json.dumps({**payloads[0], "session_id": "burst-warmup"}).encode(),
                         capture_output=True, env=env), "warm-up")

    def stream(n: int) -> list[tuple[int, str, float]]:
        out = []
        for i in range(events):
            payload = {**payloads[(n * events + i) % len(payloads)], "session_id": f"burst-{n:02d}",
                       "tool_use_id": f"burst-{n:02d}-{i:03d}"}
            seconds, proc = timed(argv, json.dumps(payload).encode(), env)
            out.append((proc.returncode, proc.stderr.decode(errors="replace").strip(), seconds))
        return out

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=procs) as pool:
        results = [r for rs in pool.map(stream, range(procs)) for r in rs]
    wall = time.perf_counter() - started
    conn = sqlite3.connect(data_dir / "claude-mem.db")
    queued = conn.execute("SELECT COUNT(DISTINCT tool_use_id) FROM observation_queue WHERE session_id LIKE 'burst-__'").fetchone()[0]
    conn.close()
    spool = data_dir / "spool"
    spooled = len([p for p in spool.glob("*.json")]) if spool.is_dir() else 0
    errors = [err or f"exit {code}" for code, err, _ in results if code != 0 or err]
    sent = procs * events
    return {"processes": procs, "events_each": events, "sent": sent, "queued": queued, "spooled": spooled,
            "lost": sent - queued - spooled, "hook_errors": len(errors), "first_errors": errors[:3], "wall_s": wall,
            "hook_latency": percentiles([s for _, _, s in results])}


def push_memory(payloads: list[dict[str, Any]], data_dir: Path, project_dir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """An earlier session's memory of the files and commands in the real payloads: one observation
    per file it touched (plus a few broad ones), one failure per command, with bugfix follow-ups.
    Returns the PreToolUse payloads to replay (rebased into `project_dir`) and the prompts."""
    from claude_mem.store import queue
    from claude_mem.store.db import connect, transaction
    from claude_mem.store.memories import Observation, insert_observation
    from claude_mem.store.records import ensure_session, record_prompt

    data_dir.mkdir(parents=True, exist_ok=True)
    pre: list[dict[str, Any]] = []
    for p in payloads:
        tool_input = p.get("tool_input") if isinstance(p.get("tool_input"), dict) else {}
        if p["tool_name"] in ("Read", "Edit", "Write", "MultiEdit") and isinstance(tool_input.get("file_path"), str):
            relative = tool_input["file_path"].lstrip("/").split("/", 3)[-1]  # drop the author's home folder
            pre.append({**tool_input, "file_path": str(project_dir / relative), "_tool": p["tool_name"]})
        elif p["tool_name"] == "Bash" and isinstance(tool_input.get("command"), str):
            pre.append({"command": tool_input["command"], "_tool": "Bash"})
    conn = connect(str(data_dir / "claude-mem.db"))
    prompts = []
    with transaction(conn):
        ensure_session(conn, "earlier", project=project_dir.name, cwd=str(project_dir), transcript_path=None)
        for i, item in enumerate(pre):
            record_prompt(conn, "earlier", f"prompt {i}", None)
            if item["_tool"] == "Bash":
                queue.enqueue_tool(conn, "earlier", tool_name="Bash", tool_input=json.dumps({"command": item["command"]}),
                                   tool_response=json.dumps({"error": f"Exit code 1\nfailure number {i}"}),
                                   tool_use_id=f"fail-{i}", is_error=True, duration_ms=5, agent_id=None, cwd=str(project_dir))
                title = f"Fixed the failure of step {i}"
                insert_observation(conn, "earlier", project_dir.name, Observation(type="bugfix", title=title), prompt_number=i + 1)
            else:
                name = os.path.basename(item["file_path"])
                title = f"{item['_tool']} of {name}: what step {i} learnt about it"
                insert_observation(conn, "earlier", project_dir.name, Observation(
                    type="discovery", title=title, facts=[f"{name} was touched in step {i}"],
                    files_read=[item["file_path"]] if item["_tool"] == "Read" else [],
                    files_modified=[] if item["_tool"] == "Read" else [item["file_path"]]), prompt_number=i + 1)
            prompts.append(f"What do we know about {title.lower()}?")
        # As the earlier session's worker left them: done, and its write guard found nothing in the outputs.
        conn.execute("UPDATE observation_queue SET status = 'done', guard_note = '' WHERE session_id = 'earlier'")
    conn.close()
    return pre, prompts


def bench_push(runs: int, payloads: list[dict[str, Any]], work: Path, base_env: dict[str, str]) -> dict[str, Any]:
    """`pre` (a file, a command) and `new` (prompt recall, service warm) against the floor,
    interleaved; every run is a new session, so every `pre` finds something and records it."""
    from claude_mem.service import client, control

    data_dir = work / "push-data"
    cold_dir = work / "push-data-cold"  # the same memory, and no service running (context starts one)
    project_dir = work / "pushproj"
    project_dir.mkdir()
    pre, prompts = push_memory(payloads, data_dir, project_dir)
    push_memory(payloads, cold_dir, project_dir)
    files = [p for p in pre if p["_tool"] != "Bash"]
    commands = [p for p in pre if p["_tool"] == "Bash"]
    env = {**base_env, "CLAUDE_MEM_DATA_DIR": str(data_dir)}
    service = subprocess.Popen([sys.executable, "-m", "claude_mem", "service"], env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client.call(str(data_dir), "ping", timeout_s=120, wait=True, start=False)
        deadline = time.monotonic() + 600
        while client.call(str(data_dir), "status", timeout_s=30, start=False).get("index_lag") != 0:
            if time.monotonic() > deadline:
                raise SystemExit("the memory service did not catch up")
            time.sleep(0.2)
        floor_py = work / "push-floor.py"
        floor_py.write_text(FLOOR_SCRIPT)
        floor_db = work / "push-floor.db"
        conn = sqlite3.connect(floor_db)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE events (id INTEGER PRIMARY KEY, tool_use_id TEXT, body TEXT)")
        conn.close()
        script = shutil.which("claude-mem", path=os.path.dirname(sys.executable))
        base = [script] if script else [sys.executable, "-m", "claude_mem"]

        def payload(kind: str, i: int) -> dict[str, Any]:
            common = {"session_id": f"push-{i}", "transcript_path": "/dev/null", "cwd": str(project_dir)}
            if kind == "new (prompt recall)":
                return {**common, "hook_event_name": "UserPromptSubmit", "prompt": prompts[i % len(prompts)], "prompt_id": f"p{i}"}
            if kind.startswith("context"):
                return {**common, "hook_event_name": "SessionStart", "source": "startup"}
            item = (files if kind == "pre (file)" else commands)[i % len(files if kind == "pre (file)" else commands)]
            tool_input = {k: v for k, v in item.items() if k != "_tool"}
            return {**common, "hook_event_name": "PreToolUse", "tool_name": item["_tool"], "tool_input": tool_input,
                    "tool_use_id": f"toolu-{kind}-{i}"}

        argvs = {"floor": [sys.executable, str(floor_py), str(floor_db)], "pre (file)": [*base, "hook", "pre"],
                 "pre (command)": [*base, "hook", "pre"], "new (prompt recall)": [*base, "hook", "new"],
                 "context (service up)": [*base, "hook", "context"], "context (no service)": [*base, "hook", "context"]}
        cold_env = {**env, "CLAUDE_MEM_DATA_DIR": str(cold_dir)}
        if not commands:
            del argvs["pre (command)"]
        samples: dict[str, list[float]] = {k: [] for k in argvs}
        injected: dict[str, int] = dict.fromkeys(argvs, 0)
        names = list(argvs)
        started = 0
        for i in range(-3, runs):  # three warm-up rounds, not counted
            for name in names[i % len(names):] + names[: i % len(names)]:
                body = payload(name if name != "floor" else "pre (file)", i)
                seconds, proc = timed(argvs[name], json.dumps(body).encode(), cold_env if name == "context (no service)" else env)
                check(proc, name)
                if name == "context (no service)":
                    started += stop_spawned_services(cold_dir)  # untimed: the next run finds no service either
                if i >= 0:
                    samples[name].append(seconds)
                    injected[name] += b"additionalContext" in proc.stdout
        stats = {name: percentiles(s) for name, s in samples.items()}
        ratios = {name: stats[name]["p50"] / stats["floor"]["p50"] for name in stats if name != "floor"}
        return {"runs": runs, "stats": stats, "ratios": ratios, "injected": injected, "services_started": started,
                "memory": {"files": len(files), "commands": len(commands), "prompts": len(prompts)}}
    finally:
        control.stop_service(str(data_dir))
        service.wait(30)
        stop_spawned_services(cold_dir)


def stop_spawned_services(data_dir: Path) -> int:
    """SIGKILL the memory services started for `data_dir` (found by their environment: one just
    spawned may not hold its lock yet); returns how many there were."""
    import psutil

    found = []
    for proc in psutil.process_iter():
        try:
            ours = proc.cwd() == str(data_dir) or proc.environ().get("CLAUDE_MEM_DATA_DIR") == str(data_dir)
            if ours and "service" in proc.cmdline():
                proc.kill()
                found.append(proc)
        except (psutil.Error, OSError):
            continue
    psutil.wait_procs(found, timeout=10)
    return len(found)


def ms(x: float) -> str:
    return f"{x * 1000:7.1f}"


def report(latency: dict[str, Any], push: dict[str, Any] | None, burst: dict[str, Any] | None, source: str) -> None:
    print(f"claude-mem save vs floor: {latency['runs']} interleaved runs, real PostToolUse payloads from {source}"
          f" (bytecode: {latency['bytecode']})")
    b = latency["payload_bytes"]
    print(f"payload size: p50 {b['p50']:.0f} B, p95 {b['p95']:.0f} B, p99 {b['p99']:.0f} B")
    print(f"{'':27} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'min ms':>7}")
    for name, s in latency["stats"].items():
        print(f"{name:27} {ms(s['p50'])} {ms(s['p95'])} {ms(s['p99'])} {ms(s['min'])}")
    for name, ratio in latency["ratios"].items():
        launcher = name == "plugin launcher / console script"
        if name == "python -m / against":
            print(f"ratio p50(save (python -m)) / p50(save (python -m, against)) = {ratio:.3f}  (this checkout against the other)")
            continue
        target = LAUNCHER_TARGET if launcher else PRECOMPACT_TARGET if name.startswith("precompact") else TARGET_RATIO
        what = "p50(save (plugin launcher)) / p50(save (console script))" if launcher else f"p50({name}) / p50(floor)"
        print(f"ratio {what} = {ratio:.2f}  ({'ok' if ratio <= target else f'ABOVE target {target}'})")
    if push:
        print(f"\npushes: {push['runs']} interleaved runs against a floor of their own; an earlier session's memory of"
              f" {push['memory']['files']} file touches and {push['memory']['commands']} failed commands; memory service warm")
        print(f"{'':24} {'p50 ms':>7} {'p95 ms':>7} {'p99 ms':>7} {'min ms':>7}  injected")
        for name, st in push["stats"].items():
            print(f"{name:24} {ms(st['p50'])} {ms(st['p95'])} {ms(st['p99'])} {ms(st['min'])}  "
                  f"{push['injected'][name] if name != 'floor' else '':>5}")
        print(f"memory services started by `context (no service)`: {push['services_started']} in {push['runs'] + 3} runs")
        for name, ratio in push["ratios"].items():
            target = PUSH_TARGETS[name]
            print(f"ratio p50({name}) / p50(floor) = {ratio:.2f}  ({'ok' if ratio <= target else f'ABOVE target {target}'})")
    if burst:
        print(f"\nburst: {burst['processes']} concurrent streams x {burst['events_each']} hook processes, one database")
        print(f"  sent {burst['sent']}  queued {burst['queued']}  spooled {burst['spooled']}  lost {burst['lost']} (expected 0)"
              f"  hook errors {burst['hook_errors']} (expected 0)  wall {burst['wall_s']:.1f} s")
        h = burst["hook_latency"]
        print(f"  hook wall time under the burst (ms): p50 {ms(h['p50'])}  p95 {ms(h['p95'])}  p99 {ms(h['p99'])}")
        for err in burst["first_errors"]:
            print(f"  error: {err}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60, help="interleaved rounds (>= 50 for stable p99s)")
    parser.add_argument("--burst-procs", type=int, default=16)
    parser.add_argument("--burst-events", type=int, default=50)
    parser.add_argument("--no-burst", action="store_true")
    parser.add_argument("--no-push", action="store_true", help="skip the pre and new (prompt recall) timings")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--against", metavar="DIR", help="also time `save` from another checkout (e.g. main before a change)"
                        " in the same rounds, with a data dir of its own")
    parser.add_argument("--bytecode-as-is", action="store_true",
                        help="keep this environment's bytecode settings (default: a fresh private pycache)")
    args = parser.parse_args(argv)
    if args.runs < 2:
        parser.error("--runs must be at least 2")

    payloads, source = real_payloads()
    with tempfile.TemporaryDirectory(prefix="claude-mem-bench-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
        env.update(CLAUDE_MEM_DATA_DIR=str(work / "data"), CLAUDE_MEM_WORKER_AUTOSTART="0")
        if not args.bytecode_as_is:
            # An installed claude-mem has its .pyc files (pip writes them). A checkout run with
            # PYTHONDONTWRITEBYTECODE=1 recompiles every edited module in every hook process;
            # a private pycache makes every kind start from cached bytecode, as installed.
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        latency = bench_latency(args.runs, payloads, work, env, args.against)
        latency["bytecode"] = "as is" if args.bytecode_as_is else "private pycache"
        push = None if args.no_push else bench_push(args.runs, payloads, work, env)
        burst = None if args.no_burst else bench_burst(args.burst_procs, args.burst_events, payloads, work, env)
    if args.json:
        print(json.dumps({"source": source, "latency": latency, "push": push, "burst": burst}, indent=2))
    else:
        report(latency, push, burst, source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
