"""Memory that knows what is no longer true (issue 26): current, outdated, stable and old memories
served through the real front doors, and the rules' marks against the ground truth.

    python bench/updates.py --data ../shared/data/updates-dev.json [--json] [--no-semantic]
    python bench/updates.py --replay [TRANSCRIPT ...]

The file holds projects of model-written observations over months, `supersedes` (which newer
observation makes which older one no longer true: the complete ground truth) and prompts a
developer types later, of three kinds: `update` (the current memory must be served, the outdated
one not pushed as true), `stable` (a related memory that is still valid must not be suppressed)
and `history` (the old memory must still be found). No model anywhere: what is measured is what
the rules make of imported memory.

Every project is written as one `claude-mem export` file (a session per `session`, dated as the
file dates it) and brought in with `claude-mem import` (which runs the marking rules before it
returns and indexes the rows); the memory service is started and caught up; then each prompt is
asked through `claude-mem search --json --limit 10` (its project) and typed into the real `new`
hook as a UserPromptSubmit from a fresh session in a folder named after the project. Scored:

  update.current_above   the current memory ranks above every outdated one (an outdated one not
                         in the results counts as below; a current one missing fails)
  update.current_top10   the current memory is in the top 10
  update.outdated_pushed the hook pushed an outdated memory
  update.current_pushed  the hook pushed the current memory
  stable.pushed / stable.top10, history.old_top10
  push.chars             characters per push (prompts that pushed something)
  marks.precision / marks.recall   active marks against `supersedes` (a mark of a pair the
                         ground truth does not hold is a false one, whatever its relation)

`--replay` measures something else: each real transcript replayed twice as two sessions through a
heuristic worker; the observations left visible (not marked) after both, against after one.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.push_recall import hook_argv, start_service  # noqa: E402
from claude_mem.service import control  # noqa: E402

KINDS = ("update", "stable", "history")
_REF = re.compile(r"\bobs:(\d+)\b")


def epoch_ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def session_id(project: str, session: str) -> str:
    return f"{project}-{session}"


def export_lines(data: dict[str, Any]) -> list[str]:
    """The file's memories as one claude-mem export (JSON Lines)."""
    lines = [json.dumps({"kind": "header", "format": "claude-mem", "version": 1})]
    for p in data["projects"]:
        seen: set[str] = set()
        for m in sorted(p["memories"], key=lambda m: m["when"]):
            sid = session_id(p["project"], m["session"])
            if sid not in seen:
                seen.add(sid)
                lines.append(json.dumps({"kind": "session", "claude_session_id": sid, "project": p["project"],
                                         "started_at_epoch": epoch_ms(m["when"])}))
            fields = ("type", "title", "subtitle", "narrative", "facts", "concepts", "files_read", "files_modified")
            lines.append(json.dumps({"kind": "observation", "session_id": sid, **{k: m[k] for k in fields},
                                     "created_at_epoch": epoch_ms(m["when"])}))
    return lines


def key_ids(db: str, data: dict[str, Any]) -> dict[str, int]:
    """Each memory's key -> its observation id after the import."""
    conn = sqlite3.connect(db)
    try:
        ids = {}
        for p in data["projects"]:
            for m in p["memories"]:
                row = conn.execute("SELECT id FROM observations WHERE session_id = ? AND title = ?",
                                   (session_id(p["project"], m["session"]), m["title"])).fetchone()
                ids[m["key"]] = int(row[0])
        return ids
    finally:
        conn.close()


def score_marks(db: str, data: dict[str, Any], ids: dict[str, int]) -> dict[str, Any]:
    truth = {(ids[s["old"]], ids[s["new"]]) for p in data["projects"] for s in p["supersedes"]}
    conn = sqlite3.connect(db)
    try:
        marks = conn.execute("SELECT old_id, new_id, rule FROM marks WHERE undone_at_epoch IS NULL").fetchall()
    finally:
        conn.close()
    made = {(o, n) for o, n, _ in marks}
    right = len(made & truth)
    by_rule: dict[str, list[int]] = {}
    for o, n, rule in marks:
        by_rule.setdefault(rule, [0, 0])[(o, n) not in truth] += 1
    return {"marks.made": len(made), "marks.right": right, "marks.truth": len(truth),
            "marks.precision": round(right / len(made), 4) if made else None,
            "marks.recall": round(right / len(truth), 4) if truth else None,
            "marks.by_rule": {rule: {"right": r, "wrong": w} for rule, (r, w) in sorted(by_rule.items())}}


