"""The memory file (issue 38) on projects with knowledge updates: what its section holds, what it
leaves alone, and that it does not churn.

    python bench/memory_file.py --data ../shared/data/updates-dev.json [--json]

Every project of the file (bench/updates.py's format) is imported with `claude-mem import` (the
marking rules run before it returns; no model). Each gets a git repository in a folder named
after it, with a subfolder, and a CLAUDE.md of the user's own (with and without a section yet,
one with CRLF line ends); `claude-mem memory-file --project-dir <its subfolder>` is run with the
setting off, then on (CLAUDE.md), then once more. Scored:

  outside.same      the bytes outside the markers are the user's, unchanged
  lines.max         the most lines between the markers (bar: <= 150)
  outdated.absent   an outdated memory's title (the old side of `supersedes`) is not in the file
  current.present   a current memory's title (a new side no later one replaced) is in the file
  second.same       a second run leaves the file byte-identical (and untouched)
  off.nothing       with the setting off nothing is written
  subfolders.clean  nothing is written under any subfolder
  command_x_floor   a first run's median wall time against `claude-mem --version` (the CLI's start,
                    interleaved, same run)
  hook.same         a session's SessionEnd, through the real hooks and a heuristic worker, leaves
                    the very file the command writes (a project of its own)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.updates import export_lines  # noqa: E402
from claude_mem.memory_file.section import END, START_PREFIX  # noqa: E402

USER_TEXT = "# {project}\n\nHouse rules written by a person.\n\n- Run the tests before pushing.\n"


def cli(env: dict[str, str], *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "claude_mem", *args], env=env, capture_output=True, text=True, cwd=cwd)


def make_project(work: Path, name: str, n: int) -> tuple[Path, bytes]:
    """A git repository named `name` with a subfolder and the user's own CLAUDE.md (n picks which kind)."""
    root = work / name
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    text = USER_TEXT.format(project=name)
    if n % 3 == 1:  # a section already there, between the user's lines, from an older run
        text += f"\n<!-- claude-mem:start -->\nstale line\n{END}\n\n## After the section\nMore rules.\n"
    elif n % 3 == 2:
        text = text.replace("\n", "\r\n")
    user = text.encode()
    (root / "CLAUDE.md").write_bytes(user)
    return root, user


def outside(data: bytes) -> tuple[bytes, bytes, int]:
    """What precedes the start line, what follows the end line, and the lines between."""
    lines = data.splitlines(keepends=True)
    s = next(i for i, ln in enumerate(lines) if ln.strip().startswith(START_PREFIX))
    e = next(i for i, ln in enumerate(lines) if ln.strip() == END.encode())
    return b"".join(lines[:s]), b"".join(lines[e + 1:]), e - s - 1


def timed(run: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def files_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if ".git" not in p.parts and p.parent != root}


def score_project(env: dict[str, str], p: dict[str, Any], root: Path, user: bytes) -> dict[str, Any]:
    olds = {s["old"] for s in p["supersedes"]}
    titles = {m["key"]: m["title"] for m in p["memories"]}
    current = {s["new"] for s in p["supersedes"]} - olds
    before = files_under(root)
    off = cli(env | {"CLAUDE_MEM_MEMORY_FILE": "off"}, "memory-file", "--project-dir", str(root / "src"))
    off_nothing = off.returncode == 1 and (root / "CLAUDE.md").read_bytes() == user
    on = env | {"CLAUDE_MEM_MEMORY_FILE": "CLAUDE.md"}
    floor = timed(lambda: cli(on, "--version"))  # the CLI's own start, interleaved: the baseline
    took = timed(lambda: cli(on, "memory-file", "--project-dir", str(root / "src")))
    first = took[1]
    if first.returncode != 0:
        raise SystemExit(f"memory-file failed for {p['project']}: {first.stderr.strip()}")
    written = (root / "CLAUDE.md").read_bytes()
    stat = (root / "CLAUDE.md").stat()
    second = cli(on, "memory-file", "--project-dir", str(root / "src"))
    head, tail, inside = outside(written)
    user_head, user_tail = (user, b"") if START_PREFIX not in user else outside(user)[:2]
    # A file without a section yet gets it after a blank line: the user's bytes are its prefix.
    same_outside = (head == user_head and tail == user_tail) if START_PREFIX in user else head.startswith(user) and not tail
    text = written.decode()
    return {"outside.same": same_outside, "lines": inside,
            "outdated": [titles[k] not in text for k in sorted(olds)],
            "current": [titles[k] in text for k in sorted(current)],
            "second.same": (root / "CLAUDE.md").read_bytes() == written and (root / "CLAUDE.md").stat().st_mtime_ns == stat.st_mtime_ns
            and "unchanged" in second.stdout,
            "off.nothing": off_nothing, "subfolders.clean": files_under(root) == before, "s": took[0], "floor_s": floor[0]}


