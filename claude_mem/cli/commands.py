"""Registers every command module with the group."""

from claude_mem.cli import inspect, worker  # noqa: F401