def search(env: dict[str, str], project: str, prompt: str) -> list[int]:
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "search", prompt, "--project", project, "--limit", "10", "--json"],
                          env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"search failed: {proc.stderr.strip()}")
    hits = json.loads(proc.stdout)["hits"] if proc.stdout.strip() else []
    return [int(h["id"]) for h in hits if h["kind"] == "observation"]


def push(env: dict[str, str], argv: list[str], cwd: Path, n: int, prompt: str) -> str:
    payload = {"session_id": f"updates-ask-{n}", "transcript_path": "/dev/null", "cwd": str(cwd),
               "hook_event_name": "UserPromptSubmit", "prompt": prompt, "prompt_id": f"q{n}"}
    proc = subprocess.run(argv, input=json.dumps(payload).encode(), capture_output=True, env=env)
    if proc.returncode != 0 or proc.stderr.strip():
        raise SystemExit(f"the new hook failed (exit {proc.returncode}): {proc.stderr.decode(errors='replace').strip()}")
    answer = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return answer.get("hookSpecificOutput", {}).get("additionalContext", "")


def ask_all(data: dict[str, Any], ids: dict[str, int], env: dict[str, str], work: Path) -> dict[str, Any]:
    argv = hook_argv()
    sums: dict[str, float] = {}
    counts = dict.fromkeys(KINDS, 0)
    chars: list[int] = []
    misses: list[str] = []
    n = 0
    for p in data["projects"]:
        cwd = work / "cwd" / p["project"]  # outside git, a folder's name is its project
        cwd.mkdir(parents=True, exist_ok=True)
        for q in p["questions"]:
            n += 1
            kind = q["kind"]
            counts[kind] += 1
            current = {ids[k] for k in q["current"]}
            stale = {ids[k] for k in q["stale"]}
            ranked = search(env, p["project"], q["prompt"])
            text = push(env, argv, cwd, n, q["prompt"])
            pushed = {int(r) for r in _REF.findall(text)}
            if text:
                chars.append(len(text))
            top = {i: r for r, i in reversed(list(enumerate(ranked)))}
            first_current = min((top[i] for i in current if i in top), default=None)
            results: dict[str, bool] = {}
            if kind == "update":
                results["update.current_above"] = first_current is not None and all(
                    i not in top or top[i] > first_current for i in stale)
                results["update.current_top10"] = first_current is not None
                results["update.outdated_pushed"] = bool(pushed & stale)
                results["update.current_pushed"] = bool(pushed & current)
            elif kind == "stable":
                results["stable.pushed"] = bool(pushed & current)
                results["stable.top10"] = first_current is not None
            else:
                results["history.old_top10"] = first_current is not None
            for name, ok in results.items():
                sums[name] = sums.get(name, 0) + ok
                good = not ok if name == "update.outdated_pushed" else ok
                if not good:
                    misses.append(f"{q['id']} {name}")
    report: dict[str, Any] = {f"questions.{k}": v for k, v in counts.items()}
    for name, total in sorted(sums.items()):
        report[name] = round(total / counts[name.split(".")[0]], 4)
    report["push.chars"] = round(sum(chars) / len(chars), 1) if chars else 0
    report["push.pushed"] = len(chars)
    report["misses"] = misses
    return report


def run(data_path: str, work: Path, *, semantic: bool) -> dict[str, Any]:
    with open(data_path, encoding="utf-8") as fh:
        data = json.load(fh)
    data_dir = work / "data"
    data_dir.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update({"CLAUDE_MEM_DATA_DIR": str(data_dir), "CLAUDE_MEM_WORKER_AUTOSTART": "0",
                "CLAUDE_MEM_SEMANTIC_INDEX": "1" if semantic else "0"})
    export = work / "memories.jsonl"
    export.write_text("\n".join(export_lines(data)) + "\n", encoding="utf-8")
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "claude_mem", "import", str(export), "--json"], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"import failed: {proc.stderr.strip()}")
    imported = json.loads(proc.stdout)
    report: dict[str, Any] = {"data": os.path.basename(data_path), "semantic": semantic,
                              "projects": len(data["projects"]), "observations": imported["added"]["observation"],
                              "import_s": round(time.perf_counter() - started, 2), "import.marked": imported.get("marked")}
    db = str(data_dir / "claude-mem.db")
    ids = key_ids(db, data)
    report.update(score_marks(db, data, ids))
    service = start_service(str(data_dir), env) if semantic else None
    try:
        report.update(ask_all(data, ids, env, work))
    finally:
        if service is not None:
            control.stop_service(str(data_dir))
            service.wait(30)
    return report


