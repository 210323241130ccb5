"""Does the memory service stay small over time? One `claude-mem service` process indexing and
searching without a pause over a corpus of constant size (400 observations, indexed first): a
writer rewrites 8 of them every 3 s and tells the service, which re-embeds and re-upserts them,
and a reader searches continuously through the socket.
The service's RSS is sampled every 5 s; after the warm-up (the first fifth of the run) its growth
to the end must stay within 10% (the best-known system's embedding server grows ~280 MB an hour).

    .venv/bin/python bench/soak.py [--minutes 30] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
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

from claude_mem.service import client, control  # noqa: E402
from claude_mem.store.db import connect, transaction  # noqa: E402
from claude_mem.store.memories import Observation, insert_observation  # noqa: E402
from claude_mem.store.records import ensure_session  # noqa: E402

_WORDS = ("login crash token refresh cache eviction migration schema index search parser retry backoff worker queue "
          "socket timeout deadlock flaky test fixture docker build release changelog lint format typing import")
WORDS = tuple(_WORDS.split())
SETTINGS = {"chroma_url": "", "semantic_index": True}
GROWTH_TARGET = 0.10


def sentence(rng: random.Random, n: int = 9) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


PREFILL_SESSIONS = 50  # x 8 observations: the corpus the run keeps rewriting


def _observation(rng: random.Random) -> Observation:
    return Observation(type="discovery", title=sentence(rng, 6), narrative=sentence(rng, 30), facts=[sentence(rng), sentence(rng)])


def prefill(data_dir: Path) -> list[int]:
    rng = random.Random(0)
    conn = connect(str(data_dir / "claude-mem.db"))
    ids: list[int] = []
    try:
        for session in range(PREFILL_SESSIONS):
            sid = f"soak-{session}"
            with transaction(conn):
                ensure_session(conn, sid, project=f"p{session % 5}", cwd=None, transcript_path=None)
                ids += [insert_observation(conn, sid, f"p{session % 5}", _observation(rng), prompt_number=1) for _ in range(8)]
    finally:
        conn.close()
    return ids


def writer(data_dir: Path, ids: list[int], stop: threading.Event, counts: dict[str, int]) -> None:
    """Rewrites 8 observations every 3 s and tells the service, which re-embeds them: continuous
    indexing over a corpus of constant size, so any growth is the service's, not the data's."""
    rng = random.Random(1)
    conn = connect(str(data_dir / "claude-mem.db"))
    try:
        while not stop.is_set():
            chosen = rng.sample(ids, 8)
            with transaction(conn):
                for row_id in chosen:
                    fresh = _observation(rng)
                    conn.execute("UPDATE observations SET title = ?, narrative = ?, facts = ? WHERE id = ?",
                                 (fresh.title, fresh.narrative, json.dumps(fresh.facts), row_id))
            counts["observations"] += len(chosen)
            try:
                client.call(str(data_dir), "index", {"observations": chosen, "settings": SETTINGS}, timeout_s=2, start=False)
            except (client.ServiceUnavailable, client.ServiceError):
                counts["notice_failures"] += 1
            stop.wait(3.0)
    finally:
        conn.close()


def reader(data_dir: Path, stop: threading.Event, counts: dict[str, int], latencies: list[float]) -> None:
    rng = random.Random(2)
    while not stop.is_set():
        t0 = time.perf_counter()
        try:
            client.call(str(data_dir), "search", {"query": sentence(rng, 5), "project": rng.choice([None, "p1", "p3"]),
                                                  "settings": SETTINGS}, timeout_s=30, start=False)
            counts["searches"] += 1
            latencies.append((time.perf_counter() - t0) * 1000)
        except (client.ServiceUnavailable, client.ServiceError):
            counts["search_failures"] += 1
        stop.wait(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cm-soak-") as name:
        data_dir = Path(name) / "data"
        data_dir.mkdir(mode=0o700)
        ids = prefill(data_dir)
        env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
        proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "service"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={**env, "CLAUDE_MEM_DATA_DIR": str(data_dir), "CLAUDE_MEM_SERVICE_IDLE_S": "600"})
        client.call(str(data_dir), "ping", timeout_s=120, wait=True, start=False)
        while client.call(str(data_dir), "status", timeout_s=60, start=False).get("index_lag"):
            time.sleep(2)  # the prefilled corpus indexed first: what follows is steady state
        service = psutil.Process(proc.pid)
        stop = threading.Event()
        counts = {"observations": 0, "searches": 0, "notice_failures": 0, "search_failures": 0}
        latencies: list[float] = []
        threads = [threading.Thread(target=writer, args=(data_dir, ids, stop, counts)),
                   threading.Thread(target=reader, args=(data_dir, stop, counts, latencies))]
        for t in threads:
            t.start()
        samples: list[tuple[float, int]] = []
        started = time.monotonic()
        try:
            while time.monotonic() - started < args.minutes * 60:
                samples.append((time.monotonic() - started, service.memory_info().rss))
                time.sleep(5)
        finally:
            stop.set()
            for t in threads:
                t.join()
            lag = client.call(str(data_dir), "status", timeout_s=60, start=False).get("index_lag")
            control.stop_service(str(data_dir))
            proc.wait(30)
    warm = [rss for t, rss in samples if t >= args.minutes * 60 / 5]
    after_warm_up, end, peak = warm[0], warm[-1], max(warm)
    growth = (end - after_warm_up) / after_warm_up
    result = {"minutes": args.minutes, **counts, "index_lag_at_end": lag,
              "rss_after_warm_up_mib": round(after_warm_up / 2**20), "rss_end_mib": round(end / 2**20),
              "rss_peak_mib": round(peak / 2**20), "growth": round(growth, 3),
              "search_p50_ms": round(statistics.median(latencies), 1) if latencies else None,
              "samples_mib": [round(rss / 2**20) for _, rss in samples]}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"soak {args.minutes:g} min: {counts['observations']} observation rewrites indexed, {counts['searches']} searches "
          f"(p50 {result['search_p50_ms']} ms), {counts['search_failures']} failed, index lag at the end {lag}")
    print(f"service RSS after warm-up {result['rss_after_warm_up_mib']} MiB -> end {result['rss_end_mib']} MiB "
          f"(peak {result['rss_peak_mib']}): growth {growth:+.1%} ({'ok' if growth <= GROWTH_TARGET else 'ABOVE'} target "
          f"{GROWTH_TARGET:.0%})")


if __name__ == "__main__":
    main()
