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

`--pace` says when the events arrive (bench/pace.py): "drain" stores them all before one worker
observes them (every batch as full as it can be); "hook" replays the hooks back to back, as real
processes, while the worker they start observes; "real" keeps the session's own gaps, each capped
at `--max-gap` seconds. The fake model takes as long as Haiku would to answer (`--latency`: the
seconds to the first token, the output tokens a second), so events that arrive while the observer
is busy wait for it. `--base DIR` observes with another checkout's code in the same run (a
baseline), `--set KEY=VALUE` runs ours with a setting changed. Memory quality is counted from
what ours stored: observations per tool event, and the share of the files the events read or
edited and of the commands they ran (`program subcommand`) that some observation names.

`--sweep` chooses the renewal point: it runs ours once with renewal off on the transcripts
given (default: the real ones except the held-out one), then replays the recorded turns as
conversations renewed at each size, a recap of the session's titles opening each new one, and
prints the billed tokens per event of each size.

    python bench/observer_bill.py [--peer DIR --bun PATH] [--base DIR] [--pace hook|real|drain] [--max-gap S]
                                  [--set KEY=VALUE ...] [--context-tokens N] [TRANSCRIPT ...]
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
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.cache_bill import PRICES, CacheBill, tokens  # noqa: E402
from bench.data import SHARED, transcripts  # noqa: E402
from bench.pace import PACES, moved, play_ours, schedule, tree_env  # noqa: E402
from bench.peer_observer import run_peer  # noqa: E402
from claude_mem.replay import transcript_payloads  # noqa: E402
from tests.fakes.messages_api import ApiRequest, FakeMessagesAPI  # noqa: E402

HELD_OUT = SHARED / "claude-code-log" / "37f83ec9-f2ea-42a9-925e-0d5c105cb6e8.jsonl"
EVENT_LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] (.+)$", re.M)
PEER_EVENT = re.compile(r"<what_happened>(.*?)</what_happened>.*?<parameters>(.{0,60})", re.S)
RECAP_MARK = "Already recorded, do not repeat:"
TURN_END = re.compile(r"^The turn for request #(\d+) has ended", re.M)
MISSING = re.compile(r"had no <summary> block for request ((?:#\d+(?:, )?)+)")
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

    def __init__(self, latency: tuple[float, float] = (0.0, 0.0)) -> None:
        self.latency = latency  # (seconds to the first token, output tokens a second; 0: at once)
        self.pairs: list[tuple[dict[str, Any], str]] = []
        self.new_event_observations = 0
        self.seen = 0  # events shown so far
        self._lock = threading.Lock()

    def __call__(self, request: ApiRequest) -> str:
        text = last_user_text(request)
        if TURN_END.search(text) or MISSING.search(text):
            reply, fresh = self._turns(text)
        elif "<summary>" in text and ("root tag is <summary>" in text or "<request>" in text):
            reply, fresh = SUMMARY, 0  # the peer's (and our code before issue 49's) summary request
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
        first_token, per_second = self.latency
        if per_second:
            time.sleep(first_token + tokens(reply) / per_second)
        return reply

    def _turns(self, text: str) -> tuple[str, int]:
        """Our batch spanning turns: each turn's observations, then its summary if it ended."""
        if missing := MISSING.search(text):
            return "\n".join(SUMMARY.replace("<summary>", f'<summary request="{n}">') for n in re.findall(r"\d+", missing[1])), 0
        recap = text.split(RECAP_MARK, 1)[1].split("\n\n")[0] if RECAP_MARK in text else ""
        blocks, fresh = [observation(line[2:]) for line in recap.splitlines() if line.startswith("- ")], 0
        for line in text.splitlines():
            if event := EVENT_LINE.match(line):
                with self._lock:
                    seen, self.seen = self.seen, self.seen + 1
                blocks.append(observation(event[1], seen))
                fresh += 1
            elif ended := TURN_END.match(line):
                blocks.append(SUMMARY.replace("<summary>", f'<summary request="{ended[1]}">'))
        return "\n".join(blocks), fresh

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
    """The transcript's hook payloads, run from a folder that exists here (bench/pace.py moved)."""
    return [moved(p, cwd) for p in transcript_payloads(path, session_id="bench")]