def hook_session(env: dict[str, str], work: Path) -> bool:
    """A session through the real hooks (a prompt, a failed and a passing test run, a Stop,
    SessionEnd) with the worker on; the file its worker leaves is the one the command writes."""
    root, _ = make_project(work, "hooked", 0)
    on = env | {"CLAUDE_MEM_MEMORY_FILE": "CLAUDE.md", "CLAUDE_MEM_WORKER_AUTOSTART": "1", "CLAUDE_MEM_SYNTHESIZER": "heuristic"}
    base = {"session_id": "hooked-1", "cwd": str(root), "transcript_path": str(work / "t.jsonl")}
    events = [("new", {"hook_event_name": "UserPromptSubmit", "prompt": "make the tests pass"})]
    for n, (out, code) in enumerate((("1 failed", 1), ("3 passed", 0))):
        events.append(("save", {"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": f"t{n}",
                                "tool_input": {"command": "pytest tests/test_app.py"},
                                "tool_response": {"stdout": out, "stderr": "", "exit_code": code, "interrupted": False}}))
    events += [("summary", {"hook_event_name": "Stop", "last_assistant_message": "The tests pass now."}),
               ("summary", {"hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})]
    before = (root / "CLAUDE.md").read_bytes()
    for command, payload in events:
        subprocess.run([sys.executable, "-m", "claude_mem", command], input=json.dumps(base | payload), env=on,
                       capture_output=True, text=True, cwd=root, check=True)
    deadline = time.monotonic() + 120
    while (root / "CLAUDE.md").read_bytes() == before and time.monotonic() < deadline:
        time.sleep(0.2)
    by_hook = (root / "CLAUDE.md").read_bytes()
    dry = cli(on, "memory-file", "--dry-run", "--project-dir", str(root))
    return by_hook != before and dry.stdout.encode() == by_hook and "stay as it is" in dry.stderr


def run(data_path: str, work: Path) -> dict[str, Any]:
    data = json.loads(Path(data_path).read_text())
    data_dir = work / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLAUDE_MEM_")}
    env.update({"CLAUDE_MEM_DATA_DIR": str(data_dir), "CLAUDE_MEM_WORKER_AUTOSTART": "0", "CLAUDE_MEM_SEMANTIC_INDEX": "0"})
    export = work / "export.jsonl"
    export.write_text("\n".join(export_lines(data)) + "\n")
    proc = cli(env, "import", str(export), "--json")
    if proc.returncode != 0:
        raise SystemExit(f"import failed: {proc.stderr.strip()}")
    rows = []
    for n, p in enumerate(data["projects"]):
        root, user = make_project(work / "projects", p["project"], n)
        rows.append(score_project(env, p, root, user))
    spent, floor = sorted(r["s"] for r in rows), sorted(r["floor_s"] for r in rows)
    outdated = [x for r in rows for x in r["outdated"]]
    current = [x for r in rows for x in r["current"]]
    return {"data": data_path, "projects": len(rows), "outdated.n": len(outdated), "current.n": len(current),
            "outside.same": all(r["outside.same"] for r in rows), "lines.max": max(r["lines"] for r in rows),
            "outdated.absent": round(sum(outdated) / len(outdated), 4), "current.present": round(sum(current) / len(current), 4),
            "second.same": all(r["second.same"] for r in rows), "off.nothing": all(r["off.nothing"] for r in rows),
            "subfolders.clean": all(r["subfolders.clean"] for r in rows),
            "command_s": round(spent[len(spent) // 2], 3), "floor_s": round(floor[len(floor) // 2], 3),
            "command_x_floor": round(spent[len(spent) // 2] / floor[len(floor) // 2], 2), "hook.same": hook_session(env, work)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a memory-updates JSON file (e.g. ../shared/data/updates-dev.json)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cm-mf-") as tmp:
        report = run(args.data, Path(tmp))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{report['data']}: {report['projects']} projects, {report['outdated.n']} outdated and {report['current.n']}"
          f" current memories; a run {report['command_s']} s (median) against `claude-mem --version`'s"
          f" {report['floor_s']} s in the same run: {report['command_x_floor']}x")
    bars = (("outside the markers byte-identical", "outside.same", "yes"), ("most lines inside", "lines.max", "<= 150"),
            ("outdated titles absent", "outdated.absent", ">= 0.9"), ("current titles present", "current.present", ">= 0.8"),
            ("second run byte-identical", "second.same", "yes"), ("setting off: nothing written", "off.nothing", "yes"),
            ("nothing under subfolders", "subfolders.clean", "yes"), ("SessionEnd hook = command", "hook.same", "yes"))
    for label, key, bar in bars:
        print(f"  {label:38} {report[key]!s:>8}   bar {bar}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
