"""Memory on coding tasks that hinge on a team decision: does the decision reach the task, and do
rivals, other components' rules and other tasks' decisions stay out? (issue 51)

    python bench/decisions.py [--variants stated,replaced,rivals,scope,unstated] [--repos ledger,atlas] [--json] [--keep DIR]

The corpus (bench/decisions_corpus.py) is written sessions in eight repositories: investigations a
user closes by stating a decision, mundane sessions around them, later tasks. Each variant is its
own memory: every session played through the real hook commands (`context`, `new`, `save`,
`summary`) in a fresh data folder, the heuristic synthesizer (no model), workers and the memory
service started by the hooks as in a real install. Then, for each task, a new session in the task's
repository: the digest (`context`), the prompt push (`new`), `claude-mem search` top 5 and
`claude-mem ask`, each scored by whether it carries the marker words of a statement:

  stated     32 tasks: the decision reached the channel
  replaced   12 tasks: the newer decision reached; the replaced one without it (stale, misleads)
  rivals     11 tasks: both rival claims, exactly one (shown as fact), neither; both with the conflict said
  scope      12 tasks in another component than a rule's: the rule carried (it should not be); and the
             rule still reaching a task in its own component
  unstated   12 tasks whose decision was never stated: another task's decision carried; the push empty
  offtopic   developer prompts of the shared transcripts, asked of the stated memory: something pushed

and, after each ingest, the index: rows SQLite has and the semantic index lacks when the queue drains,
and the seconds until none are missing. Observations: how many, how many decisions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # `python bench/decisions.py`: the bench modules and this checkout's claude_mem

from bench.decisions_corpus import MUNDANE, REPOS, TOPICS, investigation, restatement  # noqa: E402
from bench.decisions_shape import Session, Topic, payloads  # noqa: E402
from claude_mem.project import project_for  # noqa: E402
from claude_mem.replay import hook_argv, play_subprocess, run_hook  # noqa: E402
from claude_mem.service import client  # noqa: E402

VARIANTS = ("stated", "replaced", "rivals", "scope", "unstated")
RUN = f"{os.getpid()}-{int(time.time())}"
CHANNELS = ("digest", "push", "search", "ask")
DRAIN_TIMEOUT_S = 900.0
INDEX_WAIT_S = 180.0


@dataclass
class Memory:
    """One variant's memory: its data folder, its repositories, the environment its hooks run in."""

    work: Path
    env: dict[str, str]
    repos: dict[str, Path] = field(default_factory=dict)

    @property
    def db(self) -> Path:
        return self.work / "data" / "claude-mem.db"


def make_memory(work: Path, repos: list[str]) -> Memory:
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "CLAUDE_MEM_DATA_DIR": str(work / "data"), "CLAUDE_MEM_SYNTHESIZER": "heuristic",
           "CLAUDE_MEM_WORKER_AUTOSTART": "1", "CLAUDE_MEM_SERVICE_IDLE_S": "900", "CLAUDE_MEM_MEMORY_FILE": "off",
           "CLAUDE_MEM_WORKER_IDLE_S": "30"}  # a task session's worker need not wait long
    env.pop("CLAUDE_PROJECT_DIR", None)
    memory = Memory(work, env)
    for repo in repos:
        path = work / "repos" / repo
        (path / ".git").mkdir(parents=True, exist_ok=True)
        (path / ".git" / "config").write_text(f'[remote "origin"]\n\turl = https://github.com/acme/{repo}.git\n')
        memory.repos[repo] = path
    return memory


def sessions_for(variant: str, repos: list[str]) -> list[tuple[str, Session]]:
    """Every session of the variant's memory, in the order they happen: per repository, its
    mundane sessions between its investigations, then the newer and rival statements."""
    out: list[tuple[str, Session]] = []
    for repo in repos:
        topics = [t for t in TOPICS if t.project == repo]
        mundane = list(MUNDANE.get(repo, []))
        later: list[Session] = []
        for n, topic in enumerate(topics):
            if mundane:
                out.append((repo, Session(f"{repo}-mundane-{n}", mundane.pop(0))))
            out.append((repo, investigation(topic, statement_in(variant, topic), TOPICS.index(topic))))
            if variant == "replaced" and topic.newer:
                later.append(restatement(topic, topic.newer, "newer"))
            if variant == "rivals" and topic.rival:
                later.append(restatement(topic, topic.rival, "rival"))
        out += [(repo, Session(f"{repo}-mundane-{len(topics) + k}", turns)) for k, turns in enumerate(mundane)]
        out += [(repo, s) for s in later]
    return out


def statement_in(variant: str, topic: Topic) -> str | None:
    if variant == "unstated" and topic.unstated:
        return None
    if variant == "scope" and topic.elsewhere:
        return topic.elsewhere.rule
    return topic.decision


