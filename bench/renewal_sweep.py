"""Where to renew the observer's conversation (setting observer_context_tokens), for
bench/observer_bill.py --sweep.

Each transcript is observed once by our worker through the real CLI with renewal off; its turns
(the message each request added, and the model's reply) are then replayed as the conversations
the CLI would send with renewal at each size: the system prompt and the CLI's opening reminders
start every conversation, a recap of the session's titles (up to 40) opens each renewed one, and
the careless fake model writes an observation for every recap line as well (refused by the
store, paid for all the same). The prompt cache is modelled as in bench/cache_bill.py.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.cache_bill import CacheBill, tokens

SIZES = (8000, 12000, 16000, 20000, 30000, 40000, 50000, 60000, 80000, 100000, 10**9)
TITLE_CHARS = 75  # a recap line: "- " and a title
RECAP_HEADER = 131  # prompts/recap.txt
OFF = 10**9


def _blocks(content: Any) -> list[dict[str, Any]]:
    items = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    return [{k: v for k, v in b.items() if k != "cache_control"} for b in items if isinstance(b, dict)]


def turns_of(pairs: list[tuple[dict[str, Any], str]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[tuple[list, str, int]]]:
    """(system, the CLI's opening blocks, [(the blocks a turn added, the reply, observations in it)])."""
    bodies = [(b, r) for b, r in pairs if not b.get("tools")]
    system = bodies[0][0].get("system") or []
    first = _blocks(bodies[0][0]["messages"][0]["content"])
    opening = [b for b in first if "<system-reminder>" in b.get("text", "")]
    turns = []
    for i, (body, reply) in enumerate(bodies):
        added = _blocks(body["messages"][-1]["content"])
        if i == 0:
            added = [b for b in added if b not in opening]
        turns.append((added, reply, reply.count("<observation>")))
    return system, opening, turns


def replay(system: list[dict[str, Any]], opening: list[dict[str, Any]], turns: list[tuple[list, str, int]], size: int,
           echo: str) -> tuple[CacheBill, int]:
    """The bill of the turns sent as conversations renewed at `size` tokens; and the renewals."""
    bill = CacheBill()
    messages: list[dict[str, Any]] = []
    context = stored = renewals = 0
    for added, reply, observed in turns:
        recap = ""
        if messages and context >= size:
            renewals += 1
            lines = min(40, stored)
            recap = "r" * (RECAP_HEADER + lines * TITLE_CHARS)
            messages = []
            reply = reply + echo * lines
        content = [*(opening if not messages else []), *([{"type": "text", "text": recap}] if recap else []), *added]
        content = [dict(b) for b in content]
        content[-1]["cache_control"] = {"type": "ephemeral"}
        body = {"system": system, "messages": [*messages, {"role": "user", "content": content}]}
        before = bill.usage.copy()
        bill.add(body, reply)
        context = sum(bill.usage[k] - before[k] for k in bill.usage)
        content[-1].pop("cache_control")
        messages = [*messages, {"role": "user", "content": content}, {"role": "assistant", "content": [{"type": "text", "text": reply}]}]
        stored += observed
    return bill, renewals


def sweep(paths: list[Path], run_ours: Callable[..., dict[str, Any]], echo: str, *, as_json: bool = False) -> None:
    """Run ours on each transcript with renewal off, replay its turns renewed at each size;
    `echo` is the observation the careless model writes per recap line."""
    totals: dict[int, list[float]] = {s: [0.0, 0, 0] for s in SIZES}
    events = 0
    for path in paths:
        with tempfile.TemporaryDirectory(prefix="cm-sweep-", dir="/tmp") as tmp:
            ours = run_ours(path, Path(tmp), OFF)
        system, opening, turns = turns_of(ours["model"].pairs)
        events += ours["tool_events"]
        for size in SIZES:
            bill, renewals = replay(system, opening, turns, size, echo)
            totals[size][0] += bill.billed_tokens()
            totals[size][1] += renewals
            totals[size][2] = max(totals[size][2], bill.largest)
        if not as_json:
            print(f"{path.name}: {ours['tool_events']} tool events, {len(turns)} turns, "
                  f"{sum(tokens(json.dumps(t[0])) for t in turns)} tokens of new messages")
    rows = [{"context_tokens": s if s < OFF else None, "billed_per_event": round(t[0] / events, 1), "renewals": t[1],
             "largest_request": t[2]} for s, t in totals.items()]
    best = min(rows, key=lambda r: r["billed_per_event"])
    if as_json:
        print(json.dumps({"tool_events": events, "sizes": rows, "best": best}, indent=2))
        return
    print(f"\n{'renew at':>10} {'billed/ev':>10} {'renewals':>9} {'largest req':>12}   ({events} tool events)")
    for r in rows:
        mark = "  <- lowest" if r is best else ""
        print(f"{r['context_tokens'] or 'never':>10} {r['billed_per_event']:>10} {r['renewals']:>9} {r['largest_request']:>12}{mark}")
