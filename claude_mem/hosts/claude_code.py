"""Registering claude-mem with Claude Code: hooks in settings.json, the MCP server in
.claude.json (user scope) or .mcp.json (project scope), and taking both out again.

Rules that keep a user's configuration safe:
- only our own entries are touched, recognised by their command (`... claude-mem hook <name>`, or
  `... claude-mem <name>` as older installs wrote it), so a re-install after the venv moved (or
  an upgrade) updates the entry in place instead of adding a second hook, and a user's edits to
  our entry (a longer timeout, a narrower matcher) survive;
- nothing is written when nothing changes (idempotent), and a changed file is first copied to
  `<file>.bak-<timestamp>`;
- a file that is not valid JSON is never rewritten: the whole operation stops before writing
  anything (both files are read and planned first).

No click here: the CLI in `claude_mem/cli/install.py` only parses options and prints.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from claude_mem import jsonfile
from claude_mem.hosts.hook_table import HOOK_COMMANDS, HOOK_GROUP, HOOK_REGISTRATIONS

SERVER_NAME = "claude-mem"
HOOK_TIMEOUT_S = 10

# Ours: mentions claude-mem/claude_mem, then ends with one of our hook commands (`hook save`, or
# `save` as older installs wrote it).
_OUR_HOOK = re.compile(r"(?:claude-mem|claude_mem)\S*\s+(?:" + HOOK_GROUP + r"\s+)?(" + "|".join(HOOK_COMMANDS) + r")\s*$")

# This repository is also a Claude Code marketplace (.claude-plugin/marketplace.json) whose plugin
# runs the same hooks and MCP server: with both, every hook runs twice (events are stored once).
OUR_PLUGIN = "memory@claude-mem"

# The npm claude-mem (thedotmack/claude-mem) installs as the plugin "claude-mem" of the marketplace
# "thedotmack"; its hooks run its worker-service.cjs (older versions wrote *-hook.js into settings).
NPM_PLUGIN = "claude-mem@thedotmack"
_NPM_HOOK = re.compile(r"thedotmack|worker-service\.cjs|claude-mem/plugin/scripts/")


class InstallError(Exception):
    """A configuration file cannot be changed safely; nothing was written."""


@dataclass
class Change:
    op: str  # add | update | remove
    target: str  # "hook" or "mcp_server"
    event: str | None  # the hook event, for hooks
    command: str  # the command after the change (for remove: the one removed)
    previous: str | None = None  # for update: the command before
    where: str | None = None  # where it is, when not a hook event or mcpServers (Codex's config.toml)

    def describe(self) -> str:
        where = self.where or (self.event if self.target == "hook" else f"mcpServers.{SERVER_NAME}")
        if self.op == "add":
            return f"+ {where}: {self.command}"
        if self.op == "update":
            return f"~ {where}: {self.previous} -> {self.command}"
        return f"- {where}: {self.command}"


@dataclass
class FileResult:
    path: str
    existed: bool
    changes: list[Change] = field(default_factory=list)
    backup: str | None = None
    written: bool = False

    @property
    def changed(self) -> bool:
        return bool(self.changes)


@dataclass
class Result:
    action: str  # install | uninstall
    scope: str  # user | project
    dry_run: bool
    command: str  # how our hooks start claude-mem
    files: list[FileResult]
    warnings: list[str] = field(default_factory=list)  # other tools' hooks that duplicate ours, left alone

    @property
    def changed(self) -> bool:
        return any(f.changed for f in self.files)

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "scope": self.scope,
            "dry_run": self.dry_run,
            "changed": self.changed,
            "command": self.command,
            "warnings": self.warnings,
            "files": [
                {"path": f.path, "existed": f.existed, "changed": f.changed, "written": f.written, "backup": f.backup,
                 "changes": [{"op": c.op, "target": c.target, "event": c.event, "command": c.command, "previous": c.previous}
                             for c in f.changes]}
                for f in self.files
            ],
        }


# --- where things go ---------------------------------------------------------------------------

def claude_mem_argv() -> list[str]:
    """How Claude Code should start this claude-mem: an absolute path, so hooks work whatever
    PATH Claude Code runs with. Not resolved through symlinks: a venv's python is a symlink to
    the system one, which would lose the venv."""
    bindir = os.path.dirname(sys.executable)
    for name in ("claude-mem", "claude-mem.exe"):
        beside = os.path.join(bindir, name)
        if os.path.isfile(beside) and os.access(beside, os.X_OK):
            return [os.path.abspath(beside)]
    found = shutil.which("claude-mem")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "claude_mem"]


def config_dir() -> str:
    explicit = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return os.path.abspath(os.path.expanduser(explicit)) if explicit else os.path.expanduser("~/.claude")


def target_paths(project: str | None) -> tuple[str, str]:
    """(settings file for hooks, file for the MCP server) of the chosen scope."""
    if project:
        root = os.path.abspath(project)
        return os.path.join(root, ".claude", "settings.json"), os.path.join(root, ".mcp.json")
    explicit = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    # Claude Code keeps user-scope MCP servers in ~/.claude.json, or inside CLAUDE_CONFIG_DIR when set.
    mcp_file = os.path.join(config_dir(), ".claude.json") if explicit else os.path.expanduser("~/.claude.json")
    return os.path.join(config_dir(), "settings.json"), mcp_file


# --- recognising our entries -------------------------------------------------------------------

def hook_subcommand(command: Any) -> str | None:
    """The claude-mem hook command (context/new/pre/save/summary) a hook command runs, or None if
    it is not one of ours."""
    if not isinstance(command, str):
        return None
    match = _OUR_HOOK.search(command)
    return match.group(1) if match else None


def is_our_server(entry: Any) -> bool:
    if not isinstance(entry, dict):
        return False
    args = entry.get("args")
    args = [a for a in args if isinstance(a, str)] if isinstance(args, list) else []
    words = [entry.get("command") if isinstance(entry.get("command"), str) else "", *args]
    return bool(args) and args[-1] == "mcp" and any("claude-mem" in w or "claude_mem" in w for w in words)


def npm_hooks(settings: dict[str, Any]) -> list[str]:
    """How the npm claude-mem is hooked into these settings: its plugin enabled, or its hook
    commands written in (never ours, which `hook_subcommand` recognises)."""
    found = []
    plugins = settings.get("enabledPlugins")
    if isinstance(plugins, dict) and plugins.get(NPM_PLUGIN):
        found.append(f'enabledPlugins "{NPM_PLUGIN}"')
    events = sorted({event for event, command in _hook_commands(settings)
                     if hook_subcommand(command) is None and _NPM_HOOK.search(command)})
    if events:
        found.append(f"its hooks on {', '.join(events)}")
    return found


def _hook_commands(settings: dict[str, Any]) -> list[tuple[str, str]]:
    """(event, command) of every command hook in a settings object, skipping malformed parts."""
    hooks = settings.get("hooks")
    found = []
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            entries = group.get("hooks") if isinstance(group, dict) else None
            for entry in entries if isinstance(entries, list) else ():
                if isinstance(entry, dict) and isinstance(entry.get("command"), str):
                    found.append((event, entry["command"]))
    return found


def _readable_settings(paths: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(path, content) of each settings file that can be read. One that cannot is skipped: the
    warnings are notices, and the install itself reads its own file strictly."""
    found = []
    for path in dict.fromkeys(paths):
        try:
            found.append((path, read_json_object(path)[0]))
        except InstallError:
            continue
    return found