def run_ours(path: Path, work: Path, context_tokens: int | None, *, pace: str = "drain", max_gap: float = 30.0,
             tree: Path | None = None, settings_env: dict[str, str] | None = None,
             latency: tuple[float, float] = (0.0, 0.0)) -> dict[str, Any]:
    """Our worker observing the transcript (`tree`: another checkout's code) at `pace`."""
    from claude_mem import settings
    from claude_mem.hooks import store_in_process
    from claude_mem.store.db import connect

    data = work / "data"
    project = work / "project"
    project.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": str(data), "CLAUDE_MEM_SYNTHESIZER": "model",
           "CLAUDE_MEM_SEMANTIC_INDEX": "0", "CLAUDE_MEM_WORKER_AUTOSTART": "0" if pace == "drain" else "1",
           **tree_env(tree), **(settings_env or {})}
    if context_tokens:
        env["CLAUDE_MEM_OBSERVER_CONTEXT_TOKENS"] = str(context_tokens)
    env.pop("CLAUDE_MEM_CLI_PATH", None)
    config = settings.load(strict=True, environ=env)
    config.ensure_dirs()
    model = Model(latency)
    with FakeMessagesAPI(model) as api:
        env.update(cli_env(api.url, work / "cli"))
        seconds = 0.0
        if pace == "drain":
            conn = connect(config.db_path)
            store_in_process(config, conn, tool_payloads(path, project))
            conn.close()
            started = time.monotonic()
            proc = subprocess.run([sys.executable, "-m", "claude_mem", "worker", "--session", "bench", "--drain"],
                                  env=env, capture_output=True, text=True, timeout=3600)
            if proc.returncode != 0:
                raise SystemExit(f"our worker failed: {proc.stderr[-2000:]}")
            seconds = time.monotonic() - started
        else:
            seconds = play_ours(schedule(path, project, pace, max_gap), env, Path(config.db_path), Path(config.workers_dir))
    conn = connect(config.db_path)
    events = conn.execute("SELECT COUNT(*) FROM observation_queue WHERE session_id = 'bench' AND kind = 'tool'").fetchone()[0]
    stored = conn.execute("SELECT COUNT(*) FROM observations WHERE session_id = 'bench'").fetchone()[0]
    echoes = conn.execute("SELECT COALESCE(SUM(echoes_refused), 0) FROM worker_runs").fetchone()[0]
    quality = named(conn, str(project))
    conn.close()
    shutil.rmtree(work / "cli", ignore_errors=True)
    return {"model": model, "tool_events": int(events), "stored": int(stored), "refused": int(echoes), "quality": quality,
            "seconds": round(seconds, 1)}


def named(conn: Any, cwd: str) -> dict[str, Any]:
    """Memory quality, from what was stored: observations per tool event, and the share of the
    files the events read or edited, and of the commands they ran, that some observation names."""
    from claude_mem.text.command_keys import command_keys

    files: set[str] = set()
    commands: set[str] = set()
    events = 0
    for name, raw in conn.execute("SELECT tool_name, tool_input FROM observation_queue WHERE session_id = 'bench'"
                                  " AND kind = 'tool'"):
        events += 1
        given = json.loads(raw) if raw else {}
        given = given if isinstance(given, dict) else {}
        path = given.get("file_path") or given.get("notebook_path")
        if isinstance(path, str) and path:
            files.add(path[len(cwd) + 1:] if path.startswith(cwd + "/") else path)
        if name == "Bash" and isinstance(given.get("command"), str):
            commands.update(command_keys(given["command"]))
    texts = [" ".join(str(v or "") for v in row) for row in conn.execute(
        "SELECT title, subtitle, facts, narrative, files_read, files_modified FROM observations WHERE session_id = 'bench'")]
    files_named = {f for f in files if any(f in t for t in texts)}
    commands_named = {c for c in commands if any(all(w in t for w in c.split()) for t in texts)}
    return {"observations_per_event": round(len(texts) / max(events, 1), 3),
            "files": len(files), "files_named": len(files_named), "commands": len(commands),
            "commands_named": len(commands_named)}


def describe(name: str, bill: CacheBill, events: int) -> dict[str, Any]:
    u = bill.usage
    return {"system": name, "tool_events": events, "requests": bill.requests, "largest_request": bill.largest,
            "events_per_request": round(events / max(bill.requests, 1), 2),
            **{k: round(v / events, 1) for k, v in u.items()},
            "billed_per_event": round(bill.billed_tokens() / events, 1),
            "usd_per_1000_events": round(bill.dollars() / events * 1000, 3),
            "split": {k: round(v * PRICES[k] / max(bill.billed_tokens(), 1), 3) for k, v in u.items()}}


def print_rows(rows: list[dict[str, Any]]) -> None:
    print(f"{'system':<10} {'events':>6} {'requests':>8} {'ev/req':>6} {'input':>8} {'c.read':>8} {'c.write':>8} {'output':>7}"
          f" {'billed/ev':>9} {'$/1k ev':>8}   (tokens per tool event)   bill split: read/write/output/input")
    for r in rows:
        split = "/".join(f"{100 * r['split'][k]:.0f}%" for k in ("cache_read", "cache_write", "output", "input"))
        print(f"{r['system']:<10} {r['tool_events']:>6} {r['requests']:>8} {r['events_per_request']:>6} {r['input']:>8}"
              f" {r['cache_read']:>8} {r['cache_write']:>8} {r['output']:>7} {r['billed_per_event']:>9}"
              f" {r['usd_per_1000_events']:>8}   {split}")


