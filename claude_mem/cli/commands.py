"""Registers every command module with the group."""

from claude_mem.cli import inspect, install, logs, manage, marks, recall, stats, status, viewer, worker  # noqa: F401
