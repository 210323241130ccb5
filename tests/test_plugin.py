"""The repository as a Claude Code marketplace, and the plugin's launcher (plugin/claude-mem,
plugin/launcher.py) run as Claude Code runs a plugin's hooks: real processes, a real Python
without our dependencies, real pip. Builds here fail in seconds on purpose (pip finds nothing to
install); tests/test_e2e_plugin.py runs a real build under the real Claude Code CLI."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from claude_mem import __version__
from claude_mem.hosts import claude_code
from claude_mem.hosts.hook_table import HOOK_EVENTS, HOOK_REGISTRATIONS
from claude_mem.settings import DEFAULT_SKIP_TOOLS
from tests.claude_cli import CLAUDE
from tests.conftest import cli_json
from tests.plugin_helpers import (
    BIN,
    LAUNCHER,
    ROOT,
    adopt_environment,
    builders,
    builds,
    clone,
    launcher_env,
    run_launcher,
    wait_for_builds,
    wait_gone,
)

QUIET = '{"continue": true, "suppressOutput": true}'


def prompt(session: str = "plug-1", text: str = "make the build green") -> dict:
    return {"session_id": session, "hook_event_name": "UserPromptSubmit", "cwd": "/tmp/plugin-proj", "prompt": text,
            "prompt_id": f"{session}-p1"}


def tool(session: str = "plug-1", n: int = 1) -> dict:
    return {"session_id": session, "hook_event_name": "PostToolUse", "cwd": "/tmp/plugin-proj", "tool_name": "Bash",
            "tool_input": {"command": f"make test-{n}"}, "tool_response": {"stdout": "ok", "stderr": ""},
            "tool_use_id": f"toolu_plug_{session}_{n}", "prompt_id": f"{session}-p1"}


@pytest.fixture
def bare_python(tmp_path: Path) -> str:
    """A Python >= 3.11 with nothing installed: what the plugin meets on a user's machine."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    assert subprocess.run([str(python), "-c", "import lxml"], capture_output=True).returncode != 0
    return str(python)


# --- the manifests ---------------------------------------------------------------------------------

def manifests() -> tuple[dict, dict]:
    folder = ROOT / ".claude-plugin"
    return json.loads((folder / "marketplace.json").read_text()), json.loads((folder / "plugin.json").read_text())


def test_the_marketplace_lists_the_repository_as_its_plugin() -> None:
    marketplace, plugin = manifests()
    [entry] = marketplace["plugins"]
    assert entry["name"] == plugin["name"] and entry["source"] == "./"
    assert f"{plugin['name']}@{marketplace['name']}" == claude_code.OUR_PLUGIN
    # Third parties' plugins may not be named claude-... (the CLI refuses them); the command stays claude-mem.
    assert not plugin["name"].startswith(("claude", "anthropic"))
    assert plugin["version"] == __version__ and plugin["author"]["name"] and plugin["license"] == "MIT"
    assert plugin["mcpServers"] == {"claude-mem": {"command": "${CLAUDE_PLUGIN_ROOT}/plugin/claude-mem", "args": ["mcp"]}}
    assert f"mcp__plugin_{plugin['name']}_claude-mem__*" in DEFAULT_SKIP_TOOLS


def test_the_plugin_registers_the_hook_table_through_its_launcher() -> None:
    hooks = json.loads((ROOT / "hooks" / "hooks.json").read_text())["hooks"]
    registered = set()
    for event, groups in hooks.items():
        for group in groups:
            for entry in group["hooks"]:
                assert entry["type"] == "command" and 0 < entry["timeout"] <= 30
                program, *words = shlex.split(entry["command"])
                assert program == "${CLAUDE_PLUGIN_ROOT}/plugin/claude-mem"
                sub = words[-1]
                if sub == "plugin-check":
                    assert event == "SessionStart"
                    continue
                assert words == ["hook", sub] and event in HOOK_EVENTS[sub]
                registered.add((event, sub, group.get("matcher")))
    # The one list (hosts/hook_table.py HOOK_REGISTRATIONS): the plugin registers what `claude-mem install` does.
    assert registered == set(HOOK_REGISTRATIONS)
    assert os.access(ROOT / LAUNCHER, os.X_OK)


