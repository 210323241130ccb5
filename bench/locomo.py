"""Retrieval quality on LoCoMo: recall@5, recall@10, MRR and latency of fts, vector and hybrid search.

    python bench/locomo.py --data ../shared/data/locomo/locomo-dev.json [--json]
    python bench/locomo.py --data ... --push [--offtopic TRANSCRIPT.jsonl ...] [--no-semantic] [--json]

Each LoCoMo conversation becomes one claude-mem project in its own data folder (one memory per
person, so BM25 weighs words by that conversation alone, as the published baselines did; all
five in one database score hybrid recall@10 ~0.65 instead); each of its sessions one claude-mem
session (dated with the session's date, local time); each `observation` fact one observation
(type "discovery", the fact as its title), stored with `insert_observation` and indexed with
`Index.index_observations` -- the code the worker uses. A fact's provenance (its dia_id, rarely
several) is kept in a side table keyed by observation id, not in the observation, so it can
neither match a query nor be embedded.

Every question of categories 1-4 is then asked through `claude_mem.recall.search.search`,
filtered to its conversation's project. A retrieved observation contributes its fact's dia_ids;
recall@k is the share of the question's evidence dia_ids found in the first k hits (malformed
evidence such as "D8:6; D9:17" or "D30:05" is cleaned; questions left without evidence are
skipped); MRR is over the first 10 hits. About a fifth of the evidence turns have no fact at
all, so `ceiling.recall@10` is the best any ranking could score. The table shows recall@10 per
question category; `--json` also has recall@5 and MRR per category (`hybrid.cat1.mrr`, ...).

The data set is CC BY-NC 4.0: it is read from where it lies, never copied into the repository.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from claude_mem.recall.index import Index
from claude_mem.recall.search import search
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, insert_observation
from claude_mem.store.records import ensure_session

MODES = ("fts", "vector", "hybrid")
CATEGORIES = (1, 2, 3, 4)
_DIA = re.compile(r"^D(\d+):(\d+)$")


def clean_evidence(raw: Any) -> list[str]:
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        for part in re.split(r"[;,\s]+", str(item)):
            match = _DIA.match(part.strip())
            if match:
                out.append(f"D{int(match.group(1))}:{int(match.group(2))}")
    return list(dict.fromkeys(out))


def session_epoch_ms(text: str) -> int:
    # "1:56 pm on 8 May, 2023", read as local time like the dates search finds in questions.
    stamp = time.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y")
    return int(time.mktime(stamp) * 1000)


def ingest(conn: Any, index: Index, sample: dict[str, Any]) -> tuple[dict[int, list[str]], int]:
    """Store and index one conversation; returns obs id -> dia_ids, and the number of facts."""
    project = sample["sample_id"]
    conversation = sample["conversation"]
    provenance: dict[int, list[str]] = {}
    facts_seen = 0
    ids: list[int] = []
    for key, by_speaker in sample["observation"].items():
        number = int(re.search(r"session_(\d+)", key).group(1))
        session_id = f"{project}-session-{number}"
        start_ms = session_epoch_ms(conversation[f"session_{number}_date_time"])
        with transaction(conn):
            ensure_session(conn, session_id, project=project, cwd=None, transcript_path=None)
            offset = 0
            for facts in by_speaker.values():
                for fact, dia in facts:
                    facts_seen += 1
                    dias = clean_evidence(dia)
                    offset += 1
                    obs = Observation(type="discovery", title=" ".join(str(fact).split()))
                    obs_id = insert_observation(conn, session_id, project, obs, prompt_number=number, source="import",
                                                created_at_epoch=start_ms + offset * 1000)
                    if obs_id is None:  # the same fact twice in one session: one observation, both turns
                        obs_id = conn.execute("SELECT id FROM observations WHERE session_id = ? AND content_hash = ?",
                                              (session_id, obs.content_hash())).fetchone()[0]
                    else:
                        ids.append(obs_id)
                    provenance.setdefault(obs_id, [])
                    provenance[obs_id].extend(d for d in dias if d not in provenance[obs_id])
    index.index_observations(conn, ids)
    return provenance, facts_seen


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))
    return ordered[rank]


def run(data_path: str, data_dir: str, *, progress: bool) -> dict[str, Any]:
    with open(data_path, encoding="utf-8") as fh:
        samples = json.load(fh)
    sums: dict[str, dict[str, float]] = {m: defaultdict(float) for m in MODES}
    by_cat: dict[str, dict[int, dict[str, float]]] = {m: defaultdict(lambda: defaultdict(float)) for m in MODES}
    latency: dict[str, list[float]] = {m: [] for m in MODES}
    questions = skipped = facts = observations = 0
    ceiling = ingest_s = 0.0
    for sample in samples:
        project = sample["sample_id"]
        # One memory per conversation, as each is a separate person's history: BM25's IDF is
        # then the conversation's own (the published baselines were computed the same way).
        store_dir = os.path.join(data_dir, project)
        os.makedirs(store_dir, exist_ok=True)
        conn = connect(os.path.join(store_dir, "claude-mem.db"))
        index = Index(path=os.path.join(store_dir, "chroma"))
        started = time.perf_counter()
        provenance, count = ingest(conn, index, sample)
        ingest_s += time.perf_counter() - started
        facts += count
        observations += len(provenance)
        known = {d for dias in provenance.values() for d in dias}
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
            for mode in MODES:
                t0 = time.perf_counter()
                result = search(conn, qa["question"], index=index, project=project, kinds=("observation",), limit=10, mode=mode)
                latency[mode].append((time.perf_counter() - t0) * 1000)
                if result.mode != mode:
                    raise SystemExit(f"search answered in {result.mode} mode instead of {mode}: {result.note}")
                ranked = [provenance.get(hit.id, []) for hit in result.hits]
                scores = {
                    "recall@5": len(evidence & {d for dias in ranked[:5] for d in dias}) / len(evidence),
                    "recall@10": len(evidence & {d for dias in ranked[:10] for d in dias}) / len(evidence),
                    "mrr": next((1 / (r + 1) for r, dias in enumerate(ranked[:10]) if evidence & set(dias)), 0.0),
                }
                for key, value in scores.items():
                    sums[mode][key] += value
                    by_cat[mode][qa["category"]][key] += value
                by_cat[mode][qa["category"]]["n"] += 1
        conn.close()
        index.close()
        if progress:
            print(f"{project}: {count} facts, done", file=sys.stderr)

    report: dict[str, Any] = {"data": os.path.basename(data_path), "conversations": len(samples), "facts": facts,
                              "observations": observations, "questions": questions, "skipped_no_evidence": skipped,
                              "ingest_s": round(ingest_s, 2), "ceiling.recall@10": round(ceiling / questions, 4)}
    for mode in MODES:
        for key in ("recall@5", "recall@10", "mrr"):
            report[f"{mode}.{key}"] = round(sums[mode][key] / questions, 4)
        report[f"{mode}.p50_ms"] = round(statistics.median(latency[mode]), 2)
        report[f"{mode}.p95_ms"] = round(percentile(latency[mode], 0.95), 2)
        for cat, values in sorted(by_cat[mode].items()):
            for key in ("recall@5", "recall@10", "mrr"):
                report[f"{mode}.cat{cat}.{key}"] = round(values[key] / values["n"], 4)
    return report


def main_push(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from bench import push_recall

    offtopic = args.offtopic if args.offtopic is not None else push_recall.default_offtopic()
    with tempfile.TemporaryDirectory(prefix="cm-push-", dir=args.data_dir) as tmp:
        # Short: the memory service's socket lives in the data folder (AF_UNIX paths are short).
        report = push_recall.run(args.data, tmp, offtopic=list(offtopic), semantic=not args.no_semantic,
                                 progress=not args.json)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        push_recall.report(report)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a LoCoMo JSON file (e.g. ../shared/data/locomo/locomo-dev.json)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--data-dir", help="keep the database and index here (default: a temporary folder)")
    parser.add_argument("--push", action="store_true",
                        help="score what the prompt hook injects for every question instead (bench/push_recall.py)")
    parser.add_argument("--offtopic", nargs="*", type=Path, default=None,
                        help="with --push: Claude Code transcripts whose user prompts are the off-topic set"
                             " (default: ../shared/data/transcripts)")
    parser.add_argument("--no-semantic", action="store_true", help="with --push: keywords only, no memory service")
    args = parser.parse_args(argv)
    if args.push:
        return main_push(args, parser)
    if args.data_dir:
        os.makedirs(args.data_dir, exist_ok=True)
        if os.listdir(args.data_dir):
            parser.error(f"--data-dir {args.data_dir} must be empty")
        report = run(args.data, args.data_dir, progress=not args.json)
    else:
        with tempfile.TemporaryDirectory(prefix="claude-mem-locomo-") as tmp:
            report = run(args.data, tmp, progress=not args.json)
    if args.json:
        print(json.dumps(report, sort_keys=True))
        return 0
    print(f"{report['questions']} questions (categories 1-4) over {report['facts']} facts; "
          f"ceiling recall@10 {report['ceiling.recall@10']:.3f}")
    print(f"{'mode':8} {'recall@5':>9} {'recall@10':>10} {'MRR':>7} {'p50 ms':>8} {'p95 ms':>8}   recall@10 by category 1/2/3/4")
    for mode in MODES:
        cats = "/".join(f"{report.get(f'{mode}.cat{c}.recall@10', 0):.3f}" for c in CATEGORIES)
        print(f"{mode:8} {report[f'{mode}.recall@5']:9.3f} {report[f'{mode}.recall@10']:10.3f} {report[f'{mode}.mrr']:7.3f}"
              f" {report[f'{mode}.p50_ms']:8.1f} {report[f'{mode}.p95_ms']:8.1f}   {cats}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
