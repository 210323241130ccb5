"""Registers every command module with the group."""

from claude_mem.cli import inspect, install, manage, recall, stats, viewer, worker  # noqa: F401
