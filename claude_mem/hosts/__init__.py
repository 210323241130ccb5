"""The agents claude-mem serves (Claude Code, the Codex CLI): their hooks and MCP server registered,
their hook payloads told apart and mapped to the same events.

  hook_table.py   the hook events, their commands and matchers (standard library: every hook reads it)
  payloads.py     which agent ran a hook, and Codex's payloads and answers as Claude Code's (standard
                  library: every hook reads it)
  claude_code.py  hooks and MCP server written into Claude Code's settings (`install`/`uninstall`)
  codex_cli.py    the same for the Codex CLI (`install --codex`: hooks.json, config.toml, trust)

Nothing is imported here: a hook loads this package for the two modules it needs, not the rest.
"""
