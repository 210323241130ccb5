"""claude-agent-sdk imported without the `mcp` package and jsonschema, for a worker's process.

The SDK imports `mcp` and jsonschema as it is imported, for one feature only: MCP servers run in
the SDK's own process (`create_sdk_mcp_server`, `mcp_servers` of type "sdk"), which the observer
never has (it has no tools at all). That import was ~45 of a worker's 84 MiB, in every session's
worker (mcp 2.x builds the pydantic models of two protocol versions and loads starlette, uvicorn
and OpenTelemetry; measured with bench/footprint.py). So while the SDK is imported, placeholders
stand in for those packages: names it binds and never uses on the observer's path. They leave
sys.modules right after, so whatever imports `mcp` later in the process gets the real package.

Should a later SDK do more with those names at import than a placeholder allows, the SDK is
imported the ordinary way: the worker works, only heavier (tests/test_process_memory.py fails).
Only a process's entry calls this (the `worker` command), never code that a process holding the
real `mcp` (the memory service) runs.
"""

from __future__ import annotations

import importlib
import sys
import types

STAND_INS = ("jsonschema", "mcp", "mcp.types", "mcp.server", "mcp.shared", "mcp.shared.message", "mcp.shared.memory")


class _Placeholder(types.ModuleType):
    """A module whose every public name is an empty class of its own (the SDK subclasses some)."""

    def __getattr__(self, name: str) -> type:
        if name.startswith("__"):
            raise AttributeError(name)
        value = type(name, (), {"__module__": self.__name__, "__init_subclass__": classmethod(lambda cls, **_: None)})
        setattr(self, name, value)
        return value


def import_sdk_without_mcp() -> bool:
    """Import claude_agent_sdk with placeholders for `mcp` and jsonschema; True if they served.
    Nothing is done when the SDK or one of those packages is already imported."""
    if any(name in sys.modules for name in ("claude_agent_sdk", *STAND_INS)):
        return False
    placeholders = {name: _Placeholder(name) for name in STAND_INS}
    for name, module in placeholders.items():
        module.__path__ = []  # a package: a submodule not stood in for is not found (then see below)
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(placeholders[parent], child, module)
    sys.modules.update(placeholders)
    try:
        importlib.import_module("claude_agent_sdk")
        return True
    except Exception:  # a later SDK needs more of them: observer.py's own import loads it whole
        for name in [n for n in sys.modules if n == "claude_agent_sdk" or n.startswith("claude_agent_sdk.")]:
            del sys.modules[name]
        return False
    finally:
        for name, module in placeholders.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
