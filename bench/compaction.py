"""Memory through a compaction (issue 34): replay a real transcript up to its first compaction,
run the PreCompact hook, let the session's worker write its checkpoint, then run
SessionStart(compact) and score what it gives back against the transcript itself:

  files named      share of the files the session modified (Write/Edit/MultiEdit/NotebookEdit
                   that succeeded) before the compaction that the context names (bar >= 80%)
  request words    share of the distinctive words of the last prompt before it (bar >= 50%)
  characters       of the whole context, the working set and the project's digest (bar <= 2,500
                   for a project with this one session: the digest leaves the compacted
                   session's own rows out, issue 50)

    python bench/compaction.py [TRANSCRIPT ...] [--hooks] [--synthesizer heuristic|none] [--json]

The events before the compaction are stored the way the hook commands store them
(hooks.store_in_process: same sanitising, same rows; `--hooks` sends each through a real hook
process instead, minutes for a long session); PreCompact and SessionStart always run as real
hook processes. The transcript the hooks are pointed at is cut where Claude Code stood when it
ran SessionStart: its compaction summary written (`--before-summary`: not yet), so the working
set leaves out the detail that summary already gives. Without a transcript argument: every
transcript under ../shared/data/transcripts with a compaction.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import transcripts  # noqa: E402
from claude_mem.replay import HookEvent, play_subprocess, read_jsonl, run_hook, transcript_events  # noqa: E402
from claude_mem.text.terms import STOPWORDS  # noqa: E402

EDIT_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
BARS = {"files_named": 0.8, "request_words": 0.5, "chars": 2500}
_WORD = re.compile(r"[a-z][a-z0-9_.-]{3,}")


def distinctive_words(text: str) -> set[str]:
    """The prompt's words that say what it is about: four letters or more, not the common ones."""
    found = {w.strip(".-") for w in _WORD.findall(text.lower())}
    return {w for w in found if len(w) >= 4 and w not in STOPWORDS}


def before_compaction(events: list[HookEvent]) -> tuple[list[HookEvent], HookEvent, HookEvent] | None:
    """The events before the first compaction, its PreCompact and its SessionStart(compact)."""
    for index, event in enumerate(events):
        if event.event == "PreCompact":
            return events[:index], event, events[index + 1]
    return None


def modified_before(events: list[HookEvent]) -> list[str]:
    """The files the session modified, as the transcript says (not as claude-mem stored them)."""
    files: dict[str, None] = {}
    for event in events:
        p = event.payload
        if p.get("hook_event_name") == "PostToolUse" and p.get("tool_name") in EDIT_TOOLS:
            tool_input = p.get("tool_input") or {}
            path = tool_input.get("file_path") or tool_input.get("notebook_path")
            if isinstance(path, str) and path:
                files[path] = None
    return list(files)


def score(text: str, files: list[str], cwd: str, prompt: str) -> dict[str, Any]:
    root = cwd.rstrip("/") + "/"
    named = [f for f in files if f in text or (f.startswith(root) and f[len(root):] in text)]
    words = distinctive_words(prompt)
    found = {w for w in words if w in text.lower()}
    return {"files": len(files), "files_named": len(named) / len(files) if files else 1.0,
            "missing_files": [f for f in files if f not in named], "request_words": len(found) / len(words) if words else 1.0,
            "words": len(words), "missing_words": sorted(words - found), "chars": len(text)}


def cut_transcript(path: Path, boundary_line: int, summary: bool, out: Path) -> None:
    """The transcript as it stood at SessionStart(compact): up to the boundary, and the summary line after it."""
    keep = boundary_line
    if summary:
        keep = next((ln["_line"] for ln in read_jsonl(path) if ln["_line"] > boundary_line and ln.get("isCompactSummary")),
                    boundary_line)
    with open(path, encoding="utf-8", errors="replace") as src, open(out, "w", encoding="utf-8") as dst:
        for number, line in enumerate(src, 1):
            if number > keep:
                break
            dst.write(line)


