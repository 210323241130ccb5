"""What a sleeping observer costs and saves (setting observer_idle_s).

1. Resume against warm: the Claude Code CLI bundled with claude-agent-sdk, driven by the
   worker's Observer against the fake Messages API (tests/fakes, 127.0.0.1), answering a
   batch-sized message. "warm" is one turn of a running CLI; "resume" is a new CLI started with
   --resume (cut at the last good turn, as the worker does) up to its first reply; "fresh" a new
   CLI without a conversation. Interleaved, --rounds times; medians and the CLI's RSS.
2. Idle time on real sessions: the gaps between the events the hooks queue (tool calls, Stops,
   prompts) in the real transcripts, and for each idle setting how often the next batch would
   find its CLI asleep (a resume) and how long a CLI would be resident, against today's worker
   lifetime (the CLI up until the worker's 300 s idle exit).

    .venv/bin/python bench/observer_idle.py [--rounds 7] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.data import transcripts  # noqa: E402
from claude_mem.replay import transcript_events  # noqa: E402
from claude_mem.worker.observer import Observer  # noqa: E402
from tests.fakes.messages_api import FakeMessagesAPI  # noqa: E402

IDLE_SETTINGS = (0, 10, 20, 30, 60, 120, 300)
WORKER_IDLE_S = 300
BATCH = "\n\n".join(f"[10:00:{i:02d}] Read src/module_{i}.py\n  => " + "def f():\n    return 1\n" * 20 for i in range(6))
MIB = 2**20


async def resume_costs(rounds: int, tmp: Path) -> dict:
    with FakeMessagesAPI(lambda request: "<observation><type>discovery</type><title>seen</title></observation>") as api:
        for name in ("home", "config"):
            (tmp / name).mkdir(exist_ok=True)
        short_tmp = tempfile.mkdtemp(prefix="cm-", dir="/tmp")  # the CLI puts a unix socket there
        env = {"HOME": str(tmp / "home"), "CLAUDE_CONFIG_DIR": str(tmp / "config"), "TMPDIR": short_tmp,
               "ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "sk-fake", "CLAUDE_CODE_OAUTH_TOKEN": ""}
        cwd = str(tmp / "observer")
        os.makedirs(cwd, exist_ok=True)

        def make(**kwargs: str | None) -> Observer:
            return Observer(model="claude-haiku-4-5", system_prompt="You observe.", cwd=cwd, env=env, turn_timeout_s=60, **kwargs)

        async def timed(observer: Observer) -> tuple[float, object]:
            started = time.perf_counter()
            await observer.start()
            reply = await observer.send(BATCH)
            assert reply.error is None, reply.detail
            return time.perf_counter() - started, reply

        def cpu(observer: Observer) -> float:
            times = psutil.Process(observer.pid).cpu_times()
            return times.user + times.system

        warm, resumed, fresh, rss, warm_cpu, resume_cpu = [], [], [], [], [], []
        observer = make()
        _, last = await timed(observer)
        for _ in range(rounds):
            before = cpu(observer)
            seconds, last = await timed(observer)  # already started: one turn of a running CLI
            warm.append(seconds)
            warm_cpu.append(cpu(observer) - before)
            rss.append(psutil.Process(observer.pid).memory_info().rss)
            await observer.close()
            observer = make(resume=last.session_id, resume_at=last.uuid)
            seconds, last = await timed(observer)
            resumed.append(seconds)
            resume_cpu.append(cpu(observer))  # its whole life so far: start, resume, one turn
            other = make()
            seconds, _ = await timed(other)
            fresh.append(seconds)
            await other.close()
        history = max(len(r.messages) for r in api.messages_requests())  # the longest conversation sent
        await observer.close()
    return {"rounds": rounds, "warm_s": round(statistics.median(warm), 2), "resume_s": round(statistics.median(resumed), 2),
            "fresh_s": round(statistics.median(fresh), 2), "cli_rss_mib": round(statistics.median(rss) / MIB),
            "warm_cpu_s": round(statistics.median(warm_cpu), 2), "resume_cpu_s": round(statistics.median(resume_cpu), 2),
            "messages_in_last_resumed_request": history}


def arrivals(path: Path) -> list[float]:
    """Epoch seconds at which the hooks would queue work for the worker."""
    times = []
    for event in transcript_events(path, session_id="bench"):
        if event.event in ("PostToolUse", "PostToolUseFailure", "Stop", "UserPromptSubmit") and event.timestamp:
            times.append(datetime.fromisoformat(event.timestamp.replace("Z", "+00:00")).timestamp())
    return sorted(times)


def idle_costs(paths: list[Path]) -> dict:
    gaps: list[float] = []
    span = 0.0
    sessions = 0
    for path in paths:
        times = arrivals(path)
        if len(times) < 2:
            continue
        sessions += 1
        span += times[-1] - times[0]
        gaps += [b - a for a, b in zip(times, times[1:], strict=False)]
    hours = span / 3600
    rows = []
    # Today: the CLI stays up until the worker exits, WORKER_IDLE_S after the last event.
    today = sum(g if g < WORKER_IDLE_S else WORKER_IDLE_S for g in gaps) + sessions * WORKER_IDLE_S
    for idle in IDLE_SETTINGS:
        resumes = sum(1 for g in gaps if g > idle)
        resident = sum(min(g, idle) for g in gaps) + sessions * idle
        rows.append({"observer_idle_s": idle, "resumes_per_hour": round(resumes / hours, 1),
                     "resumes_share_of_gaps": round(resumes / len(gaps), 3),
                     "cli_resident_share": round(resident / today, 3)})
    ordered = sorted(gaps)
    return {"sessions": sessions, "hours": round(hours, 1), "gaps": len(gaps),
            "gap_p50_s": round(ordered[len(ordered) // 2], 1), "gap_p90_s": round(ordered[int(len(ordered) * 0.9)], 1),
            "settings": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cm-idle-") as name:
        costs = asyncio.run(resume_costs(args.rounds, Path(name)))
    idle = idle_costs(transcripts())
    if args.json:
        print(json.dumps({"resume": costs, "idle": idle}, indent=2))
        return
    print(f"seconds to the first reply (median of {costs['rounds']}, real Claude CLI, fake Messages API on 127.0.0.1):")
    print(f"  warm CLI, one turn    {costs['warm_s']:>6.2f} s   (CLI CPU {costs['warm_cpu_s']:.2f} s)")
    print(f"  resumed CLI           {costs['resume_s']:>6.2f} s   (CLI CPU {costs['resume_cpu_s']:.2f} s;"
          f" its request carried {costs['messages_in_last_resumed_request']} messages of the conversation)")
    print(f"  fresh CLI             {costs['fresh_s']:>6.2f} s")
    print(f"  RSS of one running CLI: {costs['cli_rss_mib']} MiB")
    print(f"\nreal sessions: {idle['sessions']}, {idle['hours']} h, {idle['gaps']} gaps between queued events"
          f" (median {idle['gap_p50_s']} s, p90 {idle['gap_p90_s']} s)")
    print(f"  {'observer_idle_s':>15} {'resumes/hour':>13} {'gaps resumed':>13} {'CLI resident vs today':>22}")
    for row in idle["settings"]:
        print(f"  {row['observer_idle_s']:>15} {row['resumes_per_hour']:>13} {row['resumes_share_of_gaps']:>13.1%}"
              f" {row['cli_resident_share']:>22.1%}")


if __name__ == "__main__":
    main()