def npm_warnings(paths: list[str]) -> list[str]:
    """One line per settings file in which the npm claude-mem is hooked in."""
    warnings = []
    for path, settings in _readable_settings(paths):
        found = npm_hooks(settings)
        if found:
            disable = f"`claude plugin disable {NPM_PLUGIN}`" if any(NPM_PLUGIN in f for f in found) else "removing its hooks"
            warnings.append(f"the npm claude-mem (thedotmack/claude-mem) is also installed ({' and '.join(found)} in {path}):"
                            f" running both doubles the work, two observers and their model calls for every session;"
                            f" {disable} stops it (claude-mem never changes another tool's settings)")
    return warnings


def plugin_warnings(paths: list[str]) -> list[str]:
    """One line per settings file that enables our plugin: `claude-mem install` then doubles it."""
    return [f"the claude-mem plugin ({OUR_PLUGIN}) is enabled in {path}: it runs the same hooks, so with both every hook"
            f" runs twice; keep one (`claude plugin uninstall {OUR_PLUGIN}`, or `claude-mem uninstall`)"
            for path, settings in _readable_settings(paths)
            if isinstance(settings.get("enabledPlugins"), dict) and settings["enabledPlugins"].get(OUR_PLUGIN)]


def installed_beside_plugin(project: str | None = None) -> list[str]:
    """For the plugin's session-start check: one line per settings file in which `claude-mem
    install` registered our hooks too (user scope, and the project's: CLAUDE_PROJECT_DIR)."""
    project = project if project is not None else os.environ.get("CLAUDE_PROJECT_DIR")
    user = target_paths(None)[0]
    paths = [user, target_paths(project)[0]] if project else [user]
    return [f"claude-mem's hooks are also in {path} (`claude-mem install`), so every hook runs twice:"
            f" `claude-mem uninstall{'' if path == user else f' --project-dir {project}'}` removes them, the plugin does the same"
            for path, settings in _readable_settings(paths)
            if any(hook_subcommand(command) for _, command in _hook_commands(settings))]