def _settings_env(pairs: list[str]) -> dict[str, str]:
    env = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        env[f"CLAUDE_MEM_{key.strip().upper()}"] = value.strip()
    return env


def compare(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """Every system asked for observes the transcript at the same pace, at the same time (their
    hooks replay one schedule side by side), each against its own fake model."""
    latency = tuple(float(x) for x in args.latency.split(","))
    with tempfile.TemporaryDirectory(prefix="cm-bill-", dir="/tmp") as tmp:
        work = Path(tmp)
        jobs: dict[str, Any] = {}
        with ThreadPoolExecutor(max_workers=3) as pool:
            ours_kw = {"pace": args.pace, "max_gap": args.max_gap, "latency": latency,
                       "settings_env": _settings_env(args.set)}
            jobs["ours"] = pool.submit(run_ours, path, work / "ours", args.context_tokens, **ours_kw)
            if args.base:
                jobs["base"] = pool.submit(run_ours, path, work / "base", args.context_tokens, tree=args.base.resolve(),
                                           **{**ours_kw, "settings_env": {}})
            if args.peer:
                peer_model = Model(latency)

                def peer() -> dict[str, Any]:
                    with FakeMessagesAPI(peer_model) as api:
                        timed = schedule(path, work / "project", "hook" if args.pace == "drain" else args.pace, args.max_gap)
                        run_peer(args.peer, args.bun, timed, work / "peer", api.url)
                    return {"model": peer_model}

                (work / "project").mkdir(parents=True, exist_ok=True)
                jobs["npm peer"] = pool.submit(peer)
            runs = {name: job.result() for name, job in jobs.items()}
    ours = runs["ours"]
    events = ours["tool_events"]
    rows = [describe(name, run["model"].bill(), events) for name, run in runs.items()]
    model = ours["model"]
    result: dict[str, Any] = {"transcript": path.name, "pace": args.pace, "max_gap": args.max_gap, "rows": rows,
                              "stored": ours["stored"], "refused_echoes": ours["refused"],
                              "new_event_observations": model.new_event_observations,
                              "quality": {name: run["quality"] for name, run in runs.items() if "quality" in run},
                              "seconds": {name: run["seconds"] for name, run in runs.items() if "seconds" in run},
                              "thinking": sorted({json.dumps(b.get("thinking")) for b, _ in model.pairs}),
                              "max_tokens": sorted({b.get("max_tokens") for b, _ in model.pairs if b.get("max_tokens")})}
    by_name = {r["system"]: r for r in rows}
    if "npm peer" in by_name:
        result["ratio"] = {name: round(r["billed_per_event"] / by_name["npm peer"]["billed_per_event"], 3)
                           for name, r in by_name.items() if name != "npm peer"}
    return result


def report(path: Path, result: dict[str, Any]) -> None:
    print(f"{path.name} at pace {result['pace']}" + (f" (gaps capped at {result['max_gap']:g} s)" if result["pace"] == "real" else "")
          + f": thinking {', '.join(result['thinking'])}; max_tokens {result['max_tokens']}")
    print_rows(result["rows"])
    for name, ratio in result.get("ratio", {}).items():
        print(f"{name} / npm peer, billed-equivalent tokens per tool event: {ratio}x")
    for name, q in result["quality"].items():
        print(f"{name}: {q['observations_per_event']} observations per tool event; files named {q['files_named']}/{q['files']},"
              f" commands named {q['commands_named']}/{q['commands']}; observed in {result['seconds'][name]} s")
    print(f"ours: observations stored {result['stored']} for {result['new_event_observations']} the model wrote for events it"
          f" had not seen ({result['stored'] / max(result['new_event_observations'], 1):.3f}x, target <= 1.05x);"
          f" {result['refused_echoes']} repeats refused")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("transcripts", nargs="*", type=Path)
    parser.add_argument("--peer", type=Path, help="the npm claude-mem's unpacked package (its `package` folder)")
    parser.add_argument("--bun", type=Path, help="a bun binary to run the peer with")
    parser.add_argument("--base", type=Path, help="another checkout of claude-mem, observed beside ours in the same run")
    parser.add_argument("--pace", choices=PACES, default="hook", help="when the events arrive (default: hook speed)")
    parser.add_argument("--max-gap", type=float, default=30.0, help="at --pace real, the longest gap kept (seconds)")
    parser.add_argument("--latency", default="0.6,150",
                        help="the fake model's seconds to the first token and output tokens a second (0,0: at once)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="one of our settings, changed")
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
    results = []
    for path in args.transcripts or transcripts():
        result = compare(path, args)
        results.append(result)
        if not args.json:
            report(path, result)
            print(flush=True)
    if args.json:
        print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
