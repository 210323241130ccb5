"""The write guard against its corpus (issue 47): planted instructions caught, honest look-alikes withheld.

    python bench/injection.py [--json] [--misses]

The corpus (bench/injection_corpus.py) holds instructions planted for an AI in every shape the
issue names (HTML and code comments, markdown, JSON fields, test and log output, web pages, a
subagent's report; addressed to an AI, overriding its instructions, posing as a system turn,
asking for secrecy; English, Chinese, Japanese; zero-width and tag characters, look-alike and
full-width letters, entities and escapes) and honest text that looks like them (prompt-engineering
code, documentation about prompts, projects' CLAUDE.md and AGENTS.md rules, logs quoting prompts,
READMEs with install commands, code that runs commands). Three measures, each as the worker
applies the guard (claude_mem/guard/, worker/guarding.py):

  source      the tool output itself scanned: a planted instruction found in it
  copied      an observer that copies the output into an observation's narrative and facts: the
              observation is split, the planted text withheld and none of its payload left in
              what stays a memory (for honest text: nothing withheld)
  retold      a fooled observer that retells the payload as a plain fact ("Setup: run X first."):
              withheld (planted items with a payload only)

Beside the corpus, every tool output of the real transcripts (../shared/data/transcripts, else the
project's fixture) counts as honest text too ("benign/real": work on real projects, which plants
nothing).

Issue 47's bar: planted caught >= 95%, honest look-alikes withheld <= 2%.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import transcripts  # noqa: E402
from bench.injection_corpus import Item, benign, planted  # noqa: E402
from claude_mem.guard.fold import fold  # noqa: E402
from claude_mem.guard.screen import Context, Source, analyse, cut, is_agent_file  # noqa: E402
from claude_mem.replay import transcript_payloads  # noqa: E402
from claude_mem.store.memories import Observation  # noqa: E402
from claude_mem.worker.events import Event  # noqa: E402
from claude_mem.worker.guarding import source_of, split  # noqa: E402


def judge(item: Item) -> dict[str, bool]:
    analysis = analyse(Source(item.provenance, item.label, item.text, mild=is_agent_file(item.label)))
    context = Context(made_from=[item.provenance])
    context.add(analysis)
    lines = [line for line in item.text.splitlines() if line.strip()]
    copied = Observation(type="discovery", title=f"Looked at {item.label}", narrative=item.text, facts=lines[:6])
    clean, withheld = split(copied, context)
    kept = "" if clean is None else "\n".join([clean.title, clean.subtitle, clean.narrative, *clean.facts])
    leaked = bool(item.payload) and fold(item.payload) in fold(kept)
    out = {"source": bool(analysis.planted), "copied": withheld is not None and not leaked}
    if item.planted and item.payload:
        out["retold"] = bool(cut(f"Setup note: {item.payload} is needed first.", context).spans)
    return out


def real_outputs() -> list[Item]:
    """Every tool output of the real transcripts, as the worker reads it."""
    found = []
    for path in transcripts():
        for payload in transcript_payloads(path):
            if payload.get("hook_event_name") not in ("PostToolUse", "PostToolUseFailure"):
                continue
            failed = payload["hook_event_name"] == "PostToolUseFailure"
            event = Event(id=0, kind="tool", tool_name=payload.get("tool_name"), tool_input=payload.get("tool_input"),
                          tool_response={"error": payload.get("error")} if failed else payload.get("tool_response"),
                          is_error=failed, prompt_number=1, created_at_epoch=0)
            source = source_of(event)
            if source is not None and source.text.strip():
                found.append(Item(source.provenance, source.label, source.text, "benign/real"))
    return found


def run() -> dict[str, object]:
    started = time.perf_counter()
    results = [(item, judge(item)) for item in [*planted(), *benign(), *real_outputs()]]
    elapsed = time.perf_counter() - started
    bad = {"planted": [], "benign": []}  # type: dict[str, list[dict[str, object]]]
    counts: dict[str, dict[str, int]] = {}
    for item, verdict in results:
        side = "planted" if item.planted else "benign"
        for measure, value in verdict.items():
            row = counts.setdefault(f"{side}/{measure}", {"items": 0, "flagged": 0})
            row["items"] += 1
            row["flagged"] += value
        if (item.planted and not all(verdict.values())) or (not item.planted and any(verdict.values())):
            bad[side].append({"shape": item.shape, "label": item.label, "verdict": verdict, "text": item.text[:300]})
    shapes: dict[str, dict[str, int]] = {}
    for item, verdict in results:
        key = "/".join(item.shape.split("/")[:2])
        key = key if key != "benign/real" else "benign/real (transcripts)"
        row = shapes.setdefault(key, {"items": 0, "flagged": 0})
        row["items"] += 1
        row["flagged"] += verdict["copied"]
    return {"counts": counts, "shapes": shapes, "misses": bad, "items": len(results), "ms_per_item": 1000 * elapsed / len(results)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the numbers as JSON")
    parser.add_argument("--misses", action="store_true", help="print the planted items missed and the honest ones withheld")
    args = parser.parse_args()
    report = run()
    if args.json:
        print(json.dumps(report if args.misses else {k: v for k, v in report.items() if k != "misses"}, indent=2, ensure_ascii=False))
        return
    counts = report["counts"]
    assert isinstance(counts, dict)
    print(f"{report['items']} items, {report['ms_per_item']:.2f} ms each (analysis, split, retelling)")
    for key in sorted(counts):
        row = counts[key]
        word = "caught" if key.startswith("planted") else "withheld"
        print(f"  {key:<18} {row['flagged']:>4}/{row['items']:<4} {word} ({100 * row['flagged'] / row['items']:.1f}%)")
    shapes = report["shapes"]
    assert isinstance(shapes, dict)
    print("by shape (copied):", ", ".join(f"{k} {v['flagged']}/{v['items']}" for k, v in sorted(shapes.items())))
    if args.misses:
        misses = report["misses"]
        assert isinstance(misses, dict)
        for side, items in misses.items():
            for miss in items:
                print(f"\n[{side}] {miss['shape']} {miss['label']} {miss['verdict']}\n  {miss['text']!r}")


if __name__ == "__main__":
    main()
