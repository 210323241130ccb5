"""The observer's bill per tool event, both systems through the same real Claude Code CLI (the
one bundled in claude-agent-sdk) against the same fake model on 127.0.0.1, on a held-out real
transcript; billed-equivalent tokens with the prompt cache modelled from the requests'
`cache_control` breakpoints (bench/cache_bill.py: Haiku 4.5's prices and 4,096-token minimum).

Ours: the transcript stored as the hooks store it, then `claude-mem worker --drain`. The peer
(the npm claude-mem, `--peer DIR --bun PATH`: its unpacked package and a bun binary, fetched as
tests/fixtures/peer/make_peer_db.py fetches them): its own worker and hook commands. The fake
model answers both alike: one observation of the same size per tool event it is shown, a
summary when asked for one and, like a careless model, one observation per title a recap says
is already recorded (`echoes` counts what the store kept of those).

`--sweep` chooses the renewal point: it runs ours once with renewal off on the transcripts
given (default: the real ones except the held-out one), then replays the recorded turns as
conversations renewed at each size, a recap of the session's titles opening each new one, and
prints the billed tokens per event of each size.

    python bench/observer_bill.py [--peer DIR --bun PATH] [--context-tokens N] [TRANSCRIPT]
    python bench/observer_bill.py --sweep [TRANSCRIPT ...]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cache_bill import CacheBill  # noqa: E402
from bench.data import SHARED, transcripts  # noqa: E402
from bench.peer_observer import run_peer  # noqa: E402
from claude_mem.replay import transcript_payloads  # noqa: E402
from tests.fakes.messages_api import ApiRequest, FakeMessagesAPI  # noqa: E402

HELD_OUT = SHARED / "claude-code-log" / "37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl"
EVENT_LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] (.+)$", re.M)
PEER_EVENT = re.compile(r"<what_happened>(.*?)</what_happened>.*?<parameters>(.{0,60})", re.S)
RECAP_MARK = "Already recorded, do not repeat:"
NARRATIVE = ("The session's tool call showed how this part of the project behaves; the observer keeps the file, the "
             "command and the result so that a later session can find it again without redoing the work.")


def observation(what: str, seen: int = 0) -> str:
    """An observation of one event (`seen`: which, so two calls of one command are two facts)."""
    what = what.replace("&", "&amp;").replace("<", "&lt;")[:70]
    return (f"<observation><type>discovery</type><title>{what}</title><subtitle>seen while replaying</subtitle>"
            f"<facts><fact>{what} was run and its result read (event {seen})</fact><fact>nothing failed</fact></facts>"
            f"<narrative>{NARRATIVE}</narrative><concepts><concept>replay</concept><concept>bench</concept></concepts>"
            "</observation>")


SUMMARY = ("<summary><request>the user's request</request><investigated>the files the turn read</investigated>"
           f"<learned>{NARRATIVE}</learned><completed>the turn's work</completed><next_steps>none</next_steps>"
           "<notes>-</notes></summary>")


def last_user_text(request: ApiRequest) -> str:
    for message in reversed(request.messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")
    return ""


class Model:
    """The fake model: the same answer for the same event whichever system asks; every request
    and its reply kept, in order."""

    def __init__(self) -> None:
        self.pairs: list[tuple[dict[str, Any], str]] = []
        self.new_event_observations = 0
        self.seen = 0  # events shown so far
        self._lock = threading.Lock()

    def __call__(self, request: ApiRequest) -> str:
        text = last_user_text(request)
        if "<summary>" in text and ("root tag is <summary>" in text or "<request>" in text):
            reply, fresh = SUMMARY, 0
        elif not EVENT_LINE.search(text) and not PEER_EVENT.search(text):
            reply, fresh = "<nothing/>", 0  # the peer's opening of a prompt: no tool call in it
        else:
            events = EVENT_LINE.findall(text) or [" ".join(m) for m in PEER_EVENT.findall(text)]
            recap = text.split(RECAP_MARK, 1)[1].split("\n\n")[0] if RECAP_MARK in text else ""
            echoed = [line[2:] for line in recap.splitlines() if line.startswith("- ")]
            with self._lock:
                first, self.seen = self.seen, self.seen + len(events)
            reply = "\n".join([*(observation(e, first + i) for i, e in enumerate(events)), *map(observation, echoed)])
            fresh = len(events)
        with self._lock:
            self.pairs.append((request.body, reply))
            self.new_event_observations += fresh
        return reply

    def bill(self) -> CacheBill:
        bill = CacheBill()
        for body, reply in self.pairs:
            bill.add(body, reply)
        return bill


def cli_env(api_url: str, home: Path) -> dict[str, str]:
    for d in ("home", "config", "tmp"):
        (home / d).mkdir(parents=True, exist_ok=True)
    return {"ANTHROPIC_BASE_URL": api_url, "ANTHROPIC_API_KEY": "sk-bench-not-a-key", "HOME": str(home / "home"),
            "CLAUDE_CONFIG_DIR": str(home / "config"), "TMPDIR": str(home / "tmp"),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def tool_payloads(path: Path, cwd: Path) -> list[dict[str, Any]]:
    """The transcript's hook payloads, run from a folder that exists here."""
    payloads = transcript_payloads(path, session_id="bench")
    for p in payloads:
        p["cwd"] = str(cwd)
    return payloads


