"""Observations without a model: plain facts read off the events.

Used when no model can be reached (no credentials, or CLAUDE_MEM_SYNTHESIZER=heuristic) so
capture never stops. It states only what the events show — files read and modified, commands
run and whether they failed, errors seen — and its rows are marked source='heuristic' so
`claude-mem reprocess` can later send the same events through the model.
"""

from __future__ import annotations

import os

from claude_mem.payload import head_tail
from claude_mem.store.memories import Observation, Summary
from claude_mem.worker.render import Event, _response_text, files_touched


def _short(path: str, cwd: str | None) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def _bash_failed(event: Event) -> bool:
    if event.is_error:
        return True
    r = event.tool_response
    return isinstance(r, dict) and bool(r.get("interrupted"))


def observe(events: list[Event]) -> list[Observation]:
    """At most three observations per batch: changes made, commands run, failures seen."""
    tools = [e for e in events if e.kind == "tool"]
    if not tools:
        return []
    cwd = next((e.cwd for e in tools if e.cwd), None)
    read, edited = files_touched(tools)
    result: list[Observation] = []

    if edited:
        names = [os.path.basename(p) for p in edited]
        facts = []
        for e in tools:
            if e.tool_name in ("Write", "Edit", "MultiEdit", "NotebookEdit") and not e.is_error and isinstance(e.tool_input, dict):
                path = _short(str(e.tool_input.get("file_path") or e.tool_input.get("notebook_path") or ""), cwd)
                if e.tool_name == "Write":
                    facts.append(f"Wrote {path} ({len(str(e.tool_input.get('content') or ''))} chars)")
                else:
                    new = " ".join(str(e.tool_input.get("new_string") or "").split())
                    facts.append(f"Edited {path}" + (f": now {head_tail(new, 160)!r}" if new else ""))
        result.append(Observation(
            type="change",
            title=head_tail("Modified " + ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else ""), 120),
            subtitle=f"{len(edited)} file(s) changed", narrative="Recorded from tool events without a model.",
            facts=_dedupe(facts)[:12], concepts=["heuristic"], files_read=read, files_modified=edited))

    commands = [e for e in tools if e.tool_name == "Bash" and isinstance(e.tool_input, dict)]
    if commands:
        facts = []
        for e in commands:
            command = head_tail(" ".join(str(e.tool_input.get("command") or "").split()), 200)
            outcome = "failed" if _bash_failed(e) else "succeeded"
            facts.append(f"Ran `{command}`: {outcome}")
        failed = sum(_bash_failed(e) for e in commands)
        title = f"Ran {len(commands)} command(s)" + (f", {failed} failed" if failed else "")
        result.append(Observation(type="discovery" if failed else "change", title=title,
                                  subtitle=facts[-1], narrative="Recorded from tool events without a model.",
                                  facts=_dedupe(facts)[:12], concepts=["heuristic", "commands"]))

    errors = [e for e in tools if e.is_error and e.tool_name != "Bash"]
    failed_commands = [e for e in commands if _bash_failed(e)]
    if errors or failed_commands:
        facts = []
        for e in errors + failed_commands:
            message = " ".join(_response_text(e).split())
            facts.append(f"{e.tool_name} failed: {head_tail(message, 300)}")
        result.append(Observation(type="discovery", title=f"{len(facts)} tool error(s) seen",
                                  subtitle=facts[0][:200], narrative="Recorded from tool events without a model.",
                                  facts=_dedupe(facts)[:12], concepts=["heuristic", "errors"]))

    if not result and read:
        result.append(Observation(type="discovery", title="Read " + ", ".join(os.path.basename(p) for p in read[:4]),
                                  subtitle=f"{len(read)} file(s) read", narrative="Recorded from tool events without a model.",
                                  facts=[f"Read {_short(p, cwd)}" for p in read[:12]], concepts=["heuristic"], files_read=read))
    return result


def summarize(request: str, events: list[Event], last_message: str) -> Summary:
    read, edited = files_touched(events)
    commands = [e for e in events if e.tool_name == "Bash"]
    failed = [e for e in commands if _bash_failed(e)]
    completed = []
    if edited:
        completed.append("modified " + ", ".join(os.path.basename(p) for p in edited[:10]))
    if commands:
        completed.append(f"ran {len(commands)} command(s), {len(failed)} failed")
    return Summary(request=head_tail(request, 500), investigated=", ".join(os.path.basename(p) for p in read[:10]),
                   learned="", completed="; ".join(completed), next_steps="",
                   notes=head_tail(" ".join(last_message.split()), 500) if last_message else "",
                   files_read=read, files_edited=edited)


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    return [x for x in items if not (x in seen or seen.add(x))]
