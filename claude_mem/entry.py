"""Console entry point. The hook commands are dispatched here before click (~30 ms to
import) or anything else heavy is loaded; every other command goes to the click CLI."""

from __future__ import annotations

import os
import sys

from claude_mem.hosts.hook_table import HOOK_COMMANDS, HOOK_GROUP
from claude_mem.hosts.payloads import host_from_args


def hook_words(args: list[str]) -> tuple[str, str] | None:
    """(hook command, host) when `args` run a hook: `hook save [--host codex]`, or `save ...` as
    settings written by older installs still say; None for anything else (`hook save --help`)."""
    if args[:1] == [HOOK_GROUP]:
        args = args[1:]
    if not args or args[0] not in HOOK_COMMANDS:
        return None
    host = host_from_args(args[1:])
    return None if host is None else (args[0], host)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    # Memory is private: whatever this process (or a library it uses: Chroma, onnxruntime, the
    # observer CLI it starts) creates is for its owner only, not just the files we open ourselves.
    os.umask(0o077)
    hook = hook_words(args)
    if hook is not None:
        from claude_mem.hooks import main as run_hook

        return run_hook(hook[0], host=hook[1])
    if args == ["service"]:
        # Straight to the service: a racing second one must find the lock taken and exit in
        # milliseconds, before click or chromadb are imported.
        from claude_mem import settings
        from claude_mem.mcp.host import McpHost
        from claude_mem.service.server import main as run_service

        config = settings.load(strict=False)
        return run_service(config, mcp_host=McpHost(config))
    if len(args) == 3 and args[:2] == ["worker", "--session"]:
        # How the hooks start a session's worker (worker/spawn.py). Racing hooks start several:
        # the one that takes the session's lock loads the SDK, the others exit before.
        from claude_mem.worker.main import main as run_worker

        return run_worker(args[2])
    if args == ["mcp"]:
        # Claude Code probes its MCP servers at once and does not wait: the standard library only
        # (mcp/shim.py), the real server runs in the memory service.
        from claude_mem.mcp.shim import serve as run_mcp

        return run_mcp()
    from claude_mem.cli import main as run_cli

    return run_cli(args)
