"""Registers every command module with the group."""

from claude_mem.cli import inspect, install, worker  # noqa: F401
