"""Recall for developers who write Chinese or Japanese: recall@5, MRR and what the prompt hook pushes.

    python bench/multilingual.py --data ../shared/data/multilingual-dev.json [--json]

The file (format "claude-mem multilingual-recall v1") holds projects, each with observations
and user prompts from past sessions and questions naming the stored items that answer them.
Everything is done as a user would: the file becomes one export (one session per session of a
project, prompts numbered in time order, each observation filed under the prompt before it),
brought in with `claude-mem import` into one data folder, indexed by the memory service; then
every question is asked with `claude-mem search --json --project P --limit 10` and through the
real `claude-mem new` hook (UserPromptSubmit, a fresh session, from a folder named after the
project, the service warm).

  recall@5   share of a question's relevant items among the first 5 hits (a prompt is shown by
             itself or by an observation of its turn, which search lists in its place)
  MRR        1 / rank of the first relevant item among the first 10 hits (0 when none)
  pushed     share of the questions with a relevant observation that the hook pushes one of
             (the hook pushes observations and summaries, never prompts)
  offtopic   share of questions that push anything when asked in another project of the file
             (every question once, in the next project's folder: nothing there answers it)

By language (the question's) and by kind: `mixed` is a Chinese or Japanese question carrying
ASCII words (identifiers, commands, product names), `cross` one whose relevant items are not
all in its language, `same` the rest. The data set is read where it lies, never copied here.

`--copies N` measures search cost instead, on a bigger store written in Chinese and Japanese:
the file's projects N times over (each copy a project of its own; 758 copies hold 100,056
observations), indexed with the embedder the setting picks (in this process, each distinct
text embedded once: the same vectors, in minutes rather than hours), then the memory service
started and every question asked 3 times over its socket (hybrid, half of them filtered to the
question's project): p50/p95 in ms, and the service's RSS after.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `python bench/multilingual.py`: the bench modules and this checkout's claude_mem

from bench.push_recall import hook_argv, start_service  # noqa: E402
from claude_mem.index.embedders import NAMES  # noqa: E402
from claude_mem.service import client, control  # noqa: E402

ASCII_WORD = re.compile(r"[A-Za-z]{2,}")
PUSHED_REF = re.compile(r"^- (obs|sum):(\d+) ", re.MULTILINE)
KIND_OF = {"obs": "observation", "sum": "summary"}


def epoch_ms(when: str) -> int:
    return int(datetime.fromisoformat(when.replace("Z", "+00:00")).timestamp() * 1000)


def export_lines(projects: list[dict[str, Any]]) -> tuple[list[str], dict[str, tuple[str, str, Any]]]:
    """The export file's lines, and each item's key -> (kind, session id, what identifies its
    row: the prompt number or the observation's title)."""
    lines = [json.dumps({"kind": "header", "format": "claude-mem", "version": 1})]
    where: dict[str, tuple[str, str, Any]] = {}
    for p in projects:
        sessions: dict[str, list[tuple[int, str, dict[str, Any]]]] = defaultdict(list)
        for kind, items in (("prompt", p.get("prompts", [])), ("observation", p["memories"])):
            for item in items:
                sessions[item["session"]].append((epoch_ms(item["when"]), kind, item))
        for name, items in sessions.items():
            sid = f"{p['project']}-{name}"
            items.sort(key=lambda x: (x[0], x[1] != "prompt"))
            lines.append(json.dumps({"kind": "session", "claude_session_id": sid, "project": p["project"],
                                     "started_at_epoch": items[0][0], "status": "completed"}))
            number = 0
            for at, kind, item in items:
                if kind == "prompt":
                    number += 1
                    row = {"kind": "prompt", "session_id": sid, "prompt_number": number, "prompt_text": item["text"],
                           "created_at_epoch": at}
                    where[item["key"]] = ("prompt", sid, number)
                else:
                    row = {"kind": "observation", "session_id": sid, "project": p["project"], "type": item["type"],
                           "title": item["title"], "subtitle": item.get("subtitle", ""),
                           "narrative": item.get("narrative", ""), "facts": item.get("facts", []),
                           "concepts": item.get("concepts", []), "files_read": item.get("files_read", []),
                           "files_modified": item.get("files_modified", []), "prompt_number": number,
                           "source": "import", "created_at_epoch": at}
                    where[item["key"]] = ("observation", sid, item["title"])
                lines.append(json.dumps(row, ensure_ascii=False))
    return lines, where


def refs_of(db: Path, where: dict[str, tuple[str, str, Any]]) -> dict[str, set[tuple[str, int]]]:
    """Each item's key -> the hits that show it: its own row, and for a prompt the observations
    of its turn too (search lists those in a prompt's place: recall/turns.py)."""
    conn = sqlite3.connect(db)
    found: dict[str, set[tuple[str, int]]] = {}
    for key, (kind, sid, ident) in where.items():
        if kind == "prompt":
            row = conn.execute("SELECT id FROM user_prompts WHERE session_id = ? AND prompt_number = ?", (sid, ident)).fetchone()
            turn = conn.execute("SELECT id FROM observations WHERE session_id = ? AND prompt_number = ?", (sid, ident))
            found[key] = {("prompt", int(row[0]))} | {("observation", int(r[0])) for r in turn}
        else:
            row = conn.execute("SELECT id FROM observations WHERE session_id = ? AND title = ?", (sid, ident)).fetchone()
            found[key] = {("observation", int(row[0]))}
    conn.close()
    return found


def question_kind(question: dict[str, Any], langs: dict[str, str]) -> str:
    if question["lang"] != "en" and ASCII_WORD.search(question["prompt"]):
        return "mixed"
    return "cross" if any(langs[key] != question["lang"] for key in question["relevant"]) else "same"


def cli(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*hook_argv()[:-1], *argv], capture_output=True, text=True, env=env)


