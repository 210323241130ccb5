"""Model-side cost: characters sent to the observer model per tool event.

Replays real transcripts through the same sanitising and queueing code the hooks use, then
renders what the worker would send (batched messages, per-tool budgets, boring events folded,
one summary request per turn, the init prompt once) beside what the best-known system sends
(one message per event: its observation template with input and output as pretty JSON, each
field cut at 16,000 characters as 60% head + 30% tail; its finalize prompt per turn; its init
prompt once). Prints both and the ratio (target <= 0.5).

Subagents: the headline counts what the worker sends with the settings in force (fold_subagents,
on by default: a subagent's own calls left out, the Task call's result standing for them). For
the transcripts whose subagents' tool calls are in the queue (agent_id), both ways are printed,
per tool event of the session; with --titles, what the heuristic
synthesizer titles each subagent's calls (as the worker would batch them) beside what it titles
the Task call that folding keeps.

Each batch message also carries what memory already holds about its files and request (the
`obs:ID date title` lines the observer may name in `<supersedes>`, worker/recalled.py). So that
they are not free by being empty, memory first holds an earlier session of the same transcript
(its events turned into observations by the heuristic synthesizer): every file the session
touches has memories. `memory_chars` is their share of `ours_chars`; `--no-memory` leaves them out.

    python bench/model_cost.py [--json] [--titles] [--no-memory] [TRANSCRIPT ...]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import transcripts  # noqa: E402
from claude_mem import settings  # noqa: E402
from claude_mem.hooks import matches_skip_list, store_in_process  # noqa: E402
from claude_mem.replay import transcript_payloads  # noqa: E402
from claude_mem.store import queue_rows  # noqa: E402
from claude_mem.store.db import connect, transaction  # noqa: E402
from claude_mem.store.memories import insert_observation  # noqa: E402
from claude_mem.store.rows import QueuedEvent  # noqa: E402
from claude_mem.worker import heuristic  # noqa: E402
from claude_mem.worker.events import Event  # noqa: E402
from claude_mem.worker.loop import Worker  # noqa: E402
from claude_mem.worker.recalled import Recalled  # noqa: E402
from claude_mem.worker.render import fill, render_batch  # noqa: E402

# The best-known system's prompts (plan 002): the fixed text around each message.
BASELINE_OBSERVATION_TAIL = """
ANALYSIS TASK
-------------
1. Does this observation contain something worth remembering?
2. If YES: Output the observation in this EXACT XML format:

   ```xml
   <observation>
     <type>feature</type>
     <text>Your concise observation here</text>
   </observation>
   ```

   Requirements:
   - Use one of these types: decision, bugfix, feature, refactor, discovery
   - Keep text concise (one sentence preferred)
   - No markdown formatting inside <text>
   - No additional XML fields

3. If NO: Just acknowledge and wait for next observation

