"""`bench/locomo.py --push`: what the prompt hook injects, asked every LoCoMo question.

Each conversation's memory is built as the facts mode builds it (one data folder per
conversation, one observation per fact, indexed), its memory service is started and caught up,
and then every question (categories 1-4) is sent through the real `claude-mem new` command as a
UserPromptSubmit payload from a fresh session, from a folder named after the conversation (so
the hook's project is the conversation's). What the hook printed is scored:

  push.recall       share of a question's evidence facts whose text is in the injected context
                    (a question whose evidence turns have no fact scores 0, as in the facts mode)
  push.recall_answerable   the same over the questions whose evidence has a fact
  push.chars        mean characters injected per question (0 when nothing was)
  push.offtopic     share of the user prompts of the given Claude Code transcripts (developer
                    work, nothing to do with these conversations) that inject anything, each
                    asked of every conversation's memory
  push.p50_ms       the hook's wall time, beside floor.p50_ms: a Python process that parses the
                    payload and inserts one row into a WAL database, run interleaved with it

`--no-semantic` measures the keyword-only path (the hook's answer while the service is away).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.data import transcripts
from bench.hooks import FLOOR_SCRIPT, percentiles
from bench.locomo_memory import bench_index, clean_evidence, ingest  # the facts mode's own memory
from claude_mem.index.embedders import DEFAULT as DEFAULT_EMBEDDER
from claude_mem.replay import transcript_events
from claude_mem.service import client, control
from claude_mem.store.db import connect

CATEGORIES = (1, 2, 3, 4)


def offtopic_prompts(paths: list[Path]) -> list[str]:
    return [e.payload["prompt"] for path in paths for e in transcript_events(path) if e.event == "UserPromptSubmit"]


def hook_argv() -> list[str]:
    script = shutil.which("claude-mem", path=os.path.dirname(sys.executable))
    return [script, "hook", "new"] if script else [sys.executable, "-m", "claude_mem", "hook", "new"]


class Floor:
    """The floor hook of bench/hooks.py, timed interleaved with ours."""

    def __init__(self, work: Path, env: dict[str, str]) -> None:
        self.script = work / "floor.py"
        self.script.write_text(FLOOR_SCRIPT)
        self.db = work / "floor.db"
        conn = sqlite3.connect(self.db)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, tool_use_id TEXT, body TEXT)")
        conn.close()
        self.env = env
        self.samples: list[float] = []

    def run(self, payload: dict[str, Any]) -> None:
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, str(self.script), str(self.db)], input=json.dumps(payload).encode(),
                              capture_output=True, env=self.env)
        self.samples.append(time.perf_counter() - started)
        if proc.returncode != 0:
            raise SystemExit(f"the floor script failed: {proc.stderr.decode(errors='replace')}")


def ask(argv: list[str], payload: dict[str, Any], env: dict[str, str]) -> tuple[str, float]:
    """The additionalContext the hook printed ("" for none) and its wall time."""
    started = time.perf_counter()
    proc = subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True, env=env)
    seconds = time.perf_counter() - started
    if proc.returncode != 0 or proc.stderr.strip():
        raise SystemExit(f"the new hook failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace').strip()}")
    answer = json.loads(proc.stdout)
    return answer.get("hookSpecificOutput", {}).get("additionalContext", ""), seconds


class Asker:
    """Sends prompts through the hook, each from a fresh session, timed interleaved with the floor."""

    def __init__(self, project: str, cwd: Path, env: dict[str, str], argv: list[str], floor: Floor,
                 times: list[float]) -> None:
        self.project, self.cwd, self.env, self.argv, self.floor, self.times = project, cwd, env, argv, floor, times
        self.n = 0

    def __call__(self, prompt: str) -> str:
        self.n += 1
        payload = {"session_id": f"{self.project}-ask-{self.n}", "transcript_path": "/dev/null", "cwd": str(self.cwd),
                   "hook_event_name": "UserPromptSubmit", "prompt": prompt, "prompt_id": f"p{self.n}"}
        text = ""
        for kind in ("hook", "floor") if self.n % 2 else ("floor", "hook"):  # who goes first alternates
            if kind == "hook":
                text, seconds = ask(self.argv, payload, self.env)
                self.times.append(seconds)
            else:
                self.floor.run(payload)
        return text


def normalised(text: str) -> str:
    return " ".join(text.split())


def start_service(data_dir: str, env: dict[str, str], catch_up_s: float = 600) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-m", "claude_mem", "service"], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client.call(data_dir, "ping", timeout_s=120, wait=True, start=False)
    deadline = time.monotonic() + catch_up_s
    while client.call(data_dir, "status", timeout_s=30, start=False).get("index_lag") != 0:
        if time.monotonic() > deadline:
            raise SystemExit("the memory service did not catch up with the stored facts")
        time.sleep(0.2)
    return proc


def run(data_path: str, work_dir: str, *, offtopic: list[Path], semantic: bool, progress: bool,
        embedder: str = DEFAULT_EMBEDDER) -> dict[str, Any]:
    with open(data_path, encoding="utf-8") as fh:
        samples = json.load(fh)
    prompts = offtopic_prompts(offtopic)
    work = Path(work_dir)
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    base_env.pop("PYTHONDONTWRITEBYTECODE", None)
    base_env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")  # cached bytecode, as an installed claude-mem has
    floor = Floor(work, base_env)
    argv = hook_argv()
    times: list[float] = []
    recall = chars = 0.0
    questions = with_facts = pushed = 0
    off_pushed = off_asked = 0
    how: dict[str, int] = {}
    used: dict[str, int] = {}  # conversations per embedder
    for sample in samples:
        project = sample["sample_id"]
        data_dir = work / project / "data"
        cwd = work / project / "cwd" / project  # outside git, a folder's name is its project
        data_dir.mkdir(parents=True)
        cwd.mkdir(parents=True)
        conn = connect(str(data_dir / "claude-mem.db"))
        provenance, _ = ingest(conn, None, sample)
        index = bench_index(str(data_dir / "chroma"), embedder, conn)  # the one the service judges the store to need
        index.index_missing(conn)
        index.close()
        facts = {row[0]: normalised(row[1]) for row in conn.execute("SELECT id, title FROM observations")}
        conn.close()
        env = {**base_env, "CLAUDE_MEM_DATA_DIR": str(data_dir), "CLAUDE_MEM_WORKER_AUTOSTART": "0",
               "CLAUDE_MEM_SEMANTIC_INDEX": "1" if semantic else "0", "CLAUDE_MEM_EMBEDDER": embedder}
        service = start_service(str(data_dir), env) if semantic else None
        if service is not None:  # the embedder the service chose for this store
            chosen = client.call(str(data_dir), "status", timeout_s=30, start=False)["embedder"]["answering"]
            used[chosen] = used.get(chosen, 0) + 1
        try:
            send = Asker(project, cwd, env, argv, floor, times)
            send("warm up: what did we talk about?")  # the first hook fills the file cache: not counted
            times.pop()
            floor.samples.pop()
            for qa in sample["qa"]:
                if qa.get("category") not in CATEGORIES:
                    continue
                evidence = set(clean_evidence(qa.get("evidence", [])))
                if not evidence:
                    continue
                questions += 1
                text = normalised(send(qa["question"]))
                wanted = [obs_id for obs_id, dias in provenance.items() if evidence & set(dias)]
                found = sum(1 for obs_id in wanted if facts[obs_id] in text)
                if wanted:
                    with_facts += 1
                    recall += found / len(wanted)
                if text:
                    pushed += 1
                    chars += len(text)
            for prompt in prompts:
                off_asked += 1
                off_pushed += bool(send(prompt))
            conn = sqlite3.connect(data_dir / "claude-mem.db")
            for note, count in conn.execute("SELECT note, COUNT(*) FROM injections WHERE kind = 'prompt' GROUP BY note"):
                how[note] = how.get(note, 0) + count
            conn.close()
        finally:
            if service is not None:
                control.stop_service(str(data_dir))
                service.wait(30)
        if progress:
            print(f"{project}: {len(sample['qa'])} questions asked", file=sys.stderr)
    hook = percentiles(times)
    floor_stats = percentiles(floor.samples)
    return {
        "data": os.path.basename(data_path), "conversations": len(samples), "questions": questions,
        "questions_with_facts": with_facts, "semantic": semantic,
        "push.recall": round(recall / questions, 4), "push.recall_answerable": round(recall / max(with_facts, 1), 4),
        "push.chars": round(chars / questions, 1), "push.pushed_share": round(pushed / questions, 4),
        "push.offtopic": round(off_pushed / max(off_asked, 1), 4), "push.offtopic_prompts": off_asked,
        "push.offtopic_pushed": off_pushed, "push.by": how, "embedders": used,
        "push.p50_ms": round(hook["p50"] * 1000, 1), "push.p95_ms": round(hook["p95"] * 1000, 1),
        "floor.p50_ms": round(floor_stats["p50"] * 1000, 1), "push.ratio_p50": round(hook["p50"] / floor_stats["p50"], 2),
        "push.hook_runs": len(times),
    }


def report(r: dict[str, Any]) -> None:
    print(f"{r['questions']} questions over {r['conversations']} conversations ({r['questions_with_facts']} with an evidence fact),"
          f" {'hybrid through the memory service' if r['semantic'] else 'keywords only (--no-semantic)'}"
          + (f", embedder {r['embedders']}" if r.get("embedders") else ""))
    print(f"push.recall {r['push.recall']:.3f} (answerable {r['push.recall_answerable']:.3f})  push.chars {r['push.chars']:.0f}"
          f"  pushed for {r['push.pushed_share']:.0%} of questions  found by {r['push.by']}")
    print(f"push.offtopic {r['push.offtopic']:.3f} ({r['push.offtopic_pushed']} of {r['push.offtopic_prompts']} prompts)")
    print(f"hook p50 {r['push.p50_ms']:.1f} ms (p95 {r['push.p95_ms']:.1f}) vs floor p50 {r['floor.p50_ms']:.1f} ms:"
          f" {r['push.ratio_p50']:.2f}x ({r['push.hook_runs']} runs each, interleaved)")


def default_offtopic() -> list[Path]:
    return transcripts()
