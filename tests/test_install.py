"""`claude-mem install` / `uninstall`: every test works in temp HOME and
CLAUDE_CONFIG_DIR folders, never the real ones."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from claude_mem.cli.app import cli
from claude_mem.hosts import claude_code
from claude_mem.hosts.hook_table import HOOK_COMMANDS, HOOK_EVENTS, HOOK_REGISTRATIONS, PRE_TOOL_MATCHER
from tests.conftest import cli_json

VENV_CLAUDE_MEM = os.path.join(os.path.dirname(sys.executable), "claude-mem")
OURS = [(event, sub) for event, sub, _ in HOOK_REGISTRATIONS]


@pytest.fixture
def claude_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    home = tmp_path / "home"
    config = home / ".claude"
    config.mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    return {"home": home, "config": config, "settings": config / "settings.json", "mcp": config / ".claude.json"}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def our_hooks(settings: dict) -> list[tuple[str, str, str | None, dict]]:
    """(event, hook command, matcher, entry) for every claude-mem entry in the file."""
    found = []
    for event, groups in settings.get("hooks", {}).items():
        for group in groups:
            for entry in group.get("hooks", []):
                sub = claude_code.hook_subcommand(entry.get("command"))
                if sub:
                    found.append((event, sub, group.get("matcher"), entry))
    return found


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak-*"))


EXISTING_SETTINGS = {
    "model": "opus",
    "permissions": {"allow": ["Bash(ls:*)"], "deny": ["WebFetch"]},
    "env": {"FOO": "bar"},
    "hooks": {
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo audited", "timeout": 5}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "/usr/local/bin/guard"}]}],
    },
}
EXISTING_CLAUDE_JSON = {
    "numStartups": 12,
    "userID": "abc",
    "projects": {"/src/app": {"allowedTools": []}},
    "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}},
}


def test_install_into_empty_config_registers_every_hook_and_the_mcp_server(claude_home):
    code, out, err = run("install")
    assert code == 0, err
    settings = load(claude_home["settings"])
    found = our_hooks(settings)
    assert sorted((e, s) for e, s, _, _ in found) == sorted(OURS)
    for event, sub, matcher, entry in found:
        assert entry == {"type": "command", "command": f"{VENV_CLAUDE_MEM} hook {sub}", "timeout": claude_code.HOOK_TIMEOUT_S}
        assert matcher == {"PostToolUse": "*", "PostToolUseFailure": "*", "PreToolUse": PRE_TOOL_MATCHER}.get(event)
        assert sub in HOOK_COMMANDS and event in HOOK_EVENTS[sub]  # install and the dispatcher agree
    assert load(claude_home["mcp"]) == {"mcpServers": {"claude-mem": {"type": "stdio", "command": VENV_CLAUDE_MEM, "args": ["mcp"]}}}
    assert "+ SessionStart" in out and "mcpServers.claude-mem" in out
    assert backups(claude_home["settings"]) == []  # nothing existed, so nothing to back up
    # ~/.claude.json holds account data: a file we create is private
    assert claude_home["mcp"].stat().st_mode & 0o077 == 0


def test_registered_command_really_runs_the_hook(claude_home, data_dir):
    """The command string written into settings.json, run through a shell as Claude Code does,
    records the prompt."""
    run("install")
    command = next(entry["command"] for event, _, _, entry in our_hooks(load(claude_home["settings"])) if event == "UserPromptSubmit")
    payload = {"session_id": "s-install", "cwd": str(claude_home["home"]), "hook_event_name": "UserPromptSubmit",
               "prompt": "hello from a hook", "transcript_path": "/dev/null"}
    proc = subprocess.run(["sh", "-c", command], input=json.dumps(payload), capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": "/usr/bin:/bin"})  # no venv on PATH: the absolute path must do
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    sessions = cli_json("sessions")
    assert [(s["claude_session_id"], s["user_prompt"], s["prompt_counter"]) for s in sessions] == [("s-install", "hello from a hook", 1)]


def test_install_keeps_existing_settings_hooks_and_servers(claude_home):
    claude_home["settings"].write_text(json.dumps(EXISTING_SETTINGS, indent=4))
    claude_home["mcp"].write_text(json.dumps(EXISTING_CLAUDE_JSON))
    before_settings = claude_home["settings"].read_bytes()
    before_mcp = claude_home["mcp"].read_bytes()

    code, out, err = run("install")
    assert code == 0, err
    settings = load(claude_home["settings"])
    for key in ("model", "permissions", "env"):
        assert settings[key] == EXISTING_SETTINGS[key]
    # The user's own hooks are still first in their events, untouched.
    for event, groups in EXISTING_SETTINGS["hooks"].items():
        assert settings["hooks"][event][: len(groups)] == groups
    # Ours joins the user's PreToolUse guard in a group of its own, after it.
    assert [(s, m) for e, s, m, _ in our_hooks(settings) if e == "PreToolUse"] == [("pre", PRE_TOOL_MATCHER)]
    assert len(settings["hooks"]["PreToolUse"]) == 2
    assert sorted((e, s) for e, s, _, _ in our_hooks(settings)) == sorted(OURS)

    claude = load(claude_home["mcp"])
    assert {k: v for k, v in claude.items() if k != "mcpServers"} == {k: v for k, v in EXISTING_CLAUDE_JSON.items() if k != "mcpServers"}
    assert claude["mcpServers"]["github"] == EXISTING_CLAUDE_JSON["mcpServers"]["github"]
    assert claude["mcpServers"]["claude-mem"]["args"] == ["mcp"]

    # One backup per changed file, holding exactly the old bytes.
    [settings_backup] = backups(claude_home["settings"])
    [mcp_backup] = backups(claude_home["mcp"])
    assert settings_backup.read_bytes() == before_settings
    assert mcp_backup.read_bytes() == before_mcp
    assert str(settings_backup) in out


# How the npm claude-mem 13.25.3 hooks in: `npx claude-mem install` enables its plugin in settings.json (its
# hooks then come from the plugin's hooks.json); commands in the shape its hooks.json uses, shortened.
PEER_COMMAND = ('_C="${CLAUDE_CONFIG_DIR:-$HOME/.claude}"; _P="$_C/plugins/marketplaces/thedotmack/plugin";'
                ' node "$_P/scripts/bun-runner.js" "$_P/scripts/worker-service.cjs" hook claude-code ')
PEER_SETTINGS = {
    "enabledPlugins": {"claude-mem@thedotmack": True, "other@market": True},
    "hooks": {
        "SessionStart": [{"matcher": "startup|resume|clear|compact",
                          "hooks": [{"type": "command", "shell": "bash", "command": PEER_COMMAND + "context", "timeout": 60}]}],
        "PostToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": PEER_COMMAND + "observation", "async": True}]}],
    },
}


def test_install_warns_about_the_npm_claude_mem_and_leaves_it_alone(claude_home):
    claude_home["settings"].write_text(json.dumps(PEER_SETTINGS))
    code, out, err = run("install")
    assert code == 0, err
    [warning] = [line for line in err.splitlines() if "npm claude-mem" in line]
    assert warning.startswith("warning: ") and "doubles the work" in warning
    assert 'enabledPlugins "claude-mem@thedotmack"' in warning and "PostToolUse, SessionStart" in warning
    assert "claude plugin disable claude-mem@thedotmack" in warning
    settings = load(claude_home["settings"])
    assert settings["enabledPlugins"] == PEER_SETTINGS["enabledPlugins"]
    for event, groups in PEER_SETTINGS["hooks"].items():
        assert settings["hooks"][event][: len(groups)] == groups  # theirs first and unchanged, ours added
    assert sorted((e, s) for e, s, _, _ in our_hooks(settings)) == sorted(OURS)
    assert json.loads(run("install", "--json")[1])["warnings"] == [warning.removeprefix("warning: ")]

    assert run("uninstall")[0] == 0  # takes out only ours
    assert load(claude_home["settings"]) == PEER_SETTINGS


def test_no_warning_without_the_npm_claude_mem(claude_home):
    claude_home["settings"].write_text(json.dumps({**EXISTING_SETTINGS, "enabledPlugins": {"claude-mem@thedotmack": False}}))
    code, _, err = run("install")
    assert code == 0 and "npm claude-mem" not in err


def test_install_twice_changes_nothing_the_second_time(claude_home):
    claude_home["settings"].write_text(json.dumps(EXISTING_SETTINGS))
    assert run("install")[0] == 0
    first = {p: p.read_bytes() for p in (claude_home["settings"], claude_home["mcp"])}
    mtimes = {p: p.stat().st_mtime_ns for p in first}
    files_before = sorted(claude_home["config"].iterdir())

    code, out, _ = run("install", "--json")
    assert code == 0
    summary = json.loads(out)
    assert summary["changed"] is False and all(not f["written"] and f["backup"] is None for f in summary["files"])
    assert {p: p.read_bytes() for p in first} == first
    assert {p: p.stat().st_mtime_ns for p in first} == mtimes
    assert sorted(claude_home["config"].iterdir()) == files_before  # no new backup either

    code, out, _ = run("install")
    assert "already installed" in out


def test_reinstall_after_the_venv_moved_updates_the_stale_path_in_place(claude_home):
    stale = "/old/venv/bin/claude-mem"
    settings = {
        "hooks": {
            "PostToolUse": [
                {"matcher": "*", "hooks": [{"type": "command", "command": f"{stale} save", "timeout": 30}]},
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"},
                                              {"type": "command", "command": f"{stale} save"}]},  # a duplicate
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "/usr/bin/python3 -m claude_mem summary"}]}],
        }
    }
    claude_home["settings"].write_text(json.dumps(settings))
    claude_home["mcp"].write_text(json.dumps({"mcpServers": {"claude-mem": {"type": "stdio", "command": stale, "args": ["mcp"],
                                                                            "env": {"CLAUDE_MEM_MODEL": "x"}}}}))
    code, out, err = run("install", "--json")
    assert code == 0, err
    changes = [c for f in json.loads(out)["files"] for c in f["changes"]]
    assert {(c["op"], c["event"]) for c in changes} >= {("update", "PostToolUse"), ("remove", "PostToolUse"), ("update", "Stop")}

    new = load(claude_home["settings"])
    post = new["hooks"]["PostToolUse"]
    # Updated where it was (to the `hook` group's form: older installs wrote `claude-mem save`), the
    # user's longer timeout kept; the duplicate gone, the user's hook kept.
    assert post[0] == {"matcher": "*", "hooks": [{"type": "command", "command": f"{VENV_CLAUDE_MEM} hook save", "timeout": 30}]}
    assert post[1] == {"matcher": "Bash", "hooks": [{"type": "command", "command": "echo mine"}]}
    assert new["hooks"]["Stop"] == [{"hooks": [{"type": "command", "command": f"{VENV_CLAUDE_MEM} hook summary"}]}]
    assert sorted((e, s) for e, s, _, _ in our_hooks(new)) == sorted(OURS)
    server = load(claude_home["mcp"])["mcpServers"]["claude-mem"]
    assert server == {"type": "stdio", "command": VENV_CLAUDE_MEM, "args": ["mcp"], "env": {"CLAUDE_MEM_MODEL": "x"}}


def test_uninstall_removes_exactly_what_install_added(claude_home):
    claude_home["settings"].write_text(json.dumps(EXISTING_SETTINGS))
    claude_home["mcp"].write_text(json.dumps(EXISTING_CLAUDE_JSON))
    assert run("install")[0] == 0
    code, out, err = run("uninstall")
    assert code == 0, err
    assert "- PostToolUseFailure" in out
    assert load(claude_home["settings"]) == EXISTING_SETTINGS
    assert load(claude_home["mcp"]) == EXISTING_CLAUDE_JSON
    code, out, _ = run("uninstall", "--json")  # a second time: nothing left to do
    assert json.loads(out)["changed"] is False


def test_uninstall_after_install_into_nothing_leaves_empty_objects(claude_home):
    run("install")
    run("uninstall")
    assert load(claude_home["settings"]) == {}
    assert load(claude_home["mcp"]) == {}


def test_uninstall_leaves_someone_elses_claude_mem_server_alone(claude_home):
    foreign = {"mcpServers": {"claude-mem": {"command": "npx", "args": ["-y", "some-other-memory-server"]}}}
    claude_home["mcp"].write_text(json.dumps(foreign))
    before = claude_home["mcp"].read_bytes()
    code, _, _ = run("uninstall")
    assert code == 0
    assert claude_home["mcp"].read_bytes() == before


@pytest.mark.parametrize("bad_file", ["settings", "mcp"])
def test_invalid_json_is_refused_and_nothing_is_written(claude_home, bad_file):
    other = "mcp" if bad_file == "settings" else "settings"
    claude_home[bad_file].write_text('{"model": "opus",,}')
    claude_home[other].write_text('{"keep": true}')
    before = {name: claude_home[name].read_bytes() for name in ("settings", "mcp")}
    for command in ("install", "uninstall"):
        code, out, err = run(command)
        assert code == 1
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "not valid JSON" in lines[0] and str(claude_home[bad_file]) in lines[0]
        assert {name: claude_home[name].read_bytes() for name in before} == before
    assert sorted(p.name for p in claude_home["config"].iterdir()) == [".claude.json", "settings.json"]


def test_hooks_of_the_wrong_type_are_refused(claude_home):
    claude_home["settings"].write_text(json.dumps({"hooks": ["not", "an", "object"]}))
    code, _, err = run("install")
    assert code == 1 and '"hooks" is not a JSON object' in err
    assert not claude_home["mcp"].exists()


def test_dry_run_shows_changes_and_writes_nothing(claude_home):
    code, out, _ = run("install", "--dry-run")
    assert code == 0
    assert "+ Stop:" in out and "would change" in out
    assert sorted(claude_home["config"].iterdir()) == []
    code, out, _ = run("install", "--dry-run", "--json")
    summary = json.loads(out)
    assert summary["dry_run"] is True and summary["changed"] is True
    assert [len(f["changes"]) for f in summary["files"]] == [len(HOOK_REGISTRATIONS), 1]
    assert sorted(claude_home["config"].iterdir()) == []


def test_project_scope_writes_the_project_files_only(claude_home, tmp_path):
    project = tmp_path / "my project"
    project.mkdir()
    code, out, err = run("install", "--project-dir", str(project))
    assert code == 0, err
    settings = load(project / ".claude" / "settings.json")
    assert sorted((e, s) for e, s, _, _ in our_hooks(settings)) == sorted(OURS)
    assert load(project / ".mcp.json") == {"mcpServers": {"claude-mem": {"type": "stdio", "command": VENV_CLAUDE_MEM, "args": ["mcp"]}}}
    assert not claude_home["settings"].exists() and not claude_home["mcp"].exists()

    code, _, _ = run("uninstall", "--project", str(project))  # as older versions spelt --project-dir
    assert code == 0
    assert load(project / ".claude" / "settings.json") == {} and load(project / ".mcp.json") == {}

    code, _, err = run("install", "--project-dir", str(tmp_path / "missing"))
    assert code == 2 and "does not exist" in err


def test_default_paths_without_claude_config_dir(claude_home, monkeypatch):
    monkeypatch.delenv("CLAUDE_CONFIG_DIR")
    assert run("install")[0] == 0
    assert our_hooks(load(claude_home["home"] / ".claude" / "settings.json"))
    assert "claude-mem" in load(claude_home["home"] / ".claude.json")["mcpServers"]
    assert not (claude_home["config"] / ".claude.json").exists()


def test_symlinked_settings_file_stays_a_symlink(claude_home, tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "settings.json").write_text('{"model": "opus"}')
    claude_home["settings"].symlink_to(dotfiles / "settings.json")
    assert run("install")[0] == 0
    assert claude_home["settings"].is_symlink()
    assert load(dotfiles / "settings.json")["model"] == "opus" and our_hooks(load(dotfiles / "settings.json"))


def test_paths_with_spaces_are_quoted_and_still_recognised():
    base = ["/opt/my venv/bin/claude-mem"]
    new, changes = claude_code.plan_hooks_install({}, base)
    commands = {entry["command"] for _, _, _, entry in our_hooks(new)}
    assert "'/opt/my venv/bin/claude-mem' hook save" in commands
    assert all(shlex.split(c)[0] == base[0] for c in commands)
    # The `python -m claude_mem` fallback is ours too, the bare names older installs wrote too, and
    # other tools' commands are not.
    assert claude_code.hook_subcommand("/usr/bin/python3 -m claude_mem hook new") == "new"
    assert claude_code.hook_subcommand("/usr/bin/python3 -m claude_mem new") == "new"
    assert claude_code.hook_subcommand("claude-mem summary") == "summary"
    assert claude_code.hook_subcommand("other-tool save") is None
    assert claude_code.hook_subcommand("other-tool hook save") is None
    assert claude_code.hook_subcommand("claude-mem save --verbose") is None
    again, more = claude_code.plan_hooks_install(new, base)
    assert again == new and more == []


def test_install_and_uninstall_through_the_console_script(tmp_path, data_dir):
    home = tmp_path / "h"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / "cfg")}
    proc = subprocess.run([VENV_CLAUDE_MEM, "install", "--json"], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["action"] == "install" and summary["changed"] is True and summary["command"] == VENV_CLAUDE_MEM
    assert [f["path"] for f in summary["files"]] == [str(home / "cfg" / "settings.json"), str(home / "cfg" / ".claude.json")]
    assert sorted((e, s) for e, s, _, _ in our_hooks(load(home / "cfg" / "settings.json"))) == sorted(OURS)

    (home / "cfg" / "settings.json").write_text("{oops")
    proc = subprocess.run([VENV_CLAUDE_MEM, "uninstall"], capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1 and "not valid JSON" in proc.stderr
    assert (home / "cfg" / "settings.json").read_text() == "{oops"
    assert "claude-mem" in load(home / "cfg" / ".claude.json")["mcpServers"]
