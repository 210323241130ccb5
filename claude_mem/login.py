"""Where the Claude Code CLI (which the observer runs) finds a login, read without calling the
network: the environment and the credentials file. `status` says which one it sees; `ask` keeps
a "no model" hold only while none of them has changed.

Standard library only. A value is never stored or shown: `state` keeps a short hash of each.
"""

from __future__ import annotations

import hashlib
import os
import shutil

CREDENTIAL_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
                  "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")
# Beside the login: where the requests go. A new address is a new chance of an answer.
ENDPOINT_ENV = ("ANTHROPIC_BASE_URL",)


def credentials_path(environ: dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    config_dir = env.get("CLAUDE_CONFIG_DIR") or os.path.expanduser("~/.claude")
    return os.path.join(config_dir, ".credentials.json")


def describe() -> str | None:
    """Where a model login would come from; None when there is none we can see (macOS keeps
    Claude Code's login in the Keychain, which is not looked at)."""
    for name in CREDENTIAL_ENV:
        if os.environ.get(name, "").strip():
            return f"{name} is set"
    path = credentials_path()
    if os.path.exists(path):
        return f"Claude Code login in {path}"
    return None


def state(cli_path: str = "") -> dict[str, str]:
    """What a login check depends on, comparable between two moments: the login and endpoint
    variables (hashed), the credentials file's modification time, and the Claude CLI that would
    run (the configured one, else the first `claude` on PATH, else the SDK's bundled one)."""
    found: dict[str, str] = {}
    for name in (*CREDENTIAL_ENV, *ENDPOINT_ENV):
        value = os.environ.get(name, "").strip()
        if value:
            found[name] = hashlib.sha256(value.encode()).hexdigest()[:16]
    try:
        found["credentials"] = str(os.stat(credentials_path()).st_mtime_ns)
    except OSError:
        pass
    cli = cli_path or shutil.which("claude") or ""
    if cli:
        try:
            found["cli"] = f"{cli}@{os.stat(cli).st_mtime_ns}"
        except OSError:
            found["cli"] = cli
    return found


def changed_since(epoch_s: float) -> bool:
    """Whether a login may have appeared after `epoch_s` as far as this process can tell: a login
    variable in its environment (the process that found none may have had another), or a
    credentials file written since."""
    if any(os.environ.get(name, "").strip() for name in CREDENTIAL_ENV):
        return True
    try:
        return os.stat(credentials_path()).st_mtime > epoch_s
    except OSError:
        return False