TARGETS = [("update.current_above", ">=", 0.90), ("update.outdated_pushed", "<=", 0.15), ("update.current_pushed", ">=", 0.90),
           ("stable.pushed", ">=", 0.95), ("stable.top10", ">=", 1.0), ("history.old_top10", ">=", 0.95),
           ("marks.precision", ">=", 0.90)]


def print_report(report: dict[str, Any]) -> None:
    print(f"{report['data']}: {report['projects']} projects, {report['observations']} observations imported in"
          f" {report['import_s']} s ({'hybrid' if report['semantic'] else 'keywords only'})")
    print(f"{'measure':<26} {'value':>7}  target")
    for name, op, bound in TARGETS:
        value = report.get(name)
        met = value is not None and (value >= bound if op == ">=" else value <= bound)
        print(f"{name:<26} {value if value is not None else '-':>7}  {op} {bound}  {'met' if met else 'NOT MET'}")
    for name in ("update.current_top10", "marks.recall", "push.chars"):
        print(f"{name:<26} {report.get(name, '-'):>7}")
    print(f"marks: {report['marks.made']} made, {report['marks.right']} right, {report['marks.truth']} in the ground truth;"
          f" by rule {json.dumps(report['marks.by_rule'])}")
    if report["misses"]:
        print("misses: " + ", ".join(report["misses"]))


def visible(db: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("SELECT count(*) FROM observations o WHERE NOT EXISTS (SELECT 1 FROM marks l"
                                " WHERE l.old_id = o.id AND l.undone_at_epoch IS NULL)").fetchone()[0])
    finally:
        conn.close()


def replay_twice(path: Path, work: Path) -> dict[str, Any]:
    """The transcript stored as a session and drained by a real heuristic worker, then stored again
    as a second session and drained: the observations still visible (not marked) after each."""
    from claude_mem import settings
    from claude_mem.hooks import store_in_process
    from claude_mem.replay import transcript_payloads
    from claude_mem.store.db import connect

    data_dir = work / path.stem[:8]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update({"CLAUDE_MEM_DATA_DIR": str(data_dir), "CLAUDE_MEM_WORKER_AUTOSTART": "0", "CLAUDE_MEM_SEMANTIC_INDEX": "0"})
    saved = dict(os.environ)
    os.environ.update(env)  # the data dir is read from the environment
    try:
        config = settings.load(strict=True)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    config.ensure_dirs()
    counts = []
    for session in ("first", "second"):
        conn = connect(config.db_path)
        store_in_process(config, conn, transcript_payloads(path, session_id=f"replay-{session}"))
        conn.close()
        proc = subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", f"replay-{session}", "--drain",
                               "--synthesizer", "heuristic"], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise SystemExit(f"the worker failed: {proc.stderr.strip()[-500:]}")
        counts.append(visible(config.db_path))
    conn = sqlite3.connect(config.db_path)
    total = conn.execute("SELECT count(*) FROM observations").fetchone()[0]
    conn.close()
    return {"transcript": path.name, "stored": total, "visible_one": counts[0], "visible_two": counts[1],
            "ratio": round(counts[1] / max(counts[0], 1), 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="a memory-updates JSON file (e.g. ../shared/data/updates-dev.json)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--no-semantic", action="store_true", help="keywords only: no memory service")
    parser.add_argument("--replay", nargs="*", type=Path, metavar="TRANSCRIPT",
                        help="instead: replay each transcript twice as two sessions (heuristic) and count what stays"
                             " visible (default: the shared real transcripts)")
    args = parser.parse_args(argv)
    if args.replay is not None:
        from bench.data import transcripts

        with tempfile.TemporaryDirectory(prefix="cm-rep-") as tmp:
            rows = [replay_twice(p, Path(tmp)) for p in transcripts(args.replay)]
        if args.json:
            print(json.dumps(rows))
        else:
            for r in rows:
                print(f"{r['transcript']:<44} stored {r['stored']:>4}  visible after one replay {r['visible_one']:>4},"
                      f" after two {r['visible_two']:>4}: {r['ratio']}x (target <= 1.1x)")
        return 0
    if not args.data:
        parser.error("--data FILE is needed (or --replay)")
    # Short: the memory service's socket lives in the data folder (AF_UNIX paths are short).
    with tempfile.TemporaryDirectory(prefix="cm-upd-") as tmp:
        report = run(args.data, Path(tmp), semantic=not args.no_semantic)
    if args.json:
        print(json.dumps(report, sort_keys=True))
    else:
        print_report(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