def run_ours(path: Path, work: Path, context_tokens: int | None) -> dict[str, Any]:
    from claude_mem import settings
    from claude_mem.hooks import store_in_process
    from claude_mem.store.db import connect

    data = work / "ours"
    project = work / "project"
    project.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": str(data), "CLAUDE_MEM_SYNTHESIZER": "model",
           "CLAUDE_MEM_SEMANTIC_INDEX": "0", "CLAUDE_MEM_WORKER_AUTOSTART": "0"}
    if context_tokens:
        env["CLAUDE_MEM_OBSERVER_CONTEXT_TOKENS"] = str(context_tokens)
    env.pop("CLAUDE_MEM_CLI_PATH", None)
    os.environ["CLAUDE_MEM_DATA_DIR"] = str(data)
    config = settings.load(strict=True)
    config.ensure_dirs()
    conn = connect(config.db_path)
    store_in_process(config, conn, tool_payloads(path, project))
    events = conn.execute("SELECT COUNT(*) FROM observation_queue WHERE session_id = 'bench' AND kind = 'tool'").fetchone()[0]
    model = Model()
    with FakeMessagesAPI(model) as api:
        proc = subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", "bench", "--drain"],
                              env={**env, **cli_env(api.url, work / "ours-cli")}, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"our worker failed: {proc.stderr[-2000:]}")
    stored = conn.execute("SELECT COUNT(*) FROM observations WHERE session_id = 'bench'").fetchone()[0]
    echoes = conn.execute("SELECT COALESCE(SUM(echoes_refused), 0) FROM worker_runs").fetchone()[0]
    conn.close()
    return {"model": model, "tool_events": int(events), "stored": int(stored), "refused": int(echoes)}


def describe(name: str, bill: CacheBill, events: int) -> dict[str, Any]:
    u = bill.usage
    return {"system": name, "tool_events": events, "requests": bill.requests, "largest_request": bill.largest,
            **{k: round(v / events, 1) for k, v in u.items()},
            "billed_per_event": round(bill.billed_tokens() / events, 1),
            "usd_per_1000_events": round(bill.dollars() / events * 1000, 3)}


def print_rows(rows: list[dict[str, Any]]) -> None:
    print(f"{'system':<10} {'events':>6} {'requests':>8} {'input':>8} {'c.read':>8} {'c.write':>8} {'output':>7}"
          f" {'billed/ev':>9} {'$/1k ev':>8}   (tokens per tool event)")
    for r in rows:
        print(f"{r['system']:<10} {r['tool_events']:>6} {r['requests']:>8} {r['input']:>8} {r['cache_read']:>8}"
              f" {r['cache_write']:>8} {r['output']:>7} {r['billed_per_event']:>9} {r['usd_per_1000_events']:>8}")


def compare(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cm-bill-", dir="/tmp") as tmp:
        work = Path(tmp)
        ours = run_ours(path, work, args.context_tokens)
        model = ours["model"]
        rows = [describe("ours", model.bill(), ours["tool_events"])]
        result: dict[str, Any] = {"transcript": path.name, "rows": rows, "stored": ours["stored"],
                                  "refused_echoes": ours["refused"], "new_event_observations": model.new_event_observations,
                                  "thinking": sorted({json.dumps(b.get("thinking")) for b, _ in model.pairs}),
                                  "max_tokens": sorted({b.get("max_tokens") for b, _ in model.pairs if b.get("max_tokens")})}
        if args.peer:
            peer_model = Model()
            with FakeMessagesAPI(peer_model) as api:
                run_peer(args.peer, args.bun, tool_payloads(path, work / "project"), work / "peer", api.url)
            rows.append(describe("npm peer", peer_model.bill(), ours["tool_events"]))
            result["ratio"] = round(rows[0]["billed_per_event"] / rows[1]["billed_per_event"], 3)
        shutil.rmtree(work / "ours-cli", ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("transcripts", nargs="*", type=Path)
    parser.add_argument("--peer", type=Path, help="the npm claude-mem's unpacked package (its `package` folder)")
    parser.add_argument("--bun", type=Path, help="a bun binary to run the peer with")
    parser.add_argument("--context-tokens", type=int, help="our observer_context_tokens (default: the setting's)")
    parser.add_argument("--sweep", action="store_true", help="choose the renewal point (bench/renewal_sweep.py)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.sweep:
        from bench.renewal_sweep import sweep

        held = HELD_OUT.resolve() if HELD_OUT.exists() else None
        paths = args.transcripts or [p for p in transcripts() if p.resolve() != held]
        sweep(paths, run_ours, "\n" + observation("x" * 60), as_json=args.json)
        return
    path = (args.transcripts or [HELD_OUT if HELD_OUT.exists() else transcripts()[0]])[0]
    result = compare(path, args)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"{path.name}: thinking {', '.join(result['thinking'])}; max_tokens {result['max_tokens']}")
    print_rows(result["rows"])
    if "ratio" in result:
        print(f"ours / npm peer, billed-equivalent tokens per tool event: {result['ratio']}x   (target <= 0.30x)")
    print(f"observations stored {result['stored']} for {result['new_event_observations']} the model wrote for events it had"
          f" not seen ({result['stored'] / max(result['new_event_observations'], 1):.3f}x, target <= 1.05x);"
          f" {result['refused_echoes']} repeats refused")


if __name__ == "__main__":
    main()
