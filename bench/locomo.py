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
import hashlib
import json
import math
import os
import re
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from claude_mem.marks.apply import mark_stored
from claude_mem.recall.embedders import DEFAULT as DEFAULT_EMBEDDER
from claude_mem.recall.embedders import NAMES, choose, embedder_named
from claude_mem.recall.index import Index
from claude_mem.recall.search import search
from claude_mem.store.db import connect, transaction
from claude_mem.store.memories import Observation, insert_observation
from claude_mem.store.reads import KINDS
from claude_mem.store.records import ensure_session, record_prompt

MODES = ("fts", "vector", "hybrid")
BENCH_MODES = ("facts", "turns")
TURN_MS = 10_000  # one dialogue turn to the next: a session stays within its day
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


def store_fact(conn: Any, session_id: str, project: str, fact: Any, dias: list[str], *, prompt_number: int, at: int,
               provenance: dict[int, list[str]], new_ids: list[int]) -> None:
    """One fact as an observation (type "discovery", the fact as its title), its dia_ids in the
    side table; the same fact twice in one session is one observation of both turns."""
    obs = Observation(type="discovery", title=" ".join(str(fact).split()))
    obs_id = insert_observation(conn, session_id, project, obs, prompt_number=prompt_number, source="import",
                                created_at_epoch=at)
    if obs_id is None:
        obs_id = conn.execute("SELECT id FROM observations WHERE session_id = ? AND content_hash = ?",
                              (session_id, obs.content_hash())).fetchone()[0]
    else:
        new_ids.append(obs_id)
    provenance.setdefault(obs_id, [])
    provenance[obs_id].extend(d for d in dias if d not in provenance[obs_id])


def bench_index(path: str, embedder: str, conn: Any) -> Index:
    """The index of the store at `conn` (its rows stored): `auto` judged by what they are, as
    the memory service judges a data folder (embedders.choose; nothing recorded)."""
    if embedder == "auto":
        judged = argparse.Namespace(embedder="auto", chroma_url="", data_dir=os.path.dirname(path))
        embedder = choose(judged, conn, record=False).name
    return Index(path=path, embedder=embedder_named(embedder))


def ingest(conn: Any, index: Index | None, sample: dict[str, Any]) -> tuple[dict[int, list[str]], int]:
    """Store one conversation and index it (`index` None: store only); returns obs id ->
    dia_ids, and the number of facts."""
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
                    store_fact(conn, session_id, project, fact, dias, prompt_number=number, at=start_ms + offset * 1000,
                               provenance=provenance, new_ids=ids)
    with transaction(conn):  # the marking rules, as the worker and an import run them
        mark_stored(conn, ids)
    if index is not None:
        index.index_observations(conn, ids)
    return provenance, facts_seen


def ingest_turns(conn: Any, index: Index | None, sample: dict[str, Any]) -> tuple[dict[int, list[str]], dict[int, list[str]], int]:
    """Store one conversation as turns and index it (`index` None: store only): every dialogue turn a prompt of its session,
    every fact an observation of the turn it came from. Returns obs id -> dia_ids, prompt id ->
    [dia_id] (the side tables hits are mapped back through), and the number of facts."""
    project = sample["sample_id"]
    conversation = sample["conversation"]
    provenance: dict[int, list[str]] = {}
    said: dict[int, list[str]] = {}
    facts_seen = 0
    obs_ids: list[int] = []
    numbers = sorted(int(m.group(1)) for key in conversation if (m := re.fullmatch(r"session_(\d+)", key)))
    for number in numbers:
        session_id = f"{project}-session-{number}"
        start_ms = session_epoch_ms(conversation[f"session_{number}_date_time"])
        turn_of: dict[str, tuple[int, int]] = {}  # dia_id -> (prompt number, time)
        with transaction(conn):
            ensure_session(conn, session_id, project=project, cwd=None, transcript_path=None)
            for i, turn in enumerate(conversation[f"session_{number}"]):
                at = start_ms + i * TURN_MS
                prompt_number = record_prompt(conn, session_id, f"{turn['speaker']}: {turn['text']}", None,
                                              created_at_epoch=at)
                prompt_id = conn.execute("SELECT id FROM user_prompts WHERE session_id = ? AND prompt_number = ?",
                                         (session_id, prompt_number)).fetchone()[0]
                dia = clean_evidence(turn["dia_id"])
                said[prompt_id] = dia
                for d in dia:
                    turn_of[d] = (prompt_number, at)
            offset = 0
            for facts in sample["observation"].get(f"session_{number}_observation", {}).values():
                for fact, dia in facts:
                    facts_seen += 1
                    dias = clean_evidence(dia)
                    offset += 1
                    # A fact drawn from several turns is filed under the first; its provenance keeps all.
                    prompt_number, at = next((turn_of[d] for d in dias if d in turn_of), (0, start_ms))
                    store_fact(conn, session_id, project, fact, dias, prompt_number=prompt_number, at=at + offset,
                               provenance=provenance, new_ids=obs_ids)
    with transaction(conn):
        mark_stored(conn, obs_ids)
    if index is not None:
        index.index_prompts(conn, list(said))
        index.index_observations(conn, obs_ids)
    return provenance, said, facts_seen


class EmbeddingCache:
    """Vectors of texts embedded before, in an SQLite file, keyed by the model file's sha256 and
    the text: the same vectors the model gives, without running it again."""

    def __init__(self, directory: str, embedder: str = DEFAULT_EMBEDDER) -> None:
        from claude_mem.recall import embed, multilingual

        os.makedirs(directory, exist_ok=True)
        # The function each embedder embeds documents with (queries are embedded afresh).
        self.embed, self.name = (multilingual, "embed_passages") if embedder == "multilingual" else (embed, "embed_texts")
        self.original = getattr(self.embed, self.name)
        # Search embeds its query in a thread of its own (recall/semantic.py): one connection, locked.
        self.conn = sqlite3.connect(os.path.join(directory, "embeddings.sqlite"), check_same_thread=False)
        self.lock = threading.Lock()
        self.conn.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vector BLOB NOT NULL)")

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.embed.MODEL_SHA256}\x1f{text}".encode()).hexdigest()

    def embed_texts(self, texts: list[str], *, threads: int | None = None) -> Any:
        with self.lock:
            return self._embed_texts(texts, threads=threads)

    def _embed_texts(self, texts: list[str], *, threads: int | None = None) -> Any:
        import numpy as np

        keys = [self._key(t) for t in texts]
        found: dict[str, Any] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            found.update((k, np.frombuffer(v, dtype=np.float32)) for k, v in self.conn.execute(
                f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(chunk))})", chunk))
        todo = [i for i, k in enumerate(keys) if k not in found]
        if todo:
            fresh = self.original([texts[i] for i in todo])
            with self.conn:
                self.conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                                      [(keys[i], np.asarray(v, dtype=np.float32).tobytes()) for i, v in zip(todo, fresh, strict=True)])
            found.update((keys[i], v) for i, v in zip(todo, fresh, strict=True))
        out = np.empty((len(texts), self.embed.DIMENSIONS), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out

    def __enter__(self) -> EmbeddingCache:
        setattr(self.embed, self.name, self.embed_texts)
        return self

    def __exit__(self, *exc: object) -> None:
        setattr(self.embed, self.name, self.original)
        self.conn.close()


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
