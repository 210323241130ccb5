"""How long `claude-mem remember` takes, against a `claude-mem search` on the same warm store, and
how soon what it stored is found (issue 46).

    python bench/remember.py [--runs 15] [--json]

A store (tests/stores.py `build_indexed`) in a fresh data folder, its memory service started and
warm. Then, interleaved round by round so that load hits both alike, the console script as a
person runs it:

  - search:    `claude-mem search QUERY` (hybrid, through the service);
  - remember:  `claude-mem remember TEXT` (a new text each round: stored, marked, the service told);

and after each `remember` returns, how long until the service's search finds the new memory by
meaning (`--mode vector`, asked straight over the socket: no process start counted), and whether
keywords found it at once. Last, once, a cold start: a fresh data folder with no service, its
first `remember`, and the time until a search by meaning finds it (the service starts, loads its
model, builds the index).

Target (issue 46): remember's p50 <= 1.5x search's; found by meaning within 3 s of returning.
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
sys.path.insert(0, str(ROOT))  # `python bench/remember.py`: this checkout's claude_mem and tests/

from claude_mem.service import client, control  # noqa: E402

TARGET_RATIO = 1.5
TARGET_FOUND_S = 3.0
FOUND_WAIT_S = 60.0
TOPICS = ["the staging database", "the release train", "the nightly build", "the payment sandbox", "the CDN cache",
          "the on-call rota", "the feature flags", "the error budget", "the mobile release", "the docs site"]


def program() -> str:
    found = shutil.which("claude-mem", path=os.path.dirname(sys.executable))
    if not found:
        raise SystemExit("claude-mem is not installed beside this interpreter")
    return found


def timed(argv: list[str], env: dict[str, str], cwd: str) -> tuple[float, str]:
    started = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[1:3])} failed ({proc.returncode}): {proc.stderr.strip()[-300:]}")
    return elapsed, proc.stdout


def found_by_meaning(data_dir: str, query: str, row_id: int, settings: dict[str, Any]) -> float | None:
    """Seconds until the service's search by meaning has `row_id` among its hits (None: not within FOUND_WAIT_S)."""
    started = time.perf_counter()
    while time.perf_counter() - started < FOUND_WAIT_S:
        try:
            answer = client.call(data_dir, "search", {"query": query, "mode": "semantic", "limit": 5, "settings": settings},
                                 timeout_s=30, wait=True)
            if answer["mode"] == "semantic" and any(h["kind"] == "observation" and h["id"] == row_id for h in answer["hits"]):
                return time.perf_counter() - started
        except (client.ServiceUnavailable, client.ServiceError):
            pass
        time.sleep(0.02)
    return None


def found_by_keywords(db_path: str, word: str, row_id: int) -> bool:
    from claude_mem.store.db import connect

    conn = connect(db_path)
    try:
        return (row_id,) in [tuple(r) for r in conn.execute("SELECT rowid FROM observations_fts WHERE observations_fts MATCH ?",
                                                            (word,))]
    finally:
        conn.close()


def warm(runs: int, tmp: str) -> dict[str, Any]:
    from tests.stores import build_indexed

    data_dir = os.path.join(tmp, "warm")
    cwd = os.path.join(tmp, "alpha")
    os.makedirs(cwd)
    build_indexed(Path(data_dir))
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": data_dir, "HOME": tmp}
    settings = client.index_settings(type("C", (), {"chroma_url": "", "semantic_index": True, "embedder": "minilm"})())
    env["CLAUDE_MEM_EMBEDDER"] = "minilm"
    client.call(data_dir, "search", {"query": "login crash", "settings": settings}, timeout_s=180, wait=True)  # warm
    times: dict[str, list[float]] = {"search": [], "remember": []}
    found: list[float | None] = []
    keywords = 0
    for n in range(runs):
        topic = TOPICS[n % len(TOPICS)]
        word = f"marker{n}x{os.getpid()}"
        text = f"Remember that {topic} is owned by team {word} and changes only on Tuesdays"
        for kind in (("search", "remember") if n % 2 == 0 else ("remember", "search")):
            if kind == "search":
                seconds, _ = timed([program(), "search", f"who owns {topic}?"], env, cwd)
            else:
                seconds, out = timed([program(), "remember", text, "--json"], env, cwd)
                row_id = json.loads(out)["id"]
                keywords += found_by_keywords(os.path.join(data_dir, "claude-mem.db"), word, row_id)
                found.append(found_by_meaning(data_dir, f"which team owns {topic}, changing it on Tuesdays?", row_id, settings))
            times[kind].append(seconds)
    control.stop_service(data_dir)
    search, remember = statistics.median(times["search"]), statistics.median(times["remember"])
    seen = [f for f in found if f is not None]
    return {"runs": runs, "search_p50_ms": round(search * 1000, 1), "remember_p50_ms": round(remember * 1000, 1),
            "ratio": round(remember / search, 2), "keywords_at_once": f"{keywords}/{runs}",
            "meaning_found": f"{len(seen)}/{runs}", "meaning_p50_ms": round(statistics.median(seen) * 1000, 1) if seen else None,
            "meaning_max_ms": round(max(seen) * 1000, 1) if seen else None}


def cold(tmp: str) -> float | None:
    data_dir = os.path.join(tmp, "cold")
    cwd = os.path.join(tmp, "beta")
    os.makedirs(cwd)
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": data_dir, "HOME": tmp, "CLAUDE_MEM_EMBEDDER": "minilm"}
    _, out = timed([program(), "remember", "The staging database is restored from the nightly snapshot", "--json"], env, cwd)
    settings = {"chroma_url": "", "semantic_index": True, "embedder": "minilm"}
    try:
        return found_by_meaning(data_dir, "how is staging's database restored?", json.loads(out)["id"], settings)
    finally:
        control.stop_service(data_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="cm-remember-")
    try:
        report = warm(args.runs, tmp)
        first = cold(tmp)
        report["cold_meaning_ms"] = round(first * 1000, 1) if first is not None else None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(report))
        return
    print(f"wall time, p50 of {report['runs']} interleaved runs on the same warm store:")
    print(f"  claude-mem search    {report['search_p50_ms']:8.1f} ms")
    print(f"  claude-mem remember  {report['remember_p50_ms']:8.1f} ms  = {report['ratio']:.2f}x search (target <= {TARGET_RATIO}x)")
    print(f"found by keywords as soon as remember returned: {report['keywords_at_once']}")
    print(f"found by meaning through the service: {report['meaning_found']}, p50 {report['meaning_p50_ms']} ms,"
          f" max {report['meaning_max_ms']} ms after remember returned (target <= {TARGET_FOUND_S:.0f} s)")
    print(f"cold start (fresh data folder, no service): found by meaning {report['cold_meaning_ms']} ms after the first"
          " remember returned")


if __name__ == "__main__":
    main()