def searched(question: str, project: str, env: dict[str, str]) -> list[tuple[str, int]]:
    proc = cli(["search", "--json", "--project", project, "--limit", "10", question], env)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"claude-mem search failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return [(h["kind"], int(h["id"])) for h in json.loads(proc.stdout)["hits"]]


def pushed(prompt: str, cwd: Path, env: dict[str, str], n: int) -> set[tuple[str, int]]:
    payload = {"session_id": f"ask-{n}", "transcript_path": "/dev/null", "cwd": str(cwd),
               "hook_event_name": "UserPromptSubmit", "prompt": prompt, "prompt_id": f"p{n}"}
    proc = subprocess.run(hook_argv(), input=json.dumps(payload), capture_output=True, text=True, env=env)
    if proc.returncode != 0 or proc.stderr.strip():
        raise SystemExit(f"the new hook failed (exit {proc.returncode}): {proc.stderr.strip()}")
    text = json.loads(proc.stdout).get("hookSpecificOutput", {}).get("additionalContext", "") if proc.stdout.strip() else ""
    return {(KIND_OF[k], int(i)) for k, i in PUSHED_REF.findall(text)}


def run(data_path: str, work_dir: str, *, progress: bool, embedder: str | None = None) -> dict[str, Any]:
    with open(data_path, encoding="utf-8") as fh:
        projects = json.load(fh)["projects"]
    work = Path(work_dir)
    data_dir = work / "data"
    data_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update({"CLAUDE_MEM_DATA_DIR": str(data_dir), "CLAUDE_MEM_WORKER_AUTOSTART": "0", "CLAUDE_MEM_SEMANTIC_INDEX": "1"})
    if embedder:
        env["CLAUDE_MEM_EMBEDDER"] = embedder
    lines, where = export_lines(projects)
    export = work / "export.jsonl"
    export.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = cli(["import", "--no-index", str(export)], env)
    if proc.returncode != 0:
        raise SystemExit(f"claude-mem import failed: {proc.stderr.strip()}")
    refs = refs_of(data_dir / "claude-mem.db", where)
    service = start_service(str(data_dir), env)
    chosen = client.call(str(data_dir), "status", timeout_s=30, start=False)["embedder"]  # what the service chose, and why
    rows: list[dict[str, Any]] = []
    n = 0
    try:
        # Every search first: the hook records each prompt it is given, and a question stored as a
        # prompt would then be found by the questions after it.
        found = {q["id"]: searched(q["prompt"], p["project"], env) for p in projects for q in p["questions"]}
        for i, p in enumerate(projects):
            langs = {m["key"]: m["lang"] for m in [*p["memories"], *p.get("prompts", [])]}
            cwd = work / "cwd" / p["project"]  # outside git, a folder's name is its project
            elsewhere = work / "cwd" / projects[(i + 1) % len(projects)]["project"]
            for folder in (cwd, elsewhere):
                folder.mkdir(parents=True, exist_ok=True)
            for q in p["questions"]:
                shown = [refs[key] for key in q["relevant"]]
                hits = found[q["id"]]
                ranks = [r for r, h in enumerate(hits, 1) if any(h in s for s in shown)]
                n += 2
                got = pushed(q["prompt"], cwd, env, n)
                stray = pushed(q["prompt"], elsewhere, env, n + 1) if len(projects) > 1 else set()
                pushable = {h for s in shown for h in s if h[0] != "prompt"}
                rows.append({"id": q["id"], "lang": q["lang"], "kind": question_kind(q, langs),
                             "recall5": sum(bool(s & set(hits[:5])) for s in shown) / len(shown),
                             "mrr": 1 / ranks[0] if ranks else 0.0,
                             "pushed": bool(got & pushable) if pushable else None, "offtopic": bool(stray)})
            if progress:
                print(f"{p['project']}: {len(p['questions'])} questions asked", file=sys.stderr)
    finally:
        control.stop_service(str(data_dir))
        service.wait(30)
    return {**summarise(rows, os.path.basename(data_path)), "embedder": chosen}


