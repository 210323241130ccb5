"""The MCP tools' arguments, typed and checked at the edge (pydantic constraints, Literal choices):
a bad call comes back as an `is_error` result naming each problem in one short line, never a
traceback. The tool registry is mcp/server.py.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BeforeValidator, Field, ValidationError, WithJsonSchema

from claude_mem import kinds

# The argument naming an observation's type: kinds.ObservationType, its values written out in the
# tool's schema (pydantic would put an enum under $defs, one more hop for the model reading it).
ObservationType = Annotated[kinds.ObservationType, WithJsonSchema({"type": "string", "enum": [t.value for t in kinds.ObservationType]})]

Query = Annotated[str, Field(min_length=1, max_length=500, description="Words or a question, e.g. 'why did login crash'.")]
Project = Annotated[str | None, Field(
    min_length=1, max_length=300, description="A project name as shown in results; default: the current project; '*': all.")]


def _day_or_moment(value: Any) -> Any:
    # pydantic would read "2026-05-01" as midnight, and "until" a day must include that day.
    if isinstance(value, str) and len(value.strip()) == 10:
        try:
            return dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    return value


When = Annotated[dt.datetime | dt.date | None, BeforeValidator(_day_or_moment), Field(
    description="A date (YYYY-MM-DD) or date-time (YYYY-MM-DDTHH:MM), local time unless it has an offset.")]
Count = Annotated[int, Field(ge=0, le=25)]


def _obs_number(value: Any) -> Any:
    """"obs:12" -> 12, so refs copied from search rows work too; a teammate's "obs:12@laptop-b" stays a ref."""
    if isinstance(value, str) and value.strip().lower().startswith("obs:") and "@" not in value:
        return value.strip()[4:]
    return value.strip() if isinstance(value, str) else value


REMOTE_OBS_PATTERN = r"^obs:[1-9][0-9]{0,17}@[A-Za-z0-9._-]{1,64}$"
ObsId = Annotated[Annotated[int, Field(ge=1)] | Annotated[str, Field(pattern=REMOTE_OBS_PATTERN)],
                  BeforeValidator(_obs_number)]


def _obs_id(value: Any) -> Any:
    """"obs:12" -> 12 (what search rows show), for a tool that names one of this installation's observations."""
    if isinstance(value, str) and value.strip().lower().startswith("obs:"):
        return value.strip()[4:]
    return value


Supersedes = Annotated[Annotated[int, Field(ge=1, lt=2**63)] | None, BeforeValidator(_obs_id),
                       Field(description="obs:N of a memory this one replaces.")]
StatedText = Annotated[str, Field(min_length=1, description=(
    "What to remember, in the user's words or a clear sentence of your own: the fact, decision or rule, with its reason"
    " when it has one. At most remember_chars characters (default 4,000)."))]
Files = Annotated[list[Annotated[str, Field(min_length=1, max_length=1000)]] | None, Field(
    max_length=20, description="Files it is about (paths), so it comes back when one of them is read or edited.")]


def argument_problems(tool: str, error: ValidationError) -> str:
    """One short line per bad argument (pydantic's own text names its model and links to docs)."""
    seen: dict[str, str] = {}
    for problem in error.errors():
        name = str(problem["loc"][0]) if problem["loc"] else "arguments"
        if name not in seen:
            got = problem.get("input")
            shown = f" (got {got!r:.60})" if problem["type"] != "missing" and not isinstance(got, dict) else ""
            seen[name] = f"{name}: {problem['msg']}{shown}"
    return f"invalid arguments for {tool}: " + "; ".join(seen.values()) + ". See the tool's input schema."


def epoch_ms(value: dt.date | None, *, end_of_day: bool = False) -> int | None:
    if value is None:
        return None
    if not isinstance(value, dt.datetime):
        start = dt.datetime.combine(value, dt.time())
        value = start + dt.timedelta(days=1) if end_of_day else start  # "until 2026-05-01" includes that day
    if value.tzinfo is None:
        value = value.astimezone()  # local time, as a person writing a date means it
    return int(value.timestamp() * 1000)


class CheckedServer(MCPServer):
    """The library's server, its argument errors said in one short line per argument."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(argument_problems(name, exc.__cause__)) from exc.__cause__
            raise
