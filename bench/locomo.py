"""Retrieval quality on LoCoMo: recall@5, recall@10, MRR and latency of fts, vector and hybrid search.

    python bench/locomo.py --data ../shared/data/locomo/locomo-dev.json [--mode facts|turns] [--json]
    python bench/locomo.py --data ... --push [--offtopic TRANSCRIPT.jsonl ...] [--no-semantic] [--json]

Each LoCoMo conversation becomes one claude-mem project in its own data folder (one memory per
person, so BM25 weighs words by that conversation alone, as the published baselines did; all
five in one database score hybrid recall@10 ~0.65 instead); each of its sessions one claude-mem
session (dated with the session's date, local time); each `observation` fact one observation
(type "discovery", the fact as its title), stored with `insert_observation` (the code the
worker uses) and indexed as the memory service indexes, in the collection of the embedder the
`embedder` setting picks for that store (`auto`, the default, judges what the store holds). A fact's provenance (its dia_id, rarely
several) is kept in a side table keyed by observation id, not in the observation, so it can
neither match a query nor be embedded.

Every question of categories 1-4 is then asked through `claude_mem.recall.search.search`,
filtered to its conversation's project. A retrieved observation contributes its fact's dia_ids;
recall@k is the share of the question's evidence dia_ids found in the first k hits (malformed
evidence such as "D8:6; D9:17" or "D30:05" is cleaned; questions left without evidence are
skipped); MRR is over the first 10 hits. About a fifth of the evidence turns have no fact at
all, so `ceiling.recall@10` is the best any ranking could score. The table shows recall@10 per
question category; `--json` also has recall@5 and MRR per category (`hybrid.cat1.mrr`, ...).

`--mode turns` stores what was said as well (issue 14): each dialogue turn becomes a prompt of
its session ("Speaker: text", dated with the session's date plus its place in it), recorded with
`record_prompt` like the UserPromptSubmit hook does, and each fact an observation of the turn it
was drawn from (its `prompt_number`), as the worker files a turn's observations. Every kind is
searched; a prompt hit contributes its turn's dia_id, an observation its fact's. The ceiling is
then the share of evidence that names a real turn (~1.0). `--mode facts` (the default) is the
original measurement, unchanged.

Embedding is most of the ingest: `--embed-cache DIR` keeps the vectors of texts already
embedded in DIR (keyed by the model file's sha256 and the text), so a rerun embeds nothing new.

The data set is CC BY-NC 4.0: it is read from where it lies, never copied into the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `python bench/locomo.py`: the bench modules and this checkout's claude_mem

from bench.locomo_memory import EmbeddingCache, bench_index, clean_evidence, ingest, ingest_turns  # noqa: E402
from claude_mem.index.embedders import DEFAULT as DEFAULT_EMBEDDER  # noqa: E402
from claude_mem.index.embedders import NAMES  # noqa: E402
from claude_mem.kinds import SearchMode  # noqa: E402
from claude_mem.recall.search import search  # noqa: E402
from claude_mem.store.db import connect  # noqa: E402
from claude_mem.store.reads import KINDS  # noqa: E402

MODES = (SearchMode.KEYWORD, SearchMode.SEMANTIC, SearchMode.HYBRID)
BENCH_MODES = ("facts", "turns")
CATEGORIES = (1, 2, 3, 4)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))
    return ordered[rank]


def run(data_path: str, data_dir: str, *, progress: bool, mode: str = "facts", embedder: str = DEFAULT_EMBEDDER) -> dict[str, Any]:
    if mode not in BENCH_MODES:
        raise ValueError(f"mode must be one of {', '.join(BENCH_MODES)}, got {mode!r}")
    with open(data_path, encoding="utf-8") as fh:
        samples = json.load(fh)
    sums: dict[str, dict[str, float]] = {m: defaultdict(float) for m in MODES}
    by_cat: dict[str, dict[int, dict[str, float]]] = {m: defaultdict(lambda: defaultdict(float)) for m in MODES}
    latency: dict[str, list[float]] = {m: [] for m in MODES}
    questions = skipped = facts = observations = prompts = 0
    embedders: dict[str, int] = defaultdict(int)  # conversations per embedder used
    ceiling = ingest_s = 0.0
    # Facts mode asks for observations only (nothing else is stored); turns mode for every kind.
    kinds = ("observation",) if mode == "facts" else KINDS
    for sample in samples:
        project = sample["sample_id"]
        # One memory per conversation, as each is a separate person's history: BM25's IDF is
        # then the conversation's own (the published baselines were computed the same way).
        store_dir = os.path.join(data_dir, project)
        os.makedirs(store_dir, exist_ok=True)
        conn = connect(os.path.join(store_dir, "claude-mem.db"))
        started = time.perf_counter()
        if mode == "facts":
            provenance, count = ingest(conn, None, sample)
            said: dict[int, list[str]] = {}
        else:
            provenance, said, count = ingest_turns(conn, None, sample)
        index = bench_index(os.path.join(store_dir, "chroma"), embedder, conn)
        index.index_missing(conn)
        embedders[index.embedder] += 1
        ingest_s += time.perf_counter() - started
        facts += count
        observations += len(provenance)
        prompts += len(said)
        sources = {"observation": provenance, "prompt": said}
        known = {d for side in sources.values() for dias in side.values() for d in dias}
        search(conn, "warm up", index=index, limit=1)  # loading the model is not search latency
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            evidence = set(clean_evidence(qa.get("evidence", [])))
            if not evidence:
                skipped += 1
                continue
            questions += 1
            ceiling += len(evidence & known) / len(evidence)
            for search_mode in MODES:
                t0 = time.perf_counter()
                result = search(conn, qa["question"], index=index, project=project, kinds=kinds, limit=10, mode=search_mode)
                latency[search_mode].append((time.perf_counter() - t0) * 1000)
                if result.mode != search_mode:
                    raise SystemExit(f"search answered in {result.mode} mode instead of {search_mode}: {result.note}")
                ranked = [sources.get(hit.kind, {}).get(hit.id, []) for hit in result.hits]
                scores = {
                    "recall@5": len(evidence & {d for dias in ranked[:5] for d in dias}) / len(evidence),
                    "recall@10": len(evidence & {d for dias in ranked[:10] for d in dias}) / len(evidence),
                    "mrr": next((1 / (r + 1) for r, dias in enumerate(ranked[:10]) if evidence & set(dias)), 0.0),
                }
                for key, value in scores.items():
                    sums[search_mode][key] += value
                    by_cat[search_mode][qa["category"]][key] += value
                by_cat[search_mode][qa["category"]]["n"] += 1
        conn.close()
        index.close()
        if progress:
            print(f"{project}: {count} facts" + (f", {len(said)} turns" if said else "") + ", done", file=sys.stderr)

    report: dict[str, Any] = {"data": os.path.basename(data_path), "mode": mode, "conversations": len(samples),
                              "facts": facts, "observations": observations, "prompts": prompts, "questions": questions,
                              "skipped_no_evidence": skipped, "ingest_s": round(ingest_s, 2), "embedders": dict(embedders),
                              "ceiling.recall@10": round(ceiling / questions, 4)}
    for search_mode in MODES:
        for key in ("recall@5", "recall@10", "mrr"):
            report[f"{search_mode}.{key}"] = round(sums[search_mode][key] / questions, 4)
        report[f"{search_mode}.p50_ms"] = round(statistics.median(latency[search_mode]), 2)
        report[f"{search_mode}.p95_ms"] = round(percentile(latency[search_mode], 0.95), 2)
        for cat, values in sorted(by_cat[search_mode].items()):
            for key in ("recall@5", "recall@10", "mrr"):
                report[f"{search_mode}.cat{cat}.{key}"] = round(values[key] / values["n"], 4)
    return report


def main_push(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bench import push_recall

    offtopic = args.offtopic if args.offtopic is not None else push_recall.default_offtopic()
    with tempfile.TemporaryDirectory(prefix="cm-push-", dir=args.data_dir) as tmp:
        # Short: the memory service's socket lives in the data folder (AF_UNIX paths are short).
        report = push_recall.run(args.data, tmp, offtopic=list(offtopic), semantic=not args.no_semantic,
                                 progress=not args.json, embedder=args.embedder)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        push_recall.report(report)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a LoCoMo JSON file (e.g. ../shared/data/locomo/locomo-dev.json)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--mode", choices=BENCH_MODES, default="facts",
                        help="what is stored: the facts alone (default), or every dialogue turn as a prompt with its facts")
    parser.add_argument("--data-dir", help="keep the database and index here (default: a temporary folder)")
    parser.add_argument("--push", action="store_true",
                        help="score what the prompt hook injects for every question instead (bench/push_recall.py)")
    parser.add_argument("--offtopic", nargs="*", type=Path, default=None,
                        help="with --push: Claude Code transcripts whose user prompts are the off-topic set"
                             " (default: ../shared/data/transcripts)")
    parser.add_argument("--no-semantic", action="store_true", help="with --push: keywords only, no memory service")
    parser.add_argument("--embed-cache", help="keep the vectors of embedded texts in this folder and reuse them")
    parser.add_argument("--embedder", choices=NAMES, default=DEFAULT_EMBEDDER, help="the semantic index's model (the setting)")
    args = parser.parse_args(argv)
    if args.push:
        return main_push(args, parser)
    with contextlib.ExitStack() as stack:
        if args.embed_cache:
            stack.enter_context(EmbeddingCache(args.embed_cache, args.embedder))
        if args.data_dir:
            os.makedirs(args.data_dir, exist_ok=True)
            if os.listdir(args.data_dir):
                parser.error(f"--data-dir {args.data_dir} must be empty")
            data_dir = args.data_dir
        else:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="claude-mem-locomo-"))
        report = run(args.data, data_dir, progress=not args.json, mode=args.mode, embedder=args.embedder)
    if args.json:
        print(json.dumps(report, sort_keys=True))
        return 0
    stored = f"{report['facts']} facts" + (f" and {report['prompts']} dialogue turns" if report["mode"] == "turns" else "")
    print(f"{report['questions']} questions (categories 1-4) over {stored}; "
          f"ceiling recall@10 {report['ceiling.recall@10']:.3f}; embedder per conversation {report['embedders']}")
    print(f"{'mode':8} {'recall@5':>9} {'recall@10':>10} {'MRR':>7} {'p50 ms':>8} {'p95 ms':>8}   recall@10 by category 1/2/3/4")
    for mode in MODES:
        cats = "/".join(f"{report.get(f'{mode}.cat{c}.recall@10', 0):.3f}" for c in CATEGORIES)
        print(f"{mode:8} {report[f'{mode}.recall@5']:9.3f} {report[f'{mode}.recall@10']:10.3f} {report[f'{mode}.mrr']:7.3f}"
              f" {report[f'{mode}.p50_ms']:8.1f} {report[f'{mode}.p95_ms']:8.1f}   {cats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
