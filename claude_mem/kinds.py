"""What a stored memory is, in one place: who wrote it and what it was made from (migration 0017).

The values are the strings stored in SQLite and written in exports; `StrEnum` members compare
equal to them, so a row's text and a member can be used side by side.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Source(StrEnum):
    """Who wrote an observation (`observations.source`)."""

    MODEL = "model"          # the observer model, from the session's events
    HEURISTIC = "heuristic"  # the heuristic synthesizer (no model)
    IMPORT = "import"        # `claude-mem import` or the npm claude-mem's database
    PERSON = "person"        # stated by a person: `claude-mem remember`, the viewer
    AGENT = "agent"          # stated by the agent: the MCP `remember` tool

    @property
    def stated(self) -> bool:
        """A memory somebody chose to keep, rather than one distilled from what happened."""
        return self in (Source.PERSON, Source.AGENT)


class Provenance(StrEnum):
    """What a memory was made from (`observations.provenance`, a JSON list of these).

    The first three are the user and the session's own work; the rest are text from outside,
    which is where an instruction addressed to an AI assistant can come from.
    """

    PROMPT = "prompt"      # the user's prompt
    EDIT = "edit"          # the session's own edits (Edit, Write, MultiEdit, NotebookEdit)
    PERSON = "person"      # stated by a person
    AGENT = "agent"        # stated by the agent (the MCP tool)
    READ = "read"          # a file read (Read, Grep, Glob, LS)
    WEB = "web"            # a web fetch or search
    COMMAND = "command"    # a command's output (Bash)
    MCP = "mcp"            # an MCP tool's output
    SUBAGENT = "subagent"  # a subagent's report (Task)
    REPLY = "reply"        # Claude's own reply at the end of a turn
    IMPORT = "import"      # imported from an export or another tool
    TEAMMATE = "teammate"  # a teammate's memory, through a shared index

    @property
    def own(self) -> bool:
        """Written by the user or the session itself, not read from outside."""
        return self in OWN


OWN = frozenset({Provenance.PROMPT, Provenance.EDIT, Provenance.PERSON, Provenance.AGENT})

# What each of Claude Code's tools hands back (the lead's table, issue 47); a tool not named here
# is read as outside text of the kind its name says, else as a command's output.
_TOOL_PROVENANCE = {
    "Read": Provenance.READ, "NotebookRead": Provenance.READ, "Grep": Provenance.READ, "Glob": Provenance.READ,
    "LS": Provenance.READ, "Edit": Provenance.EDIT, "Write": Provenance.EDIT, "MultiEdit": Provenance.EDIT,
    "NotebookEdit": Provenance.EDIT, "Bash": Provenance.COMMAND, "BashOutput": Provenance.COMMAND,
    "WebFetch": Provenance.WEB, "WebSearch": Provenance.WEB, "Task": Provenance.SUBAGENT, "Agent": Provenance.SUBAGENT,
    # The user's answers, and what Claude wrote itself (its plan, its to-do list).
    "AskUserQuestion": Provenance.PROMPT, "ExitPlanMode": Provenance.REPLY, "TodoWrite": Provenance.REPLY,
}


def tool_provenance(tool_name: str | None) -> Provenance:
    """What a tool call's event gives a memory made from it."""
    name = tool_name or ""
    if name in _TOOL_PROVENANCE:
        return _TOOL_PROVENANCE[name]
    return Provenance.MCP if name.startswith("mcp__") else Provenance.COMMAND


def provenance_list(values: Iterable[str]) -> list[str]:
    """Provenance values once each, in the order of the enum (a stable JSON list to store)."""
    wanted = set(values)
    return [p.value for p in Provenance if p.value in wanted]
