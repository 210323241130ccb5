"""Worker overhead: milliseconds per queued event and memory, with a model that answers at once.

    python bench/worker.py [--json] [TRANSCRIPT ...]

Each real transcript (../shared/data/transcripts, else the test fixture) is stored into a fresh
data dir the way the hooks store it, then drained by a real `claude-mem worker --drain` process
whose observer is the fake Claude CLI from tests/fakes (instant replies, one observation per
event): what is left is our own cost per event -- claiming, rendering, the SDK round trip,
parsing, storing, indexing. Beside it, in the same run: the same worker on an empty queue
(start-up and shut-down alone, subtracted to get the per-event figure) and the heuristic
synthesizer (no model at all). Peak RSS is sampled every 20 ms for the worker and, separately,
for its observer CLI child.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import transcripts  # noqa: E402
from claude_mem import settings  # noqa: E402
from claude_mem.hooks import store_in_process  # noqa: E402
from claude_mem.replay import transcript_payloads  # noqa: E402
from claude_mem.store import queue, queue_rows  # noqa: E402
from claude_mem.store.db import connect  # noqa: E402
from tests.fakes.fake_claude import write_wrapper  # noqa: E402

SESSION = "bench-worker"


def fill(data_dir: Path, transcript: Path | None) -> int:
    os.environ["CLAUDE_MEM_DATA_DIR"] = str(data_dir)
    config = settings.load(strict=True)
    config.ensure_dirs()
    conn = connect(config.db_path)
    try:
        if transcript is not None:
            store_in_process(config, conn, transcript_payloads(transcript, session_id=SESSION))
        return len(queue_rows.list_rows(conn, session_id=SESSION))
    finally:
        conn.close()


def drain(data_dir: Path, synthesizer: str, fake_cli: str, script: Path) -> dict:
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": str(data_dir), "CLAUDE_MEM_WORKER_AUTOSTART": "0",
           "CLAUDE_MEM_CLI_PATH": fake_cli, "FAKE_CLAUDE_SCRIPT": str(script), "CLAUDE_MEM_RETRY_BACKOFF_S": "0"}
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", SESSION, "--drain",
                             "--synthesizer", synthesizer], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    worker = psutil.Process(proc.pid)
    peak_worker = peak_cli = 0
    while proc.poll() is None:
        try:
            peak_worker = max(peak_worker, worker.memory_info().rss)
            peak_cli = max(peak_cli, sum(c.memory_info().rss for c in worker.children(recursive=True)))
        except psutil.Error:
            pass
        time.sleep(0.02)
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"worker failed: {proc.stderr.read().decode(errors='replace')[-2000:]}")
    return {"wall_s": wall, "worker_rss_mib": peak_worker / 2**20, "cli_rss_mib": peak_cli / 2**20}


def measure(transcript: Path, tmp: Path, fake_cli: str, script: Path) -> dict:
    results: dict = {"transcript": transcript.name}
    empty = tmp / f"{transcript.stem}-empty"
    fill(empty, None)
    results["startup"] = drain(empty, "model", fake_cli, script)
    for synthesizer in ("model", "heuristic"):
        data_dir = tmp / f"{transcript.stem}-{synthesizer}"
        events = fill(data_dir, transcript)
        run = drain(data_dir, synthesizer, fake_cli, script)
        conn = connect(str(data_dir / "claude-mem.db"))
        left = queue.counts_by_status(conn, SESSION)
        conn.close()
        if left["done"] != events:
            raise SystemExit(f"{transcript.name} ({synthesizer}): {left} after draining {events} events")
        run["events"] = events
        run["ms_per_event"] = max(0.0, run["wall_s"] - results["startup"]["wall_s"]) * 1000 / max(events, 1)
        results[synthesizer] = run
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("transcripts", nargs="*", type=Path)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    paths = transcripts(args.transcripts)
    with tempfile.TemporaryDirectory(prefix="cm-bench-worker-") as tmp_name:
        tmp = Path(tmp_name)
        fake_cli = write_wrapper(tmp / "fakebin")
        script = tmp / "script.json"
        script.write_text(json.dumps({"steps": [], "default": {"per_event": True}}))
        results = [measure(p, tmp, fake_cli, script) for p in paths]
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"{'transcript':<44} {'events':>6} {'start s':>8} {'model ms/ev':>12} {'heur ms/ev':>11} {'worker MiB':>11} {'cli MiB':>8}")
    for r in results:
        print(f"{r['transcript']:<44} {r['model']['events']:>6} {r['startup']['wall_s']:>8.2f} {r['model']['ms_per_event']:>12.1f}"
              f" {r['heuristic']['ms_per_event']:>11.1f} {max(r['model']['worker_rss_mib'], r['heuristic']['worker_rss_mib']):>11.0f}"
              f" {r['model']['cli_rss_mib']:>8.0f}")
    events = sum(r["model"]["events"] for r in results)
    per_event = sum(r["model"]["ms_per_event"] * r["model"]["events"] for r in results) / max(events, 1)
    print(f"ALL: {events} events, model path {per_event:.1f} ms/event with an instant model (fake CLI), "
          f"peak worker RSS {max(r['model']['worker_rss_mib'] for r in results):.0f} MiB")


if __name__ == "__main__":
    main()
