"""The first catch-up after an upgrade: a store indexed under an older documents.LAYOUT, its
observations with facts embedded again by the memory service (real MiniLM), searched meanwhile.

    python bench/catch_up.py --store DIR [--stop-after S | --for S] [--json]

DIR is a data dir indexed by an older claude-mem (e.g. `bench/scale.py --build-only --vectors words`
run from an older checkout, or a copy of your own). It is copied first and never changed. A
`claude-mem service` is started on the copy, as the first hook after an upgrade starts it; its
catch-up is timed from the service's start until its indexing job is done, while a hybrid
search is sent through the service every SEARCH_EVERY_S. Reported: the rows embedded again,
their rate, the catch-up's wall time (extrapolate linearly: embedding is per row), and the
searches during the catch-up against searches on the same service once it is done (the
baseline, same run). With --stop-after, the service is stopped S seconds in and started again:
the second catch-up must have only the rows the first left (it resumes, it does not start over).
With --for, only the first S seconds are timed (a large store's rate, without waiting it out).
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
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.scale import make_queries, pct  # noqa: E402
from claude_mem.service import client, control  # noqa: E402

SEARCH_EVERY_S = 0.25
SETTINGS = {"chroma_url": "", "semantic_index": True}


def start(data_dir: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "service"], env={**env, "CLAUDE_MEM_DATA_DIR": data_dir},
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client.call(data_dir, "ping", timeout_s=120, wait=True, start=False)
    return proc


def stop(data_dir: str, proc: subprocess.Popen[bytes]) -> None:
    control.stop_service(data_dir)
    proc.wait(60)


def searched(data_dir: str, query: dict[str, Any]) -> tuple[float, str]:
    started = time.perf_counter()
    try:
        answer = client.call(data_dir, "search", {"query": query["query"], "project": query["project"], "limit": 20,
                                                  "settings": SETTINGS}, timeout_s=30, start=False)
        mode = str(answer["mode"])
    except (client.ServiceUnavailable, client.ServiceError) as exc:
        mode = f"failed: {exc}"
    return (time.perf_counter() - started) * 1000, mode


def catch_up(data_dir: str, queries: list[dict[str, Any]], until_s: float | None) -> dict[str, Any]:
    """Until the service's first catch-up is done (or `until_s` passed): its job, and the searches sent meanwhile."""
    started = time.perf_counter()
    proc = start(data_dir)
    job: dict[str, Any] | None = None
    latencies: list[float] = []
    modes: dict[str, int] = {}
    n = 0
    try:
        while True:
            status = client.call(data_dir, "status", timeout_s=30, start=False)
            job = status["index"]["job"] or job
            if not status["index"]["busy"] or (until_s is not None and time.perf_counter() - started > until_s):
                break
            ms, mode = searched(data_dir, queries[n % len(queries)])
            n += 1
            latencies.append(ms)
            modes[mode] = modes.get(mode, 0) + 1
            time.sleep(SEARCH_EVERY_S)
        wall = time.perf_counter() - started
        after: list[float] = []
        if until_s is None:  # the baseline: the same service and queries, the index caught up
            for q in queries[: max(len(latencies), 50)]:
                after.append(searched(data_dir, q)[0])
        rss = control.state(data_dir).rss_bytes or 0
    finally:
        stop(data_dir, proc)
    out: dict[str, Any] = {"wall_s": round(wall, 1), "job": job, "searches": len(latencies), "modes": modes,
                           "service_rss_mib": round(rss / 2**20)}
    if latencies:
        out["during"] = {"p50_ms": round(statistics.median(latencies), 1), "p95_ms": round(pct(latencies, 0.95), 1)}
    if after:
        out["after"] = {"p50_ms": round(statistics.median(after), 1), "p95_ms": round(pct(after, 0.95), 1)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="a data dir indexed under an older layout (copied, not changed)")
    parser.add_argument("--stop-after", type=float, help="stop the service this many seconds in, then start it again")
    parser.add_argument("--for", dest="only_for", type=float, help="time this many seconds of the catch-up only, then stop"
                        " (for a large store: its rate, to extrapolate)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    queries = make_queries(7, 400)
    with tempfile.TemporaryDirectory(prefix="claude-mem-catch-up-") as tmp:
        data_dir = os.path.join(tmp, "data")
        shutil.copytree(args.store, data_dir, ignore=shutil.ignore_patterns("service.*", "*.sock"))
        runs = []
        if args.stop_after or args.only_for:
            runs.append(catch_up(data_dir, queries, args.stop_after or args.only_for))
        if not args.only_for:
            runs.append(catch_up(data_dir, queries, None))
    if args.json:
        print(json.dumps(runs, sort_keys=True))
        return 0
    for n, run in enumerate(runs):
        job = run["job"] or {}
        label = "stopped after" if n < len(runs) - 1 or args.only_for else "caught up in"
        print(f"service {n + 1}: {label} {run['wall_s']} s; its job {job.get('what')}: {job.get('done')} of {job.get('total')}"
              f" rows at {job.get('rate_per_s')} rows/s; RSS {run['service_rss_mib']} MiB")
        if "during" in run:
            print(f"  {run['searches']} searches meanwhile {run['modes']}: p50/p95 {run['during']['p50_ms']}/{run['during']['p95_ms']} ms")
        if "after" in run:
            ratio = run["during"]["p95_ms"] / run["after"]["p95_ms"] if "during" in run else None
            print(f"  the same searches after it: p50/p95 {run['after']['p50_ms']}/{run['after']['p95_ms']} ms"
                  + (f" (p95 during / after {ratio:.2f}x)" if ratio else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
