"""Recall from the command line: `mcp` (the MCP server on stdio)."""

from __future__ import annotations

from claude_mem.cli import cli


@cli.command("mcp")
def mcp_command() -> None:
    """Serve memory to Claude Code as an MCP server on stdio (search, timeline, get_observations,
    recent_sessions). `claude-mem install` registers it."""
    from claude_mem.recall.mcp_server import serve

    serve()