# --- planning changes (pure: dict in, dict out) -------------------------------------------------

def plan_hooks_install(settings: dict[str, Any], base: list[str], path: str = "settings.json") -> tuple[dict[str, Any], list[Change]]:
    new = copy.deepcopy(settings)
    changes: list[Change] = []
    hooks = new.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: \"hooks\" is not a JSON object; fix it by hand, then run again")
    for event, sub, matcher in HOOK_REGISTRATIONS:
        wanted = shlex.join([*base, HOOK_GROUP, sub])
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InstallError(f"{path}: \"hooks.{event}\" is not a JSON list; fix it by hand, then run again")
        kept = False
        emptied: list[Any] = []
        for group, entries, entry in _our_entries(groups, sub):
            if kept:
                entries.remove(entry)  # a second copy of ours would run the hook twice
                changes.append(Change("remove", "hook", event, entry["command"]))
                if not entries:
                    emptied.append(group)
                continue
            kept = True
            if entry["command"] != wanted:
                # A stale path (moved venv, reinstalled Python): fix it in place, keep the rest.
                changes.append(Change("update", "hook", event, wanted, previous=entry["command"]))
                entry["command"] = wanted
                entry.setdefault("type", "command")
        _drop_groups(groups, emptied)
        if not kept:
            group = {"hooks": [{"type": "command", "command": wanted, "timeout": HOOK_TIMEOUT_S}]}
            if matcher is not None:
                group = {"matcher": matcher, **group}
            groups.append(group)
            changes.append(Change("add", "hook", event, wanted))
    return new, changes


def plan_hooks_uninstall(settings: dict[str, Any], path: str = "settings.json") -> tuple[dict[str, Any], list[Change]]:
    new = copy.deepcopy(settings)
    changes: list[Change] = []
    hooks = new.get("hooks")
    if hooks is None:
        return new, changes
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: \"hooks\" is not a JSON object; fix it by hand, then run again")
    for event, sub, _ in HOOK_REGISTRATIONS:
        groups = hooks.get(event)
        if not isinstance(groups, list):
            continue
        emptied: list[Any] = []
        for group, entries, entry in _our_entries(groups, sub):
            entries.remove(entry)
            changes.append(Change("remove", "hook", event, entry["command"]))
            if not entries:
                emptied.append(group)
        if emptied:
            _drop_groups(groups, emptied)
            if not groups:
                del hooks[event]
    if changes and not hooks:
        del new["hooks"]
    return new, changes


def _our_entries(groups: list[Any], sub: str) -> list[tuple[Any, list[Any], dict[str, Any]]]:
    """(matcher group, its hook list, entry) for each entry of an event's groups that runs our
    hook command `sub`; malformed groups and entries are passed over."""
    found = []
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(entries, list):
            continue
        found += [(group, entries, e) for e in entries if isinstance(e, dict) and hook_subcommand(e.get("command")) == sub]
    return found


def _drop_groups(groups: list[Any], emptied: list[Any]) -> None:
    # Only matcher groups we emptied go: a user's own empty group is not ours to tidy.
    groups[:] = [g for g in groups if not any(g is e for e in emptied)]


def plan_mcp_install(config: dict[str, Any], base: list[str], path: str = ".claude.json") -> tuple[dict[str, Any], list[Change]]:
    new = copy.deepcopy(config)
    servers = new.setdefault("mcpServers", {})
    if not isinstance(servers, dict):
        raise InstallError(f"{path}: \"mcpServers\" is not a JSON object; fix it by hand, then run again")
    wanted = {"type": "stdio", "command": base[0], "args": [*base[1:], "mcp"]}
    current = servers.get(SERVER_NAME)
    command = shlex.join([*base, "mcp"])
    if current is None:
        servers[SERVER_NAME] = wanted
        return new, [Change("add", "mcp_server", None, command)]
    merged = {**current, **wanted} if is_our_server(current) else wanted  # keep e.g. a user's "env" on ours
    if merged == current:
        return new, []
    servers[SERVER_NAME] = merged
    previous = _server_command(current)
    return new, [Change("update", "mcp_server", None, command, previous=previous)]