Remember: Quality over quantity. Only store meaningful insights."""
BASELINE_FINALIZE_CHARS = 2048  # its finalize prompt, measured from the plan
BASELINE_INIT_CHARS = 2096  # its init prompt


def baseline_cut(text: str, limit: int = 16000) -> str:
    if len(text) <= limit:
        return text
    return text[: int(limit * 0.6)] + "\n...[truncated]...\n" + text[-int(limit * 0.3):]


def baseline_message(payload: dict) -> str:
    output = payload.get("tool_response", payload.get("error"))
    return (f"TOOL OBSERVATION\n================\nTool: {payload.get('tool_name')}\nTime: 2026-01-01T00:00:00.000Z\n\n"
            f"Input:\n{baseline_cut(json.dumps(payload.get('tool_input'), indent=2, ensure_ascii=False))}\n\n"
            f"Output:\n{baseline_cut(json.dumps(output, indent=2, ensure_ascii=False))}\n" + BASELINE_OBSERVATION_TAIL)


def observer_chars(worker: Worker, rows: list[QueuedEvent], conn,
                   recalled: Recalled | None) -> tuple[int, int, int, list[list[QueuedEvent]]]:
    """(characters, messages, of them memory lines, batches) the worker would send for these queue
    rows: the real request text once per prompt, and what memory holds about each batch."""
    ours = len(fill("init", project="bench", date="2026-01-01"))
    memory_chars = messages = 0
    last_prompt = -1
    batches = []
    while rows:
        batch = worker._take_batch(rows)
        rows = rows[len(batch):]
        batches.append(batch)
        events = [Event.from_row(r) for r in batch]
        if events[0].kind == "finalize":
            ours += len(fill("summary", prompt_number=events[0].prompt_number, request="x" * 200, last_message="y" * 300))
        else:
            header = request = ""
            if events[0].prompt_number != last_prompt:
                found = conn.execute("SELECT prompt_text FROM user_prompts WHERE session_id = 'bench' AND prompt_number = ?",
                                     (events[0].prompt_number,)).fetchone()
                request = (found[0] if found else "")[:1500]
                header = f"User's request #{events[0].prompt_number}: {request}\n\n"
                last_prompt = events[0].prompt_number
            lines = recalled.block(events, request) if recalled is not None else ""
            memory_chars += len(lines)
            ours += len(header + fill("observation", memory=lines, events=render_batch(events)))
        messages += 1
    return ours, messages, memory_chars, batches


def subagent_titles(batches: list[list[QueuedEvent]], rows: list[QueuedEvent]) -> list[dict]:
    """Per subagent: the heuristic titles of its own calls, batched as the worker batches them,
    and of the Task call(s) whose result folding keeps."""
    agents: dict[str, dict] = {}
    for batch in batches:
        mine: dict[str, list[Event]] = {}
        for r in batch:
            if r.kind == "tool" and r.agent_id:
                mine.setdefault(r.agent_id, []).append(Event.from_row(r))
        for agent, events in mine.items():
            entry = agents.setdefault(agent, {"agent_id": agent, "calls": 0, "unfolded": [], "folded": []})
            entry["calls"] += len(events)
            entry["unfolded"] += [o.title for o in heuristic.observe(events)]
    for r in rows:
        response = r.tool_response
        agent = response.get("agentId") if isinstance(response, dict) else None
        if r.kind == "tool" and r.tool_name in ("Task", "Agent") and agent in agents:
            agents[agent]["folded"] += [o.title for o in heuristic.observe([Event.from_row(r)])]
    return list(agents.values())


def remember_earlier(conn, config: settings.Config, path: Path) -> None:
    """The transcript as an earlier session of the project, observed by the heuristic synthesizer."""
    store_in_process(config, conn, transcript_payloads(path, session_id="earlier"))
    rows = [r for r in queue_rows.list_rows(conn, session_id="earlier") if r.kind == "tool"]
    worker = Worker(config, "earlier", synthesizer="heuristic")
    project = conn.execute("SELECT project FROM sdk_sessions WHERE claude_session_id = 'earlier'").fetchone()[0]
    with transaction(conn):
        while rows:
            batch = worker._take_batch(rows)
            rows = rows[len(batch):]
            for obs in heuristic.observe([Event.from_row(r) for r in batch]):
                insert_observation(conn, "earlier", project, obs, prompt_number=batch[0].prompt_number, source="heuristic")
        # The same project: the bench session's events are found as being about these files.
        conn.execute("UPDATE sdk_sessions SET project = ? WHERE claude_session_id = 'bench'", (project,))


def measure(path: Path, config: settings.Config, memory: bool = True) -> dict:
    payloads = transcript_payloads(path, session_id="bench")
    tool_payloads = [p for p in payloads if p["hook_event_name"] in ("PostToolUse", "PostToolUseFailure")
                     and not matches_skip_list(p["tool_name"], config.skip_tools)]
    stops = sum(1 for p in payloads if p["hook_event_name"] == "Stop")
    baseline = BASELINE_INIT_CHARS + sum(len(baseline_message(p)) for p in tool_payloads) + stops * BASELINE_FINALIZE_CHARS

    conn = connect(config.db_path)
    store_in_process(config, conn, payloads)
    if memory:
        remember_earlier(conn, config, path)
    recalled = Recalled(conn, "bench")
    rows = queue_rows.list_rows(conn, session_id="bench")
    worker = Worker(config, "bench", synthesizer="model")
    each, each_messages, each_memory, batches = observer_chars(worker, rows, conn, recalled if memory else None)
    subagent_rows = [r for r in rows if r.kind == "tool" and r.agent_id]
    folded, folded_messages, folded_memory, _ = observer_chars(worker, [r for r in rows if r not in subagent_rows], conn,
                                                               recalled if memory else None)
    conn.close()
    # The headline is what the worker sends with the settings in force.
    ours, messages, memory_chars = (folded, folded_messages, folded_memory) if config.fold_subagents else (each, each_messages, each_memory)
    n = len(tool_payloads)
    result = {"transcript": path.name, "tool_events": n, "turns": stops, "ours_chars": ours, "ours_messages": messages,
              "memory_chars": memory_chars,
              "baseline_chars": baseline, "baseline_messages": n + stops + 1,
              "ours_per_event": round(ours / max(n, 1)), "baseline_per_event": round(baseline / max(n, 1)),
              "ratio": round(ours / max(baseline, 1), 3)}
    if subagent_rows:
        result["subagents"] = {"subagent_events": len(subagent_rows), "each_chars": each, "each_messages": each_messages,
                               "each_per_event": round(each / max(n, 1)), "folded_chars": folded,
                               "folded_messages": folded_messages, "folded_per_event": round(folded / max(n, 1)),
                               "saved": round(1 - folded / max(each, 1), 3), "titles": subagent_titles(batches, rows)}
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("transcripts", nargs="*", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--titles", action="store_true", help="print the heuristic titles folding loses and keeps")
    parser.add_argument("--no-memory", action="store_true", help="an empty memory: no lines of what it holds in the messages")
    args = parser.parse_args()
    paths = transcripts(args.transcripts)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(paths):
            os.environ["CLAUDE_MEM_DATA_DIR"] = os.path.join(tmp, str(i))
            config = settings.load(strict=True)
            config.ensure_dirs()
            results.append(measure(path, config, memory=not args.no_memory))
    total_ours = sum(r["ours_chars"] for r in results)
    total_base = sum(r["baseline_chars"] for r in results)
    events = sum(r["tool_events"] for r in results)
    summary = {"transcripts": results, "tool_events": events, "ours_chars": total_ours, "baseline_chars": total_base,
               "memory_chars": sum(r["memory_chars"] for r in results),
               "ours_per_event": round(total_ours / max(events, 1)), "baseline_per_event": round(total_base / max(events, 1)),
               "ratio": round(total_ours / max(total_base, 1), 3)}
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(f"{'transcript':<44} {'events':>6} {'ours/ev':>8} {'base/ev':>8} {'msgs':>9} {'ratio':>6}")
    for r in results:
        print(f"{r['transcript']:<44} {r['tool_events']:>6} {r['ours_per_event']:>8} {r['baseline_per_event']:>8} "
              f"{r['ours_messages']:>4}/{r['baseline_messages']:<4} {r['ratio']:>6}")
    print(f"{'ALL':<44} {events:>6} {summary['ours_per_event']:>8} {summary['baseline_per_event']:>8} {'':>9} {summary['ratio']:>6}"
          "   (target <= 0.5)")
    print(f"memory lines: {summary['memory_chars']} of {total_ours} characters ({summary['memory_chars'] / max(total_ours, 1):.1%})")
    with_subagents = [r for r in results if "subagents" in r]
    if not with_subagents:
        return
    print(f"\nsubagents folded (fold_subagents), characters sent per tool event of the session (~4 per token):\n"
          f"{'transcript':<44} {'events':>6} {'of them subagent':>16} {'each/ev':>8} {'folded/ev':>9} {'msgs':>9} {'saved':>6}")
    for r in with_subagents:
        sub = r["subagents"]
        print(f"{r['transcript']:<44} {r['tool_events']:>6} {sub['subagent_events']:>16} {sub['each_per_event']:>8} "
              f"{sub['folded_per_event']:>9} {sub['each_messages']:>4}/{sub['folded_messages']:<4} {sub['saved']:>6.1%}")
        if args.titles:
            for agent in sub["titles"]:
                print(f"  subagent {agent['agent_id']} ({agent['calls']} calls), heuristic titles observed one by one:")
                print("".join(f"    - {t}\n" for t in agent["unfolded"]), end="")
                print("  folded, only its Task call:")
                print("".join(f"    - {t}\n" for t in agent["folded"]), end="")


if __name__ == "__main__":
    main()
