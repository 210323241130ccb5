"""The names of states and kinds, one `StrEnum` each, defined here once: what a stored memory is
(who wrote it, what it was made from: migration 0017; its type), how a search ranks, why a worker
stopped and how a batch ended.

The values are the strings stored in SQLite, written in exports and sent between processes;
`StrEnum` members compare equal to them, so a row's text and a member can be used side by side,
and a misspelt member fails where it is written. Standard library only, and kept off the hook
path (making an Enum class costs a hook process ~0.2 ms): the hooks spell the few of these
strings they need themselves (store/reads.STATED_SOURCES, the prompt push's search mode).
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


class ObservationType(StrEnum):
    """What an observation is about (`observations.type`)."""

    DECISION = "decision"
    BUGFIX = "bugfix"
    FEATURE = "feature"
    REFACTOR = "refactor"
    DISCOVERY = "discovery"
    CHANGE = "change"


OBSERVATION_TYPES = tuple(t.value for t in ObservationType)  # as plain strings: click's choices, error messages


class SearchMode(StrEnum):
    """How a search ranks: what `--mode`, the viewer and the memory service's `search` ask for,
    and what a result says it used (issue 48: one name per concept, the modules' own names)."""

    HYBRID = "hybrid"      # words and meaning, fused (recall/fusion.py)
    KEYWORD = "keyword"    # words only: SQLite FTS5, BM25 (recall/keyword.py)
    SEMANTIC = "semantic"  # meaning only: the Chroma index (recall/semantic.py)

    @classmethod
    def _missing_(cls, value: object) -> SearchMode | None:
        # `SearchMode("fts")`: the names before 0.2.0 still read, from a person's `--mode`, a
        # script's request or the answer of a memory service started by 0.1.
        return _MODE_ALIASES.get(value.lower()) if isinstance(value, str) else None

    @classmethod
    def named(cls, value: str) -> SearchMode:
        """The mode `value` names; a ValueError that lists the names otherwise."""
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"mode must be one of {', '.join(cls)}, got {value!r}") from None


_MODE_ALIASES = {"fts": SearchMode.KEYWORD, "vector": SearchMode.SEMANTIC}


class StopReason(StrEnum):
    """Why a session's worker stopped (`worker_runs.exit_reason`, and what `claude-mem worker` prints)."""

    SESSION_ENDED = "session ended"  # Claude Code sent SessionEnd and the queue is empty: the memory file is rewritten
    IDLE = "idle"                    # no event for worker_idle_s, or the rest wait out a backoff
    YIELDED = "idle, yielding its slot to a waiting session"
    DRAINED = "drained"              # --drain, and the queue is empty
    DRAINED_BUT_BUDGET = "drained but for events that wait for tomorrow's observer budget"
    SIGNAL = "signal"                # SIGTERM or SIGINT: no worker is handed the session
    STOPPED = "stopped"              # left before the loop (an error on the way in)
    BUSY = "another worker is running for this session"
    NO_SLOT = "waiting: every worker slot is taken (setting max_workers); an exiting worker starts this session's"


class BatchOutcome(StrEnum):
    """How the worker settled a claimed batch."""

    DONE = "done"      # stored (or folded: nothing to ask the model)
    OUTAGE = "outage"  # all deferred: the model is unreachable, or the day's budget is spent
    FAILED = "failed"  # the batch failed on its own: split, and each event settled one way or another


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
