"""How much the heuristic synthesizer's observation titles say (issue 18).

    python bench/heuristic_titles.py [--all] [--json] [TRANSCRIPT ...]

Each transcript (default: the largest real one in ../shared/data/transcripts, else the test
fixture; --all: every one) is stored into a fresh data dir the way the hooks store it, then
drained by a real `claude-mem worker --drain --synthesizer heuristic` process. Printed: the
observations, the share whose title has a generic shape ("Ran 3 command(s)", "2 tool error(s)
seen": names nothing, found by no keyword) and the titles that name nothing at all: no command,
file, test, error or commit of the session (decisions -- a question answered, a plan approved --
must quote what was decided instead). Issue 18's bar: generic <= 10%, nameless 0.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import transcripts  # noqa: E402
from claude_mem import settings  # noqa: E402
from claude_mem.hooks import store_in_process  # noqa: E402
from claude_mem.replay import transcript_payloads  # noqa: E402
from claude_mem.store.db import connect  # noqa: E402

SESSION = "bench-heuristic"
# The shapes issue 18 counted: a count and a noun, nothing else.
GENERIC = re.compile(r"^(Ran \d+ command\(s\)(, \d+ failed)?|\d+ tool error\(s\) seen|Modified \d+ files?)$")
# Named without looking at the events: a test, an exception type, a commit hash.
NAMED = re.compile(r"\btest_\w+|\w+Test\b|\b\w*(?:Error|Exception)\b|\bCommitted [0-9a-f]{7}\b")
_SEGMENT = re.compile(r"&&|\|\||;|\||\(|\)|\$\(")
_SETUP = ("cd", "source", ".", "export", "sudo", "env", "time", "nice")


def is_generic(title: str) -> bool:
    return bool(GENERIC.match(title.strip()))


def subjects(tool_inputs: list[object]) -> set[str]:
    """What a title may name, read off the session's raw tool inputs (not through the code under
    measure): file and path names, search patterns, URLs, and the programs and path arguments of
    every command."""
    found: set[str] = set()
    for i in tool_inputs:
        if not isinstance(i, dict):
            continue
        for key in ("file_path", "notebook_path", "path", "url", "pattern", "query", "subagent_type"):
            value = i.get(key)
            if isinstance(value, str) and value.strip():
                found.update({value.strip(), os.path.basename(value.rstrip("/"))})
        command = i.get("command")
        if not isinstance(command, str):
            continue
        for part in _SEGMENT.split(command.strip().split("\n", 1)[0]):
            words = [w.strip("\"'") for w in part.split() if not re.match(r"^[A-Za-z_]\w*=|^-", w)]
            if words and words[0] not in _SETUP:
                found.update(os.path.basename(w.rstrip("/")) for w in words)
    return {s for s in found if len(s) >= 2}


def decision_ok(row: dict) -> bool:
    """A question asked or a plan approved names neither command nor file: it must quote what
    was decided instead."""
    return row["type"] == "decision" and row["title"].startswith(("Asked: ", "Plan approved: ", "Plan rejected by the user: "))


def names_something(title: str, names: set[str]) -> bool:
    """The title holds a test, error or commit, or one of the session's subjects as a whole word."""
    if NAMED.search(title):
        return True
    return any(re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", title) for name in names)


def fill(transcript: Path, data_dir: Path) -> str:
    """Store the transcript's events the way the hooks do; returns the database path."""
    config = settings.load(strict=True, environ={settings.DATA_DIR_ENV: str(data_dir)})  # every other setting at its default
    config.ensure_dirs()
    conn = connect(config.db_path)
    try:
        store_in_process(config, conn, transcript_payloads(transcript, session_id=SESSION))
    finally:
        conn.close()
    return config.db_path


def start_worker(data_dir: Path, batch_chars: int) -> subprocess.Popen[str]:
    """A real worker process with the heuristic synthesizer (no index: titles are what is measured)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update(CLAUDE_MEM_DATA_DIR=str(data_dir), CLAUDE_MEM_WORKER_AUTOSTART="0", CLAUDE_MEM_SEMANTIC_INDEX="0",
               CLAUDE_MEM_BATCH_CHARS=str(batch_chars), PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "claude_mem", "worker", "--session", SESSION, "--drain", "--synthesizer",
                             "heuristic"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def measure(transcript: Path, tmp: Path, sizes: list[int]) -> list[dict]:
    """Store the transcript once, then drain a copy of that queue per batch size (at the same time)."""
    db_name = os.path.relpath(fill(transcript, tmp / "filled"), tmp / "filled")
    workers = []
    for batch_chars in sizes:
        shutil.copytree(tmp / "filled", tmp / f"batch-{batch_chars}")
        workers.append(start_worker(tmp / f"batch-{batch_chars}", batch_chars))
    for worker in workers:
        _, stderr = worker.communicate(timeout=600)
        if worker.returncode != 0:
            raise RuntimeError(f"worker failed: {stderr[-2000:]}")
    return [_titles(transcript, str(tmp / f"batch-{batch_chars}" / db_name), batch_chars) for batch_chars in sizes]


def _titles(transcript: Path, db_path: str, batch_chars: int) -> dict:
    db = sqlite3.connect(db_path)
    db.row_factory = sqlite3.Row
    try:
        events = db.execute("SELECT COUNT(*) FROM observation_queue WHERE session_id = ?", (SESSION,)).fetchone()[0]
        pending = db.execute("SELECT COUNT(*) FROM observation_queue WHERE session_id = ? AND status != 'done'",
                             (SESSION,)).fetchone()[0]
        rows = [dict(r) for r in db.execute("SELECT type, title, subtitle, facts FROM observations WHERE session_id = ? ORDER BY id",
                                            (SESSION,))]
        inputs = [json.loads(r[0]) if r[0] else None
                  for r in db.execute("SELECT tool_input FROM observation_queue WHERE session_id = ?", (SESSION,))]
    finally:
        db.close()
    names = subjects(inputs)
    titles = [r["title"] for r in rows]
    generic = [t for t in titles if is_generic(t)]
    nameless = [r["title"] for r in rows if not (names_something(r["title"], names) or decision_ok(r))]
    return {"transcript": transcript.name, "batch_chars": batch_chars, "events": events, "not_done": pending,
            "observations": len(titles), "generic": len(generic), "generic_share": len(generic) / max(len(titles), 1),
            "nameless": nameless, "titles": titles, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("transcripts", nargs="*", type=Path)
    parser.add_argument("--all", action="store_true", help="every shared transcript, not only the largest")
    parser.add_argument("--batch-chars", type=int, nargs="+", default=[12000, 500],
                        help="worker batch sizes to try: 12000 (the default) drains a full queue in big batches; 500 is"
                             " about one event per batch, as a live worker keeping up with the hooks sees them")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    paths = transcripts(args.transcripts)
    if not args.transcripts and not args.all:
        paths = [max(paths, key=lambda p: p.stat().st_size)]
    with tempfile.TemporaryDirectory(prefix="cm-bench-heuristic-") as tmp_name:
        results = [r for p in paths for r in measure(p, Path(tmp_name) / p.stem, args.batch_chars)]
    if args.json:
        print(json.dumps([{k: v for k, v in r.items() if k != "rows"} for r in results], indent=2))
        return
    for r in results:
        print(f"== {r['transcript']} (batch_chars={r['batch_chars']}): {r['events']} events -> {r['observations']} observations")
        for title in r["titles"]:
            mark = "G" if is_generic(title) else ("?" if title in r["nameless"] else " ")
            print(f"  {mark} {title}")
        print(f"generic titles: {r['generic']}/{r['observations']} = {r['generic_share']:.0%} (bar: <= 10%); "
              f"naming nothing: {len(r['nameless'])} (bar: 0)")


if __name__ == "__main__":
    main()
