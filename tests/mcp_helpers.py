"""The MCP server as its tests reach it: a tool call through the official client, the server over stdio."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from mcp import Client, StdioServerParameters


def stdio_server(data_dir: Path, cwd: Path, **env: str) -> StdioServerParameters:
    # The client passes only a few safe variables on: the data dir must be given explicitly.
    return StdioServerParameters(command=sys.executable, args=["-m", "claude_mem", "mcp"], cwd=str(cwd),
                                 env={"CLAUDE_MEM_DATA_DIR": str(data_dir), "PYTHONPATH": os.pathsep.join(sys.path), **env})


async def call(client: Client, name: str, **arguments: Any) -> tuple[bool, str]:
    result = await client.call_tool(name, arguments)
    assert len(result.content) == 1 and result.structured_content is None  # plain text only: the fewest tokens
    return bool(result.is_error), result.content[0].text
