"""Registering claude-mem with the Codex CLI (`install --codex`): the hooks in
`$CODEX_HOME/hooks.json`, the MCP server and the hooks' trust in `$CODEX_HOME/config.toml`.

Codex skips an untrusted hook without a word, so install also records each hook's trust the way
Codex's `/hooks` screen does (PLATFORM-NOTES, Codex CLI): under
`[hooks.state."<hooks.json>:<event>:<group>:<handler>"]` the `trusted_hash` of the hook's
canonical JSON. The same rules as for Claude Code (hosts/claude_code.py) keep a user's files safe:
only our entries are touched, a changed file is backed up first, nothing is written when nothing
changes or a file cannot be parsed, and uninstall takes out exactly what install put in (a file
install created and that is left empty goes too). config.toml is edited with tomlkit, which keeps
comments and order.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shlex
import shutil
from typing import Any

import tomlkit
from tomlkit.exceptions import TOMLKitError

from claude_mem import jsonfile
from claude_mem.hosts.claude_code import (
    HOOK_TIMEOUT_S,
    SERVER_NAME,
    Change,
    FileResult,
    InstallError,
    Result,
    backup_path,
    claude_mem_argv,
    read_json_object,
)
from claude_mem.hosts.hook_table import HOOK_COMMANDS, HOOK_GROUP
from claude_mem.hosts.payloads import CODEX, HOST_FLAG

# Codex's events, our command and its timeout for each; no matcher: `pre` and `save` ignore
# what they do not know. Codex gives a SessionEnd hook 3 s at most, and hashes the timeout it
# uses: a longer one written here would never count as trusted.
CODEX_HOOKS: tuple[tuple[str, str, int], ...] = (
    ("SessionStart", "context", HOOK_TIMEOUT_S),
    ("UserPromptSubmit", "new", HOOK_TIMEOUT_S),
    ("PreToolUse", "pre", HOOK_TIMEOUT_S),
    ("PostToolUse", "save", HOOK_TIMEOUT_S),
    ("Stop", "summary", HOOK_TIMEOUT_S),
    ("SessionEnd", "summary", 3),
)
_OURS = re.compile(r"(?:claude-mem|claude_mem)\S*\s+(?:" + HOOK_GROUP + r"\s+)?(" + "|".join(HOOK_COMMANDS)
                   + rf")\s+{HOST_FLAG}\s+{CODEX}\s*$")
# How long Codex lets our MCP server start before giving up on it (ours imports mcp first: seconds
# on a loaded machine). Not `required`: Codex does not wait for it (its tools join the session's
# requests once it is up) and a server that fails never stops a Codex session from starting.
MCP_STARTUP_S = 20


def codex_home() -> str:
    explicit = os.environ.get("CODEX_HOME", "").strip()
    return os.path.abspath(os.path.expanduser(explicit)) if explicit else os.path.expanduser("~/.codex")


def paths() -> tuple[str, str]:
    """(hooks.json, config.toml) of CODEX_HOME."""
    home = codex_home()
    return os.path.join(home, "hooks.json"), os.path.join(home, "config.toml")


def hook_command(base: list[str], sub: str) -> str:
    return shlex.join([*base, HOOK_GROUP, sub, HOST_FLAG, CODEX])


def our_subcommand(command: Any) -> str | None:
    match = _OURS.search(command) if isinstance(command, str) else None
    return match.group(1) if match else None


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def trust_hash(event: str, handler: dict[str, Any], matcher: str | None = None) -> str:
    """The hash Codex records when a hook is trusted: sha256 of the group's canonical JSON with
    this one handler (sorted keys, no spaces; a handler's timeout defaults to 600 s)."""
    identity: dict[str, Any] = {"event_name": _snake(event), "hooks": [
        {"type": "command", "command": handler.get("command"), "timeout": handler.get("timeout") or 600,
         "async": bool(handler.get("async", False))}]}
    if matcher is not None:
        identity["matcher"] = matcher
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def our_hooks(hooks_file: dict[str, Any], hooks_path: str) -> list[tuple[str, str, str]]:
    """(trust key, trust hash, hook command) of each of our handlers in a hooks.json object."""
    found = []
    hooks = hooks_file.get("hooks")
    for event, groups in hooks.items() if isinstance(hooks, dict) else ():
        for g, group in enumerate(groups if isinstance(groups, list) else ()):
            entries = group.get("hooks") if isinstance(group, dict) else None
            for h, entry in enumerate(entries if isinstance(entries, list) else ()):
                if isinstance(entry, dict) and our_subcommand(entry.get("command")):
                    matcher = group.get("matcher") if isinstance(group.get("matcher"), str) else None
                    found.append((f"{hooks_path}:{_snake(event)}:{g}:{h}", trust_hash(event, entry, matcher),
                                  entry["command"]))
    return found


# --- planning (pure) --------------------------------------------------------------------------

def plan_hooks(hooks_file: dict[str, Any], base: list[str] | None, path: str) -> tuple[dict[str, Any], list[Change]]:
    """hooks.json with our handlers (base given) or without them (base None)."""
    new = copy.deepcopy(hooks_file)
    hooks = new.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise InstallError(f"{path}: \"hooks\" is not a JSON object; fix it by hand, then run again")
    changes: list[Change] = []
    for event, sub, timeout in CODEX_HOOKS:
        groups = hooks.setdefault(event, [])
        if not isinstance(groups, list):
            raise InstallError(f"{path}: \"hooks.{event}\" is not a JSON list; fix it by hand, then run again")
        wanted = hook_command(base, sub) if base else None
        kept = False
        for group in list(groups):
            entries = listed if isinstance(group, dict) and isinstance(listed := group.get("hooks"), list) else []
            for entry in list(entries):
                if not isinstance(entry, dict) or our_subcommand(entry.get("command")) != sub:
                    continue
                if wanted and not kept:
                    kept = True
                    if entry["command"] != wanted:
                        changes.append(Change("update", "hook", event, wanted, previous=entry["command"]))
                        entry["command"] = wanted
                    continue
                entries.remove(entry)
                changes.append(Change("remove", "hook", event, entry["command"]))
                if not entries:
                    groups.remove(group)
        if wanted and not kept:
            groups.append({"hooks": [{"type": "command", "command": wanted, "timeout": timeout}]})
            changes.append(Change("add", "hook", event, wanted))
        if not groups:
            del hooks[event]
    if not hooks:
        del new["hooks"]
    return new, changes


def plan_config(text: str, trusted: list[tuple[str, str, str]], drop: list[str], base: list[str] | None,
                path: str) -> tuple[str, list[Change]]:
    """config.toml's text with our MCP server and hook trust (base given), or without them:
    `trusted` are the (key, hash, command) to record, `drop` the trust keys to take out."""
    try:
        doc = tomlkit.parse(text)
    except TOMLKitError as exc:
        raise InstallError(f"{path}: not valid TOML ({exc}); nothing was changed, fix the file and run again") from None
    changes: list[Change] = []
    state = _table(doc, ("hooks", "state"), create=bool(trusted))
    for key in drop if state is not None else ():
        if key in state and key not in {k for k, _, _ in trusted}:
            del state[key]
            changes.append(Change("remove", "hook", None, key, where=f"hooks.state.{key}"))
    for key, digest, _ in trusted:
        entry = state.get(key)
        if not isinstance(entry, dict) or entry.get("trusted_hash") != digest:
            trust = tomlkit.table()
            trust["trusted_hash"] = digest
            state[key] = trust
            changes.append(Change("add", "hook", None, digest, where=f"hooks.state.{key}"))
    servers = _table(doc, ("mcp_servers",), create=bool(base))
    current = servers.get(SERVER_NAME) if servers is not None else None
    where = f"mcp_servers.{SERVER_NAME}"
    if base:
        wanted = _server(base)
        if current is not None and _is_ours(current):
            # Ours already: its keys set in place, a user's own (`required`, `enabled`) kept.
            stale = {k: v for k, v in wanted.items() if current.get(k) != v}
            for key, value in stale.items():
                current[key] = value
            if stale:
                changes.append(Change("update", "mcp_server", None, shlex.join([*base, "mcp"]), where=where))
        elif current is None or current.unwrap() != wanted.unwrap():
            servers[SERVER_NAME] = wanted
            changes.append(Change("add" if current is None else "update", "mcp_server", None,
                                  shlex.join([*base, "mcp"]), where=where))
    elif current is not None and _is_ours(current):
        del servers[SERVER_NAME]
        changes.append(Change("remove", "mcp_server", None, shlex.join([str(current.get("command")), "mcp"]), where=where))
    if changes:
        _prune(doc)
    out = tomlkit.dumps(doc)
    if not base and changes:
        out = out.rstrip("\n") + "\n" if out.strip() else ""  # tomlkit leaves the blank line before a removed table
    return out, changes


def _table(doc: Any, names: tuple[str, ...], create: bool) -> Any:
    """The table at `names`, made (as a super-table, so no empty header is written) when
    `create`; None when it is not there."""
    node = doc
    for name in names:
        if name not in node:
            if not create:
                return None
            node[name] = tomlkit.table(True)
        node = node[name]
        if not isinstance(node, dict):
            raise InstallError(f"config.toml: {'.'.join(names)} is not a table; fix it by hand, then run again")
    return node


def _prune(doc: Any) -> None:
    """Drop the tables that hold nothing now that ours are out (install makes them as super-tables,
    which have no header of their own)."""
    hooks = doc.get("hooks")
    if isinstance(hooks, dict) and "state" in hooks and not hooks["state"]:
        del hooks["state"]
    for name in ("hooks", "mcp_servers"):
        if name in doc and isinstance(doc[name], dict) and not doc[name]:
            del doc[name]


def _server(base: list[str]) -> Any:
    server = tomlkit.table()
    server["command"] = base[0]
    server["args"] = [*base[1:], "mcp"]
    data_dir = os.environ.get("CLAUDE_MEM_DATA_DIR", "").strip()
    if data_dir:
        # Codex starts MCP servers with a minimal environment: the data folder travels here.
        env = tomlkit.inline_table()
        env["CLAUDE_MEM_DATA_DIR"] = os.path.abspath(os.path.expanduser(data_dir))
        server["env"] = env
    server["startup_timeout_sec"] = MCP_STARTUP_S
    server.add(tomlkit.nl())  # set off from a table that follows it in the file
    return server


def _is_ours(entry: Any) -> bool:
    args = entry.get("args") if isinstance(entry, dict) else None
    words = [str(entry.get("command", "")), *map(str, args or [])] if isinstance(entry, dict) else []
    return bool(args) and words[-1] == "mcp" and any("claude-mem" in w or "claude_mem" in w for w in words)


# --- the two operations -----------------------------------------------------------------------

def install(*, dry_run: bool = False, base: list[str] | None = None) -> Result:
    return _run("install", base or claude_mem_argv(), dry_run)


def uninstall(*, dry_run: bool = False) -> Result:
    return _run("uninstall", None, dry_run)


def _run(action: str, base: list[str] | None, dry_run: bool) -> Result:
    hooks_path, config_path = paths()
    hooks_file, hooks_existed = read_json_object(hooks_path)
    config_text, config_existed = _read_text(config_path)
    new_hooks, hook_changes = plan_hooks(hooks_file, base, hooks_path)
    before = [key for key, _, _ in our_hooks(hooks_file, hooks_path)]
    trusted = our_hooks(new_hooks, hooks_path) if base else []
    new_config, config_changes = plan_config(config_text, trusted, before, base, config_path)
    files = [_write(hooks_path, hooks_existed, new_hooks, hook_changes, dry_run),
             _write(config_path, config_existed, new_config, config_changes, dry_run)]
    return Result(action, "codex", dry_run, shlex.join(base or claude_mem_argv()), files)


def _read_text(path: str) -> tuple[str, bool]:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(), True
    except FileNotFoundError:
        return "", False
    except (OSError, UnicodeDecodeError) as exc:
        raise InstallError(f"{path}: cannot read ({exc}); nothing was changed") from None


def _write(path: str, existed: bool, data: dict[str, Any] | str, changes: list[Change], dry_run: bool) -> FileResult:
    result = FileResult(path, existed, changes)
    if not changes or dry_run:
        return result
    if existed:
        result.backup = backup_path(path)
        shutil.copy2(os.path.realpath(path), result.backup)
    os.makedirs(os.path.dirname(os.path.realpath(path)), exist_ok=True)
    if data in ({}, ""):
        os.unlink(path)  # nothing but ours was in it: as before install, when it was not there
    elif isinstance(data, dict):
        jsonfile.write_json_atomic(path, data, mode=0o644, keep_mode=True, indent=2)
    else:
        _write_text_atomic(path, data)
    result.written = True
    return result


def _write_text_atomic(path: str, text: str) -> None:
    # 0600 when new: Codex's config.toml can hold provider keys.
    jsonfile.write_bytes_atomic(path, text.encode("utf-8"), mode=0o600, keep_mode=True)


# --- what status and doctor say ---------------------------------------------------------------

def state() -> dict[str, Any] | None:
    """Our registration with Codex as it stands: None when none of our hooks is in hooks.json;
    else CODEX_HOME, how many of our hooks there are and are trusted, whether the MCP server is
    registered, and a problem to fix when the files cannot be read."""
    import tomllib

    hooks_path, config_path = paths()
    try:
        hooks_file = read_json_object(hooks_path)[0]
    except InstallError as exc:
        return {"home": codex_home(), "hooks": 0, "trusted": 0, "expected": len(CODEX_HOOKS), "mcp_server": False,
                "problem": str(exc)}
    ours = our_hooks(hooks_file, hooks_path)
    if not ours:
        return None
    problem: str | None = None
    try:
        config = tomllib.loads(_read_text(config_path)[0])
    except (InstallError, tomllib.TOMLDecodeError) as exc:
        config, problem = {}, f"{config_path}: {exc}"
    trust = config.get("hooks", {}).get("state", {}) if isinstance(config.get("hooks"), dict) else {}
    trusted = sum(1 for key, digest, _ in ours if isinstance(trust.get(key), dict) and trust[key].get("trusted_hash") == digest)
    servers = config.get("mcp_servers")
    return {"home": codex_home(), "hooks": len(ours), "trusted": trusted, "expected": len(CODEX_HOOKS),
            "mcp_server": isinstance(servers, dict) and _is_ours(servers.get(SERVER_NAME)), "problem": problem}
