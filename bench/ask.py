"""`claude-mem ask` without a model, scored on LoCoMo: is an evidence fact in the answer?

    python bench/ask.py --data ../shared/data/locomo/locomo-dev.json [--chars 800] [--embed-cache DIR] [--json]

Each conversation's memory is built as `bench/locomo.py` builds it in facts mode (one data folder
per conversation, one observation per fact, indexed with the embedder the store gets), and every
question of categories 1-4 is asked through `claude_mem.ask.answer.ask` (the one hybrid search
in this process, the extractive answer), filtered to its conversation's project. Scored:

  ask.recall             share of questions whose answer holds the text of one of their evidence
                         facts (a fact drawn from an evidence turn); a question whose evidence turns
                         have no fact scores 0
  ask.recall_answerable  the same over the questions with at least one evidence fact
  ask.chars              mean characters of an answer; ask.refs: share of answers citing a ref
  ask.dont_know          share of these (answerable) questions answered "I don't know"
  offtopic.dont_know     share of the user prompts of Claude Code transcripts (developer work,
                         nothing to do with these conversations) answered "I don't know", each asked
                         of every conversation's memory (at most --offtopic-max per conversation)
  search.recall          the baseline, measured in the same run: the titles of `search`'s first hits,
                         as many as fit in the same characters, scored the same way
  ask.p50_ms / search.p50_ms   wall time per question of each, interleaved

The data set is CC BY-NC 4.0: it is read from where it lies, never copied into the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `python bench/ask.py`: the bench modules and this checkout's claude_mem

from bench.locomo_memory import EmbeddingCache, bench_index, clean_evidence, ingest  # noqa: E402
from claude_mem.ask.answer import DONT_KNOW, ask  # noqa: E402
from claude_mem.index.embedders import DEFAULT as DEFAULT_EMBEDDER  # noqa: E402
from claude_mem.recall.search import search  # noqa: E402
from claude_mem.settings import SETTINGS, Config  # noqa: E402
from claude_mem.store.db import connect  # noqa: E402

CATEGORIES = (1, 2, 3, 4)


def normal(text: str) -> str:
    return " ".join(text.lower().split()).rstrip(".!? ")


def search_baseline(conn: Any, index: Any, question: str, project: str, chars: int) -> str:
    """What the first rows of a search hold in the same space: their titles, one a line."""
    lines: list[str] = []
    size = 0
    for hit in search(conn, question, index=index, project=project, limit=12).hits:
        if size + len(hit.title) + 1 > chars:
            break
        lines.append(hit.title)
        size += len(hit.title) + 1
    return "\n".join(lines)


def offtopic_prompts(limit: int) -> list[str]:
    from bench.data import transcripts
    from bench.push_recall import offtopic_prompts as prompts_of

    found = [p for p in prompts_of(transcripts()) if len(p.split()) >= 3]
    return found[:limit]


def run(data_path: str, data_dir: str, *, chars: int, embedder: str, offtopic_max: int, progress: bool) -> dict[str, Any]:
    with open(data_path, encoding="utf-8") as fh:
        samples = json.load(fh)
    config = Config(data_dir, {**{k: s.default for k, s in SETTINGS.items()}, "ask_chars": chars})
    offtopic = offtopic_prompts(offtopic_max)
    sums = {"ask.recall": 0, "search.recall": 0, "answerable": 0, "ask.refs": 0, "ask.dont_know": 0,
            "offtopic.dont_know": 0, "offtopic": 0}
    answer_chars: list[int] = []
    timing: dict[str, list[float]] = {"ask": [], "search": []}
    questions = 0
    for sample in samples:
        project = sample["sample_id"]
        store = os.path.join(data_dir, project)
        os.makedirs(store, exist_ok=True)
        conn = connect(os.path.join(store, "claude-mem.db"))
        provenance, _ = ingest(conn, None, sample)
        index = bench_index(os.path.join(store, "chroma"), embedder, conn)
        index.index_missing(conn)
        titles = {row[0]: normal(row[1]) for row in conn.execute("SELECT id, title FROM observations")}
        facts_of: dict[str, set[str]] = {}
        for obs_id, dias in provenance.items():
            for dia in dias:
                facts_of.setdefault(dia, set()).add(titles[obs_id])
        search(conn, "warm up", index=index, limit=1)  # loading the model is not an answer's time
        for qa in sample["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            questions += 1
            wanted = {f for dia in clean_evidence(qa.get("evidence", [])) for f in facts_of.get(dia, ())}
            # Interleaved, each first every other question: the second reuses the first's query vector.
            for side in (("ask", "search") if questions % 2 else ("search", "ask")):
                t0 = time.perf_counter()
                if side == "ask":
                    answer = ask(config, conn, qa["question"], project=project, index=index)
                else:
                    baseline = search_baseline(conn, index, qa["question"], project, chars)
                timing[side].append((time.perf_counter() - t0) * 1000)
            answer_chars.append(len(answer.answer))
            sums["ask.refs"] += bool(answer.refs)
            sums["ask.dont_know"] += answer.answer == DONT_KNOW
            if wanted:
                sums["answerable"] += 1
                sums["ask.recall"] += any(f in normal(answer.answer) for f in wanted)
                sums["search.recall"] += any(f in normal(baseline) for f in wanted)
        for prompt in offtopic:
            sums["offtopic"] += 1
            sums["offtopic.dont_know"] += ask(config, conn, prompt, project=project, index=index).answer == DONT_KNOW
        conn.close()
        index.close()
        if progress:
            print(f"{project}: done", file=sys.stderr)
    answerable = sums["answerable"] or 1
    return {"data": os.path.basename(data_path), "questions": questions, "answerable": sums["answerable"], "chars_limit": chars,
            "ask.recall": round(sums["ask.recall"] / questions, 4),
            "ask.recall_answerable": round(sums["ask.recall"] / answerable, 4),
            "search.recall": round(sums["search.recall"] / questions, 4),
            "search.recall_answerable": round(sums["search.recall"] / answerable, 4),
            "ask.chars": round(statistics.mean(answer_chars), 1), "ask.max_chars": max(answer_chars),
            "ask.refs": round(sums["ask.refs"] / questions, 4), "ask.dont_know": round(sums["ask.dont_know"] / questions, 4),
            "offtopic.asked": sums["offtopic"],
            "offtopic.dont_know": round(sums["offtopic.dont_know"] / (sums["offtopic"] or 1), 4),
            "ask.p50_ms": round(statistics.median(timing["ask"]), 1),
            "search.p50_ms": round(statistics.median(timing["search"]), 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a LoCoMo JSON file (e.g. ../shared/data/locomo/locomo-dev.json)")
    parser.add_argument("--chars", type=int, default=SETTINGS["ask_chars"].default, help="the ask_chars setting")
    parser.add_argument("--offtopic-max", type=int, default=100, help="off-topic prompts asked of each conversation")
    parser.add_argument("--embed-cache", help="keep the vectors of embedded texts in this folder and reuse them")
    parser.add_argument("--embedder", default=DEFAULT_EMBEDDER, help="the semantic index's model (the setting)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    with contextlib.ExitStack() as stack:
        if args.embed_cache:
            stack.enter_context(EmbeddingCache(args.embed_cache, args.embedder))
        data_dir = stack.enter_context(tempfile.TemporaryDirectory(prefix="claude-mem-ask-"))
        report = run(args.data, data_dir, chars=args.chars, embedder=args.embedder, offtopic_max=args.offtopic_max,
                     progress=not args.json)
    if args.json:
        print(json.dumps(report, sort_keys=True))
        return 0
    print(f"{report['questions']} questions (categories 1-4), {report['answerable']} with an evidence fact;"
          f" answers within {report['chars_limit']} characters")
    print(f"{'':8} {'recall':>7} {'answerable':>11} {'chars':>7} {'refs':>6} {'p50 ms':>7}")
    print(f"{'ask':8} {report['ask.recall']:7.3f} {report['ask.recall_answerable']:11.3f} {report['ask.chars']:7.0f}"
          f" {report['ask.refs']:6.3f} {report['ask.p50_ms']:7.1f}")
    print(f"{'search':8} {report['search.recall']:7.3f} {report['search.recall_answerable']:11.3f} {'':7} {'':6}"
          f" {report['search.p50_ms']:7.1f}   (titles of the first hits, same characters)")
    print(f"\"I don't know\": {report['ask.dont_know']:.3f} of the questions, {report['offtopic.dont_know']:.3f} of"
          f" {report['offtopic.asked']} off-topic prompts")
    return 0


if __name__ == "__main__":
    sys.exit(main())
