"""Shared by the plugin's tests: a marketplace clone of this checkout, the plugin's launcher run
as Claude Code runs it, and an environment "built" from the test venv (what the launcher's build
leaves, minus the minute it takes: the e2e test runs the real build)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from claude_mem.processes import lock_held
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
LAUNCHER = Path("plugin") / "claude-mem"


def clone(dest: Path) -> Path:
    """The repository as a clone of it holds it: tracked and new files, not what git ignores
    (.venv would otherwise be copied into Claude Code's plugin cache)."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def adopt_environment(data: Path, venv_bin: Path = BIN) -> Path:
    """An environment as the build leaves it, whose claude-mem and python are the test venv's."""
    env = data / "env-adopted"
    (env / "bin").mkdir(parents=True)
    for name in ("claude-mem", "python"):
        (env / "bin" / name).symlink_to(venv_bin / name)
    (env / "built").write_text("adopted by a test\n")
    (data / "env").symlink_to(env.name)
    return env


def launcher_env(tmp_path: Path, data: Path, **extra: str) -> dict[str, str]:
    """What a plugin's hook gets from Claude Code, with pip unable to install anything: a build
    started here fails in seconds (python -m venv, then pip finding no hatchling)."""
    empty = tmp_path / "no-wheels"
    empty.mkdir(exist_ok=True)
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
        "CLAUDE_PLUGIN_DATA": str(data), "CLAUDE_MEM_DATA_DIR": os.environ["CLAUDE_MEM_DATA_DIR"],
        "CLAUDE_MEM_WORKER_AUTOSTART": "0",  # hooks run from an environment would start workers that outlive the test
        "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty), **extra}


def run_launcher(plugin: Path, command: str, payload: dict | str, env: dict[str, str],
                 timeout: float = 60) -> subprocess.CompletedProcess[str]:
    stdin = payload if isinstance(payload, str) else json.dumps(payload)
    return subprocess.run([str(plugin / LAUNCHER), command], input=stdin, capture_output=True, text=True, env=env,
                          timeout=timeout)


def builds(log: str) -> int:
    return log.count("claude-mem plugin: building ")


def wait_for_builds(data: Path, count: int, timeout: float = 180) -> str:
    """Wait until `count` builds have started and every build has ended (its lock free);
    returns the build log."""
    def log() -> str:
        return (data / "build.log").read_text() if (data / "build.log").exists() else ""

    def finished() -> bool:
        text = log()
        ended = sum(text.count(f"claude-mem plugin: {word}") for word in ("ready after", "failed:", "error:"))
        return builds(text) >= count and ended >= builds(text) and not lock_held(str(data / "build.lock"))

    assert wait_until(finished, timeout), f"not {count} finished build(s) after {timeout} s:\n{log()[-3000:]}"
    return log()


def builders(data: Path) -> list[int]:
    """The pids of the launcher's builders working in `data`: started detached before the hook
    that starts one exits, so a build that was (wrongly) started is seen here at once."""
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if "--build" in (proc.info["cmdline"] or []) and proc.cwd() == os.path.realpath(data):
                found.append(proc.info["pid"])
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return found


def wait_gone(pids: list[int], timeout: float = 180) -> None:
    import psutil

    _, alive = psutil.wait_procs([p for p in map(_process, pids) if p is not None], timeout=timeout)
    assert not alive, f"still running after {timeout}s: {[p.pid for p in alive]}"


def _process(pid: int):  # noqa: ANN202 - psutil.Process or None
    import psutil

    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None
