"""What installation ids cost (issue 16): moving an old embedded index to them, and searching a
Chroma server that a teammate shares.

    python bench/team.py [--observations 300] [--queries 30] [--json]

1. upgrade   an embedded index as claude-mem wrote it before installation ids (bare document
             ids, index_state on the bare collection id) is brought to them by the next
             `index_missing` (`index/legacy.py`: documents renamed with their stored
             vectors), timed against `reindex` of the same data (every document embedded again).
2. shared    hybrid `search()` p50/p95 on a real `chroma run` on 127.0.0.1, for installation A
             alone in a collection against A in a collection that also holds teammate B's memory
             (as many observations, another seed): the nearest documents are then partly B's, and
             their text and metadata are fetched with them. Queries interleaved between the two.

Synthetic memory from bench/scale.py (the same templates, projects and sessions).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `python bench/team.py`: the bench modules and this checkout's claude_mem

from bench import scale  # noqa: E402  (the generator of synthetic memory)
from claude_mem.identity import Installation  # noqa: E402
from claude_mem.index.documents import split_doc_id  # noqa: E402
from claude_mem.index.semantic_index import Index  # noqa: E402
from claude_mem.recall.search import search  # noqa: E402
from claude_mem.store.db import connect, transaction  # noqa: E402


def build(data_dir: Path, observations: int, seed: int) -> Any:
    data_dir.mkdir(parents=True)
    conn = connect(str(data_dir / "claude-mem.db"))
    total, number = 0, 0
    while total < observations:
        total += len(scale.add_session(conn, seed, number, limit=observations - total)[1])
        number += 1
    return conn


def legacy(index: Index, conn: Any) -> int:
    """This index's documents as claude-mem wrote them before installation ids."""
    with index._use("legacy", write=True) as store:
        got = store.collection.get(include=["embeddings", "metadatas", "documents"])
        metadatas = [{k: v for k, v in m.items() if k not in ("installation", "origin")} for m in got["metadatas"]]
        store.collection.delete(ids=got["ids"])
        for start in range(0, len(got["ids"]), 1000):
            end = start + 1000
            store.collection.upsert(ids=[split_doc_id(i)[0] for i in got["ids"][start:end]],
                                    embeddings=got["embeddings"][start:end], metadatas=metadatas[start:end],
                                    documents=got["documents"][start:end])
        cid = str(store.collection.id)
    with transaction(conn):
        conn.execute("UPDATE index_state SET collection_id = ?", (cid,))
    return len(got["ids"])


def upgrade(root: Path, observations: int, seed: int) -> dict[str, Any]:
    conn = build(root / "solo", observations, seed)
    index = Index(path=str(root / "solo" / "chroma"))
    index.index_missing(conn)
    documents = legacy(index, conn)
    t0 = time.perf_counter()
    counts = index.index_missing(conn)
    upgraded = time.perf_counter() - t0
    assert sum(v for k, v in counts.items() if k != "removed") == 0, counts  # nothing embedded again
    assert index.drift(conn)["in_sync"]
    t0 = time.perf_counter()
    index.reindex(conn)
    rebuilt = time.perf_counter() - t0
    conn.close()
    index.close()
    return {"documents": documents, "upgrade_s": round(upgraded, 2), "reindex_s": round(rebuilt, 2),
            "ratio": round(upgraded / rebuilt, 3)}


class Server:
    def __init__(self, path: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        chroma = Path(sys.executable).with_name("chroma")
        self.proc = subprocess.Popen([str(chroma), "run", "--path", str(path), "--host", "127.0.0.1", "--port", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "/api/v2/heartbeat", timeout=1):
                    return
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise SystemExit("chroma run did not come up") from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def shared(root: Path, observations: int, seed: int, queries: int) -> dict[str, Any]:
    server = Server(root / "server")
    try:
        a_conn = build(root / "a", observations, seed)
        b_conn = build(root / "b", observations, seed + 1)
        a, b = Installation("a" * 16, "laptop-a"), Installation("b" * 16, "laptop-b")
        alone = Index(url=server.url, collection_name="alone", installation=a)
        team = Index(url=server.url, collection_name="team", installation=a)
        alone.index_missing(a_conn)
        with transaction(a_conn):
            a_conn.execute("DELETE FROM index_state")  # the same rows again, into the other collection
        team.index_missing(a_conn)
        Index(url=server.url, collection_name="team", installation=b).index_missing(b_conn)
        asked = scale.make_queries(seed, queries)
        for q in asked[:5]:
            for index in (alone, team):
                search(a_conn, q["query"], index=index, project=q["project"])
        samples: dict[str, list[float]] = {"alone": [], "team": []}
        remote_hits = 0
        for i, q in enumerate(asked):
            for name, index in ((("alone", alone), ("team", team)) if i % 2 else (("team", team), ("alone", alone))):
                t0 = time.perf_counter()
                result = search(a_conn, q["query"], index=index, project=q["project"])
                samples[name].append((time.perf_counter() - t0) * 1000)
                if name == "team":
                    remote_hits += sum(h.origin is not None for h in result.hits)
        out = {name: {"p50_ms": round(statistics.median(s), 2), "p95_ms": round(scale.pct(s, 0.95), 2), "n": len(s)}
               for name, s in samples.items()}
        out["team_remote_hits_per_search"] = round(remote_hits / len(asked), 2)
        out["p50_ratio"] = round(out["team"]["p50_ms"] / out["alone"]["p50_ms"], 2)
        a_conn.close()
        b_conn.close()
        return out
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observations", type=int, default=300)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="claude-mem-team-bench-"))
    os.environ.setdefault("CLAUDE_MEM_DATA_DIR", str(root / "unused"))
    try:
        results = {"observations": args.observations, "upgrade": upgrade(root, args.observations, args.seed),
                   "shared": shared(root, args.observations, args.seed, args.queries)}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    up, sh = results["upgrade"], results["shared"]
    print(f"upgrade of an embedded index ({up['documents']} documents, {args.observations} observations): "
          f"{up['upgrade_s']} s, against {up['reindex_s']} s for reindex ({up['ratio']}x)")
    print(f"hybrid search on a server, A alone: p50 {sh['alone']['p50_ms']} ms, p95 {sh['alone']['p95_ms']} ms; "
          f"with B's memory beside it: p50 {sh['team']['p50_ms']} ms, p95 {sh['team']['p95_ms']} ms ({sh['p50_ratio']}x), "
          f"{sh['team_remote_hits_per_search']} of B's hits per search")
    return 0


if __name__ == "__main__":
    sys.exit(main())
