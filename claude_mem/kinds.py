"""What a stored memory is, in one place: who wrote it and what it was made from (migration 0017).

The values are the strings stored in SQLite and written in exports; `StrEnum` members compare
equal to them, so a row's text and a member can be used side by side.
"""

from __future__ import annotations

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