def ingest(memory: Memory, sessions: list[tuple[str, Session]], progress: bool) -> dict[str, Any]:
    """Play every session through the hooks, wait for the queue to drain, then for the index."""
    started = time.monotonic()
    for n, (repo, session) in enumerate(sessions, 1):
        cwd = str(memory.repos[repo])
        results = play_subprocess(payloads(session, cwd, session_id=f"s-{session.name}"), env=memory.env)
        bad = [r for r in results if r.returncode != 0 or r.stderr.strip()]
        if bad:
            print(f"warning: {session.name}: {bad[0].command} said {bad[0].stderr.strip()[:300]}", file=sys.stderr)
        if progress:
            print(f"\r  {n}/{len(sessions)} sessions", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    played = time.monotonic() - started
    drained = wait_drained(memory)
    lag_at_drain = unindexed(memory.db)
    waited = time.monotonic()
    lag = lag_at_drain
    while lag and time.monotonic() - waited < INDEX_WAIT_S:
        time.sleep(0.25)
        lag = unindexed(memory.db)
    conn = sqlite3.connect(memory.db)
    try:
        counts = dict(conn.execute("SELECT type, count(*) FROM observations GROUP BY type").fetchall())
    finally:
        conn.close()
    return {"sessions": len(sessions), "played_s": round(played, 1), "drained": drained, "unindexed_at_drain": lag_at_drain,
            "index_caught_up_s": round(time.monotonic() - waited, 2) if not lag else None, "observations": sum(counts.values()),
            "decisions": counts.get("decision", 0)}


def wait_drained(memory: Memory) -> bool:
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while time.monotonic() < deadline:
        conn = sqlite3.connect(memory.db)
        try:
            waiting = conn.execute("SELECT count(*) FROM observation_queue WHERE status IN ('pending', 'processing')").fetchone()[0]
        finally:
            conn.close()
        if not waiting:
            return True
        time.sleep(0.2)
    return False


def unindexed(db: Path) -> int:
    """Rows SQLite holds that the semantic index does not (the indexer's own count)."""
    conn = sqlite3.connect(db)
    try:
        return sum(conn.execute(
            f"SELECT count(*) FROM {table} t LEFT JOIN index_state s ON s.kind = ? AND s.row_id = t.id WHERE s.row_id IS NULL",
            (kind,)).fetchone()[0] for kind, table in (("observation", "observations"), ("summary", "session_summaries"),
                                                      ("prompt", "user_prompts")))
    finally:
        conn.close()


def hook_text(result: Any) -> str:
    try:
        answer = json.loads(result.stdout or "{}")
    except ValueError:
        return ""
    return str((answer.get("hookSpecificOutput") or {}).get("additionalContext") or "")


def cli(memory: Memory, *args: str) -> Any:
    proc = subprocess.run([*hook_argv(), *args], capture_output=True, text=True, env=memory.env, timeout=120)
    try:
        return json.loads(proc.stdout)
    except ValueError:
        return None


def channels(memory: Memory, repo: str, prompt: str, name: str) -> dict[str, str]:
    """What each channel gave a new session whose first prompt is `prompt`."""
    cwd = str(memory.repos[repo])
    session = f"task-{name}-{RUN}"  # a memory reused by a later run (--reuse) has given nothing to this session
    base = {"session_id": session, "transcript_path": f"{cwd}/.transcripts/{session}.jsonl", "cwd": cwd, "permission_mode": "default"}
    digest = hook_text(run_hook("context", {**base, "hook_event_name": "SessionStart", "source": "startup"}, env=memory.env))
    push = hook_text(run_hook("new", {**base, "hook_event_name": "UserPromptSubmit", "prompt": prompt, "prompt_id": f"{session}-p1"},
                              env=memory.env))
    project = project_for(cwd)
    found = cli(memory, "search", prompt, "--project", project, "--limit", "5", "--json") or {}
    search = "\n".join(f"{h.get('title', '')} {h.get('snippet', '')}" + (f" [conflicts with {', '.join(h['conflicts_with'])}]"
                                                                          if h.get("conflicts_with") else "")
                       for h in found.get("hits", []))
    answered = cli(memory, "ask", prompt, "--project", project, "--json") or {}
    return {"digest": digest, "push": push, "search": search, "ask": str(answered.get("answer") or "")}


def has(text: str, marker: str) -> bool:
    return " ".join(marker.lower().split()) in " ".join(text.lower().split())


CONFLICT_WORDS = ("conflict", "disagree", "rival")


def score(variant: str, topics: list[Topic], memory: Memory, progress: bool, texts: dict[str, Any]) -> dict[str, Any]:
    """The variant's tasks through every channel, counted as its docstring line says (what each
    channel said goes into `texts`, by task)."""
    counts: dict[str, dict[str, int]] = {c: {} for c in CHANNELS}
    chars: dict[str, int] = dict.fromkeys(CHANNELS, 0)
    tasks = 0
    stated_markers = {t.key: (t.project, t.marker) for t in topics if statement_in(variant, t) is not None}
    for topic in topics:
        asked = _tasks(variant, topic)
        for name, prompt in asked:
            tasks += 1
            got = channels(memory, topic.project, prompt, name)
            texts[name] = {"prompt": prompt, **got}
            for channel, text in got.items():
                chars[channel] += len(text)
                for key in _measures(variant, topic, name, text, stated_markers):
                    counts[channel][key] = counts[channel].get(key, 0) + 1
            if progress:
                print(f"\r  {tasks} tasks", end="", file=sys.stderr, flush=True)
    if progress:
        print(file=sys.stderr)
    return {"tasks": tasks, "counts": counts, "mean_chars": {c: round(chars[c] / max(tasks, 1)) for c in CHANNELS},
            "push_by_keywords": keyword_pushes(memory)}


def keyword_pushes(memory: Memory) -> int:
    """This run's task pushes the memory service did not answer within push_timeout_ms (a loaded
    machine): answered from SQLite's keywords alone, as the hook does then."""
    conn = sqlite3.connect(memory.db)
    try:
        return int(conn.execute("SELECT count(*) FROM injections WHERE kind = 'prompt' AND note = 'fts' AND session_id LIKE ?",
                                (f"task-%-{RUN}",)).fetchone()[0])
    finally:
        conn.close()


def _tasks(variant: str, topic: Topic) -> list[tuple[str, str]]:
    if variant == "stated":
        return [(topic.key, topic.task)]
    if variant == "replaced" and topic.newer:
        return [(topic.key, topic.task)]
    if variant == "rivals" and topic.rival:
        return [(topic.key, topic.task)]
    if variant == "scope" and topic.elsewhere:
        return [(f"{topic.key}-elsewhere", topic.elsewhere.task), (f"{topic.key}-own", topic.task)]
    if variant == "unstated" and topic.unstated:
        return [(topic.key, topic.task)]
    return []


def _measures(variant: str, topic: Topic, name: str, text: str, stated: dict[str, tuple[str, str]]) -> list[str]:
    """The counters this task's channel text adds to."""
    if variant == "stated":
        return ["reached"] * has(text, topic.marker)
    if variant == "replaced" and topic.newer:
        current, stale = has(text, topic.newer.marker), has(text, topic.marker)
        return ["current"] * current + ["stale_without_current"] * (stale and not current)
    if variant == "rivals" and topic.rival:
        one, two = has(text, topic.marker), has(text, topic.rival.marker)
        if one and two:
            return ["both"] + ["both_conflict_said"] * any(w in text.lower() for w in CONFLICT_WORDS)
        return ["exactly_one"] if one or two else ["neither"]
    if variant == "scope" and topic.elsewhere:
        key = "other_scope_rule" if name.endswith("-elsewhere") else "own_scope_reached"
        return [key] * has(text, topic.elsewhere.marker)
    if variant == "unstated" and topic.unstated:
        others = [m for k, (repo, m) in stated.items() if k != topic.key and repo == topic.project and has(text, m)]
        return ["other_decision"] * bool(others) + ["empty"] * (not text.strip())
    return []


def offtopic(memory: Memory, repos: list[str], limit: int, texts: dict[str, Any]) -> dict[str, Any]:
    """Developer prompts of the shared transcripts (nothing to do with these repositories), each
    asked in each repository: how often the push says something."""
    from bench.data import transcripts
    from bench.push_recall import offtopic_prompts

    prompts = [p for p in offtopic_prompts(transcripts()) if len(p.split()) >= 3][:limit]
    pushed = asked = 0
    for repo in repos:
        for k, prompt in enumerate(prompts):
            cwd = str(memory.repos[repo])
            session = f"offtopic-{repo}-{k}-{RUN}"
            result = run_hook("new", {"session_id": session, "transcript_path": "/dev/null", "cwd": cwd, "permission_mode": "default",
                                      "hook_event_name": "UserPromptSubmit", "prompt": prompt}, env=memory.env)
            asked += 1
            pushed += bool(hook_text(result))
            texts[f"offtopic-{repo}-{k}"] = {"prompt": prompt, "push": hook_text(result)}
    return {"asked": asked, "pushed": pushed}


def stop_service(memory: Memory) -> None:
    subprocess.run([*hook_argv(), "service", "--stop"], env=memory.env, capture_output=True, timeout=120)


def keep(memory: Memory) -> None:
    """A copy of the memory as ingested, for --reuse (the tasks add their own sessions to it)."""
    stop_service(memory)
    shutil.rmtree(memory.work / "ingested", ignore_errors=True)
    shutil.copytree(memory.work / "data", memory.work / "ingested", ignore=shutil.ignore_patterns("*.sock", "*.lock", "workers"))
    start_service(memory)


def restore(memory: Memory) -> None:
    stop_service(memory)
    shutil.rmtree(memory.work / "data", ignore_errors=True)
    shutil.copytree(memory.work / "ingested", memory.work / "data")
    start_service(memory)


def start_service(memory: Memory) -> None:
    """The memory service up, caught up and its model loaded, as the ingest left it: the tasks
    find it running (a service just started answers its first searches after the hook's budget,
    and one task's push came from keywords alone)."""
    data_dir = str(memory.work / "data")
    client.call(data_dir, "search", {"query": "warm up", "mode": "semantic", "limit": 1, "wait_s": 60}, timeout_s=120, wait=True)
    deadline = time.monotonic() + INDEX_WAIT_S
    while unindexed(memory.db) and time.monotonic() < deadline:
        time.sleep(0.25)


def run_variant(variant: str, repos: list[str], work: Path, progress: bool, offtopic_max: int,
                texts: dict[str, Any], reuse: bool = False) -> dict[str, Any]:
    topics = [t for t in TOPICS if t.project in repos]
    kept = work / variant / "ingest.json"
    again = reuse and kept.exists()
    memory = make_memory(work / variant, repos)
    try:
        if progress:
            print(f"{variant}: " + ("the memory of an earlier run" if again else "ingest"), file=sys.stderr)
        if again:
            ingested = json.loads(kept.read_text())
            restore(memory)
        else:
            ingested = ingest(memory, sessions_for(variant, repos), progress)
            keep(memory)
            kept.write_text(json.dumps(ingested))
        if progress:
            print(f"{variant}: tasks", file=sys.stderr)
        result = {"ingest": ingested, **score(variant, topics, memory, progress, texts.setdefault(variant, {}))}
        if variant == "stated" and offtopic_max:
            result["offtopic"] = offtopic(memory, repos, offtopic_max, texts.setdefault(variant, {}))
        return result
    finally:
        stop_service(memory)


def report(results: dict[str, dict[str, Any]]) -> str:
    lines = []
    for variant, r in results.items():
        i = r["ingest"]
        lines.append(f"{variant}: {r['tasks']} tasks; {i['observations']} observations ({i['decisions']} decisions);"
                     f" unindexed when the queue drained {i['unindexed_at_drain']}, caught up in"
                     f" {i['index_caught_up_s'] if i['index_caught_up_s'] is not None else 'never'} s")
        keys = sorted({k for c in CHANNELS for k in r["counts"][c]})
        for channel in CHANNELS:
            parts = ", ".join(f"{k} {r['counts'][channel].get(k, 0)}" for k in keys)
            lines.append(f"  {channel:7} {parts or '-'}  (mean {r['mean_chars'][channel]} chars)")
        if r.get("push_by_keywords"):
            lines.append(f"  ({r['push_by_keywords']} of the pushes from keywords alone: the memory service answered too late)")
        if "offtopic" in r:
            lines.append(f"  offtopic prompts pushed {r['offtopic']['pushed']} of {r['offtopic']['asked']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated, of: " + ", ".join(VARIANTS))
    parser.add_argument("--repos", default=",".join(REPOS), help="comma-separated repositories of the corpus")
    parser.add_argument("--offtopic-max", type=int, default=10, help="off-topic prompts asked per repository (0: none)")
    parser.add_argument("--keep", help="work in this folder and keep it")
    parser.add_argument("--reuse", action="store_true", help="with --keep: take the memory an earlier run left there, not ingest again")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--dump", help="write what every channel said for every task to this JSON file")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    repos = [r for r in args.repos.split(",") if r]
    unknown = [v for v in variants if v not in VARIANTS] + [r for r in repos if r not in REPOS]
    if unknown:
        parser.error(f"unknown: {', '.join(unknown)}")
    with tempfile.TemporaryDirectory(prefix="decisions-") as tmp:
        work = Path(args.keep) if args.keep else Path(tmp)
        texts: dict[str, Any] = {}
        results: dict[str, dict[str, Any]] = {}
        for variant in variants:
            results[variant] = run_variant(variant, repos, work, not args.quiet, args.offtopic_max, texts, args.reuse)
            print(report({variant: results[variant]}), file=sys.stderr, flush=True)  # each as it is done: a run takes minutes
            if args.dump:
                Path(args.dump).write_text(json.dumps(texts, indent=1, ensure_ascii=False), encoding="utf-8")
    print(json.dumps(results, indent=2) if args.json else report(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
