"""How soon `claude-mem mcp` answers Claude Code's first message, and what it costs in memory.

The Claude Code CLI does not wait for MCP servers: it probes each stdio server with
`server/discover` (protocol 2026-07-28) and falls back to a legacy `initialize` when the answer
is late (issue 33). Measured here, interleaved round by round so load hits both alike:

  - floor: this interpreter started with -c, reading one JSON line and answering it (stdlib);
  - mcp: the console script Claude Code runs (`claude-mem mcp`), the probe written at once,
    timed from the process start to the first line it answers;

then, once, the peak RSS of the process tree a session starts for MCP (the memory service not
counted) while it answers a search, and the time of that search (the service warm).

    python bench/mcp_start.py [--runs 5] [--json]

Target (issue 33): the first answer within 3x the floor (median); the tree <= 30 MiB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_RATIO = 3.0
TARGET_RSS_MIB = 30.0
MIB = 2**20
MODERN = "2026-07-28"
PROBE = {"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {"_meta": {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {}}}}
FLOOR = ("import json, sys\nm = json.loads(sys.stdin.readline())\n"
         "sys.stdout.write(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {}}) + '\\n'); sys.stdout.flush()")


def program() -> str:
    found = shutil.which("claude-mem", path=os.path.dirname(sys.executable))
    if not found:
        raise SystemExit("claude-mem is not installed beside this interpreter")
    return found


def first_answer(argv: list[str], env: dict[str, str]) -> tuple[float, dict]:
    """Seconds from the start of `argv` to the first line it writes, and that line."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps(PROBE).encode() + b"\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return elapsed, json.loads(line)


def tree_rss(pid: int) -> int:
    try:
        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            if "service" not in p.cmdline():  # the shared memory service is not the session's
                total += p.memory_info().rss
        except psutil.Error:
            pass
    return total


def search_footprint(env: dict[str, str], data_dir: str) -> tuple[float, list[float], str]:
    """Peak RSS (MiB) of the MCP process tree while it answers two searches, their seconds, the answer's first line."""
    from claude_mem.service import client
    from tests.stores import build_indexed

    build_indexed(Path(data_dir))
    client.call(data_dir, "ping", timeout_s=120, wait=True)  # the service warm: its start is not the session's cost
    proc = subprocess.Popen([program(), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env=env, cwd=os.path.join(data_dir, "..", "alpha"))
    assert proc.stdin is not None and proc.stdout is not None
    peak, done = 0, threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    send = [{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    for message in send:
        proc.stdin.write(json.dumps(message).encode() + b"\n")
    proc.stdin.flush()
    proc.stdout.readline()
    seconds = []
    for n in (2, 3):  # the first loads the server in a service that has not hosted one yet
        started = time.perf_counter()
        call = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "login crash"}}}
        proc.stdin.write(json.dumps(call).encode() + b"\n")
        proc.stdin.flush()
        answer = json.loads(proc.stdout.readline())
        seconds.append(time.perf_counter() - started)
    time.sleep(0.05)
    done.set()
    sampler.join()
    proc.stdin.close()
    proc.wait(10)
    text = answer.get("result", {}).get("content", [{}])[0].get("text", json.dumps(answer))
    return peak / MIB, seconds, text.splitlines()[0]


def describe(data_dir: str) -> None:
    """The description the first session's shim answers from, as `claude-mem install` writes it
    (on main, where no shim exists, nothing reads it)."""
    try:
        from claude_mem.mcp.host import write_current_description
    except ImportError:
        return
    from tests.stores import config_for

    write_current_description(config_for(Path(data_dir)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="cm-mcp-")
    data_dir = os.path.join(tmp, "data")
    os.makedirs(os.path.join(tmp, "alpha"))
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": data_dir, "HOME": tmp}
    times: dict[str, list[float]] = {"floor": [], "mcp": []}
    argvs = {"floor": [sys.executable, "-c", FLOOR], "mcp": [program(), "mcp"]}
    answer: dict = {}
    describe(data_dir)
    try:
        for n in range(args.runs):
            for kind in (("floor", "mcp") if n % 2 == 0 else ("mcp", "floor")):
                seconds, reply = first_answer(argvs[kind], env)
                times[kind].append(seconds)
                if kind == "mcp":
                    answer = reply
        peak, search_s, first_line = search_footprint(env, data_dir)
    finally:
        from claude_mem.service import control

        control.stop_service(data_dir)
        shutil.rmtree(tmp, ignore_errors=True)
    floor, mcp = statistics.median(times["floor"]), statistics.median(times["mcp"])
    report = {"floor_ms": round(floor * 1000, 1), "mcp_ms": round(mcp * 1000, 1), "ratio": round(mcp / floor, 2),
              "runs": args.runs, "answered": "result" in answer, "tree_peak_mib": round(peak, 1),
              "first_search_ms": round(search_s[0] * 1000, 1), "second_search_ms": round(search_s[1] * 1000, 1),
              "search_first_line": first_line}
    if args.json:
        print(json.dumps(report))
        return
    print(f"first answer to server/discover, median of {args.runs} (interleaved):")
    print(f"  floor (stdlib python, one line) {report['floor_ms']:8.1f} ms")
    print(f"  claude-mem mcp                  {report['mcp_ms']:8.1f} ms  = {report['ratio']:.2f}x the floor"
          f" (target <= {TARGET_RATIO}x){'' if report['answered'] else '  NOT ANSWERED: ' + json.dumps(answer)[:200]}")
    print(f"MCP process tree while it answers a search: peak {report['tree_peak_mib']:.1f} MiB (target <= {TARGET_RSS_MIB})")
    print(f"searches (the service warm): first {report['first_search_ms']:.0f} ms (a service that hosted no MCP server yet"
          f" loads it), second {report['second_search_ms']:.0f} ms: {first_line}")


if __name__ == "__main__":
    main()