@pytest.mark.parametrize("manifest", [".", ".claude-plugin/plugin.json"])
def test_claude_code_validates_the_marketplace_and_the_plugin(manifest: str, tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg"),
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
    proc = subprocess.run([str(CLAUDE), "plugin", "validate", "--strict", "--json", manifest], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    report = json.loads(proc.stdout)
    assert proc.returncode == 0 and report["success"], proc.stdout[-3000:]
    assert report["manifest"]["errors"] == [] and report["manifest"]["warnings"] == []
    provided = {(h["event"], h["command"].split()[-1]) for h in report["provides"]["hooks"]}
    assert provided == {(e, s) for e, s, _ in HOOK_REGISTRATIONS} | {("SessionStart", "plugin-check")}
    assert [s["name"] for s in report["provides"]["mcpServers"]] == ["claude-mem"]
    assert report["provides"]["commands"] == ["memory:remember"]  # commands/remember.md: `/memory:remember TEXT`


# --- before the environment exists ----------------------------------------------------------------

@pytest.mark.slow  # a real (failing) build: python -m venv, then pip
def test_hooks_store_from_the_plugin_source_while_the_environment_cannot_be_built(tmp_path, data_dir, bare_python):
    plugin = clone(tmp_path / "clone")
    data = tmp_path / "plugin-data"
    env = launcher_env(tmp_path, data, CLAUDE_MEM_PYTHON=bare_python)

    first = run_launcher(plugin, "new", prompt(), env)
    second = run_launcher(plugin, "save", tool(), env)
    assert (first.returncode, first.stderr, second.returncode, second.stderr) == (0, "", 0, ""), (first, second)
    assert second.stdout.strip() == QUIET
    [row] = cli_json("queue")
    assert (row["session_id"], row["kind"], row["tool_use_id"]) == ("plug-1", "tool", "toolu_plug_plug-1_1")
    assert [s["user_prompt"] for s in cli_json("sessions")] == ["make the build green"]
    assert (data / "python").read_text().strip() == bare_python

    log = wait_for_builds(data, 1)
    assert builds(log) == 1 and bare_python in log, log  # two hooks, one build
    reason = (data / "build-failed").read_text().strip()
    assert reason.startswith("pip install failed") and "hatchling" in reason, reason
    assert not list(data.glob("env-*")) and not (data / "env").exists()

    # A hook does not retry a failed build; the session start does, and says so in one line.
    assert run_launcher(plugin, "save", tool(n=2), env).returncode == 0
    assert builders(data) == [] and builds((data / "build.log").read_text()) == 1
    check = run_launcher(plugin, "plugin-check", "{}", env)
    assert check.returncode == 0 and check.stderr == ""
    [line] = check.stdout.splitlines()
    said = json.loads(line)["systemMessage"]
    assert "could not build its Python environment" in said and reason in said and str(data / "build.log") in said
    assert builds(wait_for_builds(data, 2)) == 2
    assert len(cli_json("queue")) == 2

    # The MCP server needs the environment: with none coming it says why, in one line. (Its
    # stdin stays open, as Claude Code's does: a server whose session hung up just exits.)
    with subprocess.Popen([str(plugin / LAUNCHER), "mcp"], stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env) as mcp:
        stderr = mcp.stderr.read()  # to its exit, stdin held open meanwhile
        assert mcp.wait(timeout=60) == 1
    assert len(stderr.splitlines()) == 1 and "not ready (pip install failed" in stderr, stderr


@pytest.mark.slow  # a real (failing) build: python -m venv, then pip
def test_two_sessions_starting_at_once_build_once(tmp_path, data_dir, bare_python):
    plugin = clone(tmp_path / "clone")
    data = tmp_path / "plugin-data"
    env = launcher_env(tmp_path, data, CLAUDE_MEM_PYTHON=bare_python)
    results: list[subprocess.CompletedProcess[str]] = []
    starts = [threading.Thread(target=lambda: results.append(run_launcher(plugin, "plugin-check", "{}", env)))
              for _ in range(2)]
    for thread in starts:
        thread.start()
    for thread in starts:
        thread.join()
    assert [r.returncode for r in results] == [0, 0]
    for result in results:
        assert "setting up its Python environment" in json.loads(result.stdout)["systemMessage"]
    wait_gone(builders(data))  # every builder either session started has ended (a second one by losing the lock)
    assert builds(wait_for_builds(data, 1)) == 1


def test_without_a_usable_python_the_session_start_says_so_and_no_hook_fails(tmp_path, data_dir):
    plugin = clone(tmp_path / "clone")
    old = tmp_path / "old-python"
    old.mkdir()
    (old / "python3").write_text("#!/bin/sh\nexit 1\n")  # answers the version check as Python 3.8 would
    (old / "python3").chmod(0o755)
    env = {**launcher_env(tmp_path, tmp_path / "plugin-data"), "PATH": str(old)}

    check = run_launcher(plugin, "plugin-check", "{}", env)
    assert check.returncode == 0 and check.stderr == ""
    [line] = check.stdout.splitlines()
    assert "needs Python 3.11 or newer" in json.loads(line)["systemMessage"] and "CLAUDE_MEM_PYTHON" in line
    for command, payload in (("context", {}), ("new", prompt()), ("save", tool())):
        proc = run_launcher(plugin, command, payload, env)
        assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    mcp = run_launcher(plugin, "mcp", "", env)
    assert mcp.returncode == 1 and len(mcp.stderr.splitlines()) == 1 and "Python 3.11" in mcp.stderr


# --- with an environment -------------------------------------------------------------------------------

def test_a_current_environment_runs_every_hook_directly(tmp_path, data_dir):
    plugin = clone(tmp_path / "clone")
    data = tmp_path / "plugin-data"
    adopt_environment(data)
    # No Python on PATH: the fast path needs none (the environment's claude-mem starts its own).
    env = {**launcher_env(tmp_path, data), "PATH": str(tmp_path / "nothing-here")}
    proc = run_launcher(plugin, "save", tool(), env)
    assert (proc.returncode, proc.stderr, proc.stdout.strip()) == (0, "", QUIET)
    assert [r["tool_use_id"] for r in cli_json("queue")] == ["toolu_plug_plug-1_1"]
    # The session start's check runs on the environment's Python, and has nothing to say.
    check = run_launcher(plugin, "plugin-check", "{}", env)
    assert (check.returncode, check.stdout, check.stderr) == (0, "", "")
    assert not (data / "build.log").exists()


@pytest.mark.slow  # a real (failing) build: python -m venv, then pip
def test_a_new_version_rebuilds_while_the_previous_environment_serves(tmp_path, data_dir, bare_python):
    plugin = clone(tmp_path / "clone")
    data = tmp_path / "plugin-data"
    adopted = adopt_environment(data)
    # The previous environment's claude-mem notes each run, then is the test venv's.
    wrapper = adopted / "bin" / "claude-mem"
    wrapper.unlink()
    wrapper.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path / 'ran'}\nexec {BIN / 'claude-mem'} \"$@\"\n")
    wrapper.chmod(0o755)
    later = time.time() + 5
    os.utime(plugin / ".claude-plugin" / "plugin.json", (later, later))  # a new version was installed
    env = launcher_env(tmp_path, data, CLAUDE_MEM_PYTHON=bare_python)

    proc = run_launcher(plugin, "save", tool(), env)
    assert (proc.returncode, proc.stderr, proc.stdout.strip()) == (0, "", QUIET)
    assert (tmp_path / "ran").read_text().split() == ["save"]
    assert [r["tool_use_id"] for r in cli_json("queue")] == ["toolu_plug_plug-1_1"]
    log = wait_for_builds(data, 1)
    assert builds(log) == 1 and "pip install failed" in (data / "build-failed").read_text()
    assert os.readlink(data / "env") == adopted.name  # a failed build leaves the working one in place


def test_install_and_the_plugin_warn_about_each_other(tmp_path, monkeypatch):
    cfg = tmp_path / "cfg"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(cfg))
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    cfg.mkdir()
    (cfg / "settings.json").write_text(json.dumps({"enabledPlugins": {claude_code.OUR_PLUGIN: True}}))
    assert claude_code.installed_beside_plugin() == []
    result = claude_code.install(base=["/opt/cm/bin/claude-mem"])
    [warning] = result.warnings
    assert claude_code.OUR_PLUGIN in warning and "every hook runs twice" in warning and str(cfg / "settings.json") in warning
    [beside] = claude_code.installed_beside_plugin()
    assert str(cfg / "settings.json") in beside and "`claude-mem uninstall`" in beside
    claude_code.uninstall()
    assert claude_code.installed_beside_plugin() == []
