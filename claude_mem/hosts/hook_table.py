"""The hook table: which Claude Code event goes to which `claude-mem` hook command, and the
matcher it is registered with. `claude-mem install` registers exactly these, the plugin's
hooks/hooks.json holds them (tests/test_plugin.py keeps the two in step), the hooks accept them,
the dispatcher (entry.py) and the CLI know the commands by them, and replay routes transcript
events by them.

Standard library only, nothing at import: every hook process reads it.
"""

from __future__ import annotations

PRE_TOOL_MATCHER = "Read|Edit|Write|MultiEdit|NotebookEdit|Bash"  # the tools whose PreToolUse `pre` answers

# (event, command, matcher); None: every source/trigger of the event.
HOOK_REGISTRATIONS: tuple[tuple[str, str, str | None], ...] = (
    ("SessionStart", "context", None),
    ("UserPromptSubmit", "new", None),
    ("PreToolUse", "pre", PRE_TOOL_MATCHER),  # transcripts do not record it
    ("PostToolUse", "save", "*"),
    ("PostToolUseFailure", "save", "*"),
    ("Stop", "summary", None),
    ("SessionEnd", "summary", None),  # lets the session's worker exit as soon as it is drained
    ("PreCompact", "summary", None),  # asks the session's worker for a checkpoint (auto and manual)
)

# The hidden command group the hooks run under (`claude-mem hook save`): plumbing, out of the
# user's `claude-mem --help`. The bare names (`claude-mem save`) still run a hook, for settings
# written by older installs.
HOOK_GROUP = "hook"

# The hook commands, in the order of their first event.
HOOK_COMMANDS: tuple[str, ...] = tuple(dict.fromkeys(command for _, command, _ in HOOK_REGISTRATIONS))

# The command each registered event goes to (replay sends only these).
COMMAND_FOR_EVENT: dict[str, str] = {event: command for event, command, _ in HOOK_REGISTRATIONS}

# The events each command accepts: its registered ones, and SubagentStop for `summary`, which a
# user may route there and which stores nothing (a subagent ending does not end the user's turn).
HOOK_EVENTS: dict[str, tuple[str, ...]] = {
    command: tuple(event for event, sub, _ in HOOK_REGISTRATIONS if sub == command) for command in HOOK_COMMANDS}
HOOK_EVENTS["summary"] += ("SubagentStop",)
