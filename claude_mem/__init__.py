"""claude-mem: persistent memory for Claude Code."""

__version__ = "0.2.0"