def run_one(path: Path, args: argparse.Namespace, work: Path) -> dict[str, Any] | None:
    events = transcript_events(path)
    split = before_compaction(events)
    if split is None:
        return None
    before, pre_compact, session_start = split
    data = work / path.stem
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update(CLAUDE_MEM_DATA_DIR=str(data), CLAUDE_MEM_WORKER_AUTOSTART="0", CLAUDE_MEM_SEMANTIC_INDEX="0")
    started = time.perf_counter()
    if args.hooks:
        play_subprocess(before, env=env)
    else:
        store_before(before, env)
    stored_s = time.perf_counter() - started
    transcript = work / f"{path.stem}.cut.jsonl"
    cut_transcript(path, int(pre_compact.source.rsplit(":", 1)[1]), not args.before_summary, transcript)
    pre = run_hook("summary", {**pre_compact.payload, "transcript_path": str(transcript)}, env=env)
    worker_s = 0.0
    if args.synthesizer != "none":
        started = time.perf_counter()
        worker_s = run_worker(env, pre_compact.payload["session_id"], args.synthesizer)
    start = run_hook("context", {**session_start.payload, "transcript_path": str(transcript)}, env=env)
    context = json.loads(start.stdout)["hookSpecificOutput"]["additionalContext"] if start.stdout.strip() else ""
    block = context.split("# claude-mem: what happened recently", 1)[0].rstrip("\n")
    prompts = [e.payload["prompt"] for e in before if e.event == "UserPromptSubmit"]
    result = score(context, modified_before(before), pre_compact.payload.get("cwd") or "", prompts[-1] if prompts else "")
    result.update(transcript=str(path), events_before=len(before), stored_s=stored_s, worker_s=worker_s,
                  precompact_ms=pre.seconds * 1000, context_ms=start.seconds * 1000, context_chars=len(context),
                  hook_errors=[r.stderr.strip() for r in (pre, start) if r.stderr.strip()], working_set=block)
    return result


def store_before(events: list[HookEvent], env: dict[str, str]) -> None:
    """Store the events as the hooks would, in this process (see the module docstring)."""
    os.environ.update(env)
    from claude_mem import settings
    from claude_mem.hooks import store_in_process
    from claude_mem.store.db import connect

    config = settings.load(strict=False)
    config.ensure_dirs()
    conn = connect(config.db_path)
    try:
        store_in_process(config, conn, [e.payload for e in events])
    finally:
        conn.close()


def run_worker(env: dict[str, str], session_id: str, synthesizer: str) -> float:
    """The session's worker, drained: it takes the events, then writes the checkpoint."""
    import subprocess

    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", session_id, "--drain",
                    "--synthesizer", synthesizer], env=env, check=True, capture_output=True, timeout=1800)
    return time.perf_counter() - started


def report(result: dict[str, Any]) -> None:
    print(f"{result['transcript']}: {result['events_before']} events before the compaction"
          f" (stored in {result['stored_s']:.1f} s; worker {result['worker_s']:.1f} s)")
    print(f"  files named      {result['files_named']:.0%} of {result['files']}"
          f"  ({'ok' if result['files_named'] >= BARS['files_named'] else 'BELOW bar 80%'})"
          + (f"  missing: {', '.join(result['missing_files'][:5])}" if result["missing_files"] else ""))
    print(f"  request words    {result['request_words']:.0%} of {result['words']}"
          f"  ({'ok' if result['request_words'] >= BARS['request_words'] else 'BELOW bar 50%'})"
          + (f"  missing: {', '.join(result['missing_words'][:8])}" if result["missing_words"] else ""))
    print(f"  characters       {result['chars']}  ({'ok' if result['chars'] <= BARS['chars'] else 'ABOVE bar 2500'});"
          f" the working set {len(result['working_set'])}")
    print(f"  hooks            PreCompact {result['precompact_ms']:.0f} ms, SessionStart(compact) {result['context_ms']:.0f} ms"
          + (f"; errors: {result['hook_errors']}" if result["hook_errors"] else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transcripts", nargs="*", type=Path)
    parser.add_argument("--hooks", action="store_true", help="every event through a real hook process")
    parser.add_argument("--synthesizer", choices=["heuristic", "none"], default="heuristic",
                        help="who writes the checkpoint (none: no worker runs, the working set is the events' alone)")
    parser.add_argument("--before-summary", action="store_true", help="Claude Code's summary not yet in the transcript")
    parser.add_argument("--show", action="store_true", help="print the working set too")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    results = []
    with tempfile.TemporaryDirectory(prefix="claude-mem-compaction-") as tmp:
        tmp = os.environ.get("COMPACTION_BENCH_DIR") or tmp
        for path in transcripts(args.transcripts):
            result = run_one(path, args, Path(tmp))
            if result is not None:
                results.append(result)
                if not args.json:
                    report(result)
                    if args.show:
                        print(result["working_set"])
    if args.json:
        print(json.dumps(results, indent=2))
    if not results:
        print("no transcript with a compaction", file=sys.stderr)
        return 1
    ok = all(r["files_named"] >= BARS["files_named"] and r["request_words"] >= BARS["request_words"]
             and r["chars"] <= BARS["chars"] for r in results)
    return 0 if ok else 2


if __name__ == "__main__":
    sys.exit(main())
