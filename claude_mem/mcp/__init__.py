"""The MCP server Claude Code and the Codex CLI talk to, in three processes' parts.

  shim.py    `claude-mem mcp`, the process a session starts: standard library only, it answers
             what the description holds and moves every other message to the memory service
  host.py    the MCP server hosted in the memory service for every session; writes the description
  server.py  the server's tools (the one registry), also run alone (`python -m claude_mem.mcp.server`)
             when no memory service can be had
  args.py    the tools' typed arguments, checked at the edge
"""