def latency(data_path: str, work_dir: str, *, copies: int, embedder: str | None, keep: str | None = None) -> dict[str, Any]:
    with open(data_path, encoding="utf-8") as fh:
        projects = json.load(fh)["projects"]
    projects = [{**p, "project": f"{p['project']}-{k}"} for k in range(copies) for p in projects]
    data_dir = Path(keep) if keep else Path(work_dir) / "data"
    built = (data_dir / "claude-mem.db").exists()
    data_dir.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update({"CLAUDE_MEM_DATA_DIR": str(data_dir), "CLAUDE_MEM_WORKER_AUTOSTART": "0", "CLAUDE_MEM_SEMANTIC_INDEX": "1"})
    if embedder:
        env["CLAUDE_MEM_EMBEDDER"] = embedder
    export = Path(work_dir) / "export.jsonl"
    export.write_text("\n".join(export_lines(projects)[0]) + "\n", encoding="utf-8")
    proc = cli(["import", "--no-index", str(export)], env) if not built else None
    if proc is not None and proc.returncode != 0:
        raise SystemExit(f"claude-mem import failed: {proc.stderr.strip()}")
    started = time.monotonic()
    embedded = index_repeats(env)
    service = start_service(str(data_dir), env, catch_up_s=4 * 3600)
    index_s = time.monotonic() - started
    times: list[float] = []
    try:
        asked = [(p["project"], q["prompt"]) for p in projects[:len(projects) // copies] for q in p["questions"]]
        client.call(str(data_dir), "search", {"query": "warm up", "limit": 10}, timeout_s=60)
        for _ in range(3):
            for n, (project, question) in enumerate(asked):
                args: dict[str, Any] = {"query": question, "limit": 10, **({"project": project} if n % 2 else {})}
                t0 = time.perf_counter()
                answer = client.call(str(data_dir), "search", args, timeout_s=60)
                times.append((time.perf_counter() - t0) * 1000)
                if answer["mode"] != "hybrid":
                    raise SystemExit(f"the service answered in {answer['mode']} mode: {answer['note']}")
        status = client.call(str(data_dir), "status", timeout_s=30)
        rss = control.state(str(data_dir)).rss_bytes
    finally:
        control.stop_service(str(data_dir))
        service.wait(30)
    conn = sqlite3.connect(data_dir / "claude-mem.db")
    rows = {t: conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("observations", "user_prompts")}
    conn.close()
    times.sort()
    return {"data": os.path.basename(data_path), "copies": copies, **rows, "embedder": status["embedder"],
            "index_s": round(index_s, 1), "texts_embedded": embedded, "searches": len(times),
            "p50_ms": round(statistics.median(times), 1), "p95_ms": round(times[max(0, math.ceil(0.95 * len(times)) - 1)], 1),
            "service_rss_mib": round((rss or 0) / 2**20)}


def index_repeats(env: dict[str, str]) -> int:
    """Index the copies in this process before the service starts, each distinct text embedded
    once: the copies repeat the file's texts, so the vectors are those the service would make
    (same model, same collection), in minutes instead of the hours 100k rows take. Returns how
    many texts were embedded."""
    from claude_mem import settings
    from claude_mem.index.embedders import Embedder, choose, embedder_named
    from claude_mem.index.semantic_index import Index
    from claude_mem.store.db import connect

    config = settings.load(environ=env)
    conn = connect(config.db_path)
    model = embedder_named(choose(config, conn).name)
    known: dict[str, Any] = {}

    def passages(texts: list[str]) -> Any:
        new = sorted(set(texts) - known.keys())
        if new:
            known.update(zip(new, model.passages(new), strict=True))
        import numpy as np

        return np.stack([known[t] for t in texts])

    index = Index(config, embedder=Embedder(model.name, model.collection, passages, model.query, model.function))
    try:
        index.index_missing(conn)
    finally:
        index.close()
        conn.close()
    return len(known)


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 3) if values else 0.0


def _group(rows: list[dict[str, Any]]) -> dict[str, Any]:
    asked = [r for r in rows if r["pushed"] is not None]
    return {"questions": len(rows), "recall@5": _mean([r["recall5"] for r in rows]), "mrr": _mean([r["mrr"] for r in rows]),
            "pushed": _mean([float(r["pushed"]) for r in asked]), "offtopic": _mean([float(r["offtopic"]) for r in rows])}


def summarise(rows: list[dict[str, Any]], data: str) -> dict[str, Any]:
    out: dict[str, Any] = {"data": data, "all": _group(rows)}
    for field, values in (("lang", ("zh", "ja", "en")), ("kind", ("same", "cross", "mixed"))):
        for value in values:
            out[value] = _group([r for r in rows if r[field] == value])
    out["missed"] = [r["id"] for r in rows if r["recall5"] < 1]
    return out


def report(r: dict[str, Any]) -> None:
    print(f"{r['data']}: {r['all']['questions']} questions; embedder {r['embedder']['answering']} ({r['embedder']['reason']})")
    print(f"{'':8} {'n':>4} {'recall@5':>9} {'MRR':>6} {'pushed':>7} {'offtopic':>9}")
    for name in ("all", "zh", "ja", "en", "same", "cross", "mixed"):
        g = r[name]
        print(f"{name:8} {g['questions']:>4} {g['recall@5']:>9.3f} {g['mrr']:>6.3f} {g['pushed']:>7.0%} {g['offtopic']:>9.0%}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a multilingual-recall JSON file (../shared/data/multilingual-dev.json)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--embedder", choices=NAMES, help="the semantic index's model (default: the setting's default)")
    parser.add_argument("--copies", type=int, default=0, help="measure search latency on the file's projects N times over")
    parser.add_argument("--keep", metavar="DIR", help="with --copies: build that store in DIR and keep it, or reuse it if there")
    args = parser.parse_args(argv)
    # Short: the memory service's socket lives in the data folder (AF_UNIX paths are short).
    with tempfile.TemporaryDirectory(prefix="cm-ml-") as tmp:
        if args.copies:
            result = latency(args.data, tmp, copies=args.copies, embedder=args.embedder, keep=args.keep)
            print(json.dumps(result, ensure_ascii=False, sort_keys=True))
            return 0
        result = run(args.data, tmp, progress=not args.json, embedder=args.embedder)
    if args.json:
        print(json.dumps(result, ensure_ascii=False, sort_keys=True))
    else:
        report(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