def plan_mcp_uninstall(config: dict[str, Any], path: str = ".claude.json") -> tuple[dict[str, Any], list[Change]]:
    new = copy.deepcopy(config)
    servers = new.get("mcpServers")
    if not isinstance(servers, dict) or not is_our_server(servers.get(SERVER_NAME)):
        return new, []  # absent, or someone else's server of that name: not ours to remove
    removed = servers.pop(SERVER_NAME)
    if not servers:
        del new["mcpServers"]  # install created it, or it held only ours
    return new, [Change("remove", "mcp_server", None, _server_command(removed))]


def _server_command(entry: Any) -> str:
    if not isinstance(entry, dict):
        return json.dumps(entry)
    args = listed if isinstance(listed := entry.get("args"), list) else []
    return shlex.join([str(entry.get("command", "")), *map(str, args)])


# --- files ---------------------------------------------------------------------------------------

def read_json_object(path: str) -> tuple[dict[str, Any], bool]:
    """(content, existed). Refuses anything but a JSON object: rewriting a file we could not
    parse would lose what is in it."""
    try:
        return jsonfile.read_json_object(path)
    except jsonfile.JSONFileError as exc:
        raise InstallError(f"{exc}; nothing was changed, fix the file and run again") from None


def backup_path(path: str) -> str:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = f"{path}.bak-{stamp}"
    n = 1
    while os.path.exists(candidate):
        n += 1
        candidate = f"{path}.bak-{stamp}-{n}"
    return candidate


# --- the two operations ----------------------------------------------------------------------------

def install(project: str | None = None, *, dry_run: bool = False, base: list[str] | None = None) -> Result:
    """Register the hooks and the MCP server. Raises InstallError, writing nothing, if a file
    cannot be changed safely."""
    base = base or claude_mem_argv()
    settings_path, mcp_path = target_paths(project)
    settings, settings_existed = read_json_object(settings_path)
    mcp, mcp_existed = read_json_object(mcp_path)
    new_settings, hook_changes = plan_hooks_install(settings, base, settings_path)
    new_mcp, mcp_changes = plan_mcp_install(mcp, base, mcp_path)
    files = [
        _apply(settings_path, settings_existed, new_settings, hook_changes, dry_run),
        _apply(mcp_path, mcp_existed, new_mcp, mcp_changes, dry_run, private=project is None),
    ]
    # Plugins enabled for the user run in every project too.
    scopes = [settings_path, target_paths(None)[0]]
    warnings = npm_warnings(scopes) + plugin_warnings(scopes)
    return Result("install", "project" if project else "user", dry_run, shlex.join(base), files, warnings)


def uninstall(project: str | None = None, *, dry_run: bool = False) -> Result:
    """Remove exactly what `install` adds; everything else in the files stays as it is."""
    settings_path, mcp_path = target_paths(project)
    settings, settings_existed = read_json_object(settings_path)
    mcp, mcp_existed = read_json_object(mcp_path)
    new_settings, hook_changes = plan_hooks_uninstall(settings, settings_path)
    new_mcp, mcp_changes = plan_mcp_uninstall(mcp, mcp_path)
    files = [
        _apply(settings_path, settings_existed, new_settings, hook_changes, dry_run),
        _apply(mcp_path, mcp_existed, new_mcp, mcp_changes, dry_run, private=project is None),
    ]
    return Result("uninstall", "project" if project else "user", dry_run, shlex.join(claude_mem_argv()), files)


def _apply(path: str, existed: bool, data: dict[str, Any], changes: list[Change], dry_run: bool,
           private: bool = False) -> FileResult:
    result = FileResult(path, existed, changes)
    if not changes or dry_run:
        return result
    if existed:
        result.backup = backup_path(path)
        shutil.copy2(os.path.realpath(path), result.backup)  # copy2 keeps the mode: .claude.json holds secrets
    # ~/.claude.json holds account data and tokens: a new one is private to its owner. A file
    # that was there keeps its permissions; a symlinked one (dotfile managers) its link.
    os.makedirs(os.path.dirname(os.path.realpath(path)), exist_ok=True)
    jsonfile.write_json_atomic(path, data, mode=0o600 if private else 0o644, keep_mode=True, indent=2)
    result.written = True
    return result
