"""A batch of tool events as observations that each name their subject and outcome.

The batch is read into runs (Bash commands and what their output says), edits (files and the
definitions they touched), tool failures and the rest; then grouped: a failing run, the edits
after it and the passing re-run of the same check become one bugfix; runs of one check become
one observation; commits, dependencies and servers get their own; routine commands, edits and
failures are gathered one observation each. Every title names a command, file, test, error or
commit: "Ran 3 command(s)" could be found by no keyword.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from claude_mem.kinds import Provenance, provenance_list, tool_provenance
from claude_mem.store.memories import Observation, Summary
from claude_mem.text.shorten import clip
from claude_mem.worker.events import Event, files_touched, response_text
from claude_mem.worker.heuristic import bash, decisions, edits, outputs, paths

TITLE_CHARS = 150
NOTE = "Recorded from the tool events without a model."
EDIT_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
NOTABLE = ("test", "lint", "build", "commit", "push", "install", "server")
_CHATTER = ("Perfect", "Great", "Excellent", "Now I", "Now let", "Let me", "I now", "I have", "I'll", "Based on")


@dataclass
class Run:
    index: int
    event: Event
    command: str
    label: str  # how titles name it
    kind: str
    key: str
    outcome: outputs.Outcome
    raw: str  # the command as given

    @property
    def failed(self) -> bool:
        return self.outcome.failed

    def result(self) -> str:
        """`1 failed — test_add: assert …` or `40 passed` or the first line of the output."""
        o = self.outcome
        if self.failed:
            reason = o.reason()
            if o.tests and reason:
                return f"{o.tests} — {reason}"
            return o.tests or reason or "failed"
        return o.tests or o.first_line or ("no output" if self.kind not in NOTABLE else "passed")

    def fact(self) -> str:
        description = _input(self.event).get("description")
        note = f" ({clip(description, 80)})" if isinstance(description, str) and description.strip() else ""
        status = "failed" if self.failed else "ok"
        return clip(f"`{self.command}`{note}: {status} — {self.result()}", 300)


@dataclass
class Edited:
    index: int
    event: Event
    change: edits.Change
    name: str


@dataclass
class Batch:
    cwd: str | None
    runs: list[Run] = field(default_factory=list)
    edits: list[Edited] = field(default_factory=list)
    failures: list[tuple[int, Event, str]] = field(default_factory=list)  # (index, event, message)
    others: list[tuple[int, Event]] = field(default_factory=list)
    looked: list[tuple[int, str]] = field(default_factory=list)  # Grep/Glob/LS, as "grep 'pattern'"
    read: list[str] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)

    def short(self, path: str) -> str:
        if self.cwd and path.startswith(self.cwd.rstrip("/") + "/"):
            return path[len(self.cwd.rstrip("/")) + 1 :]
        return path


def collect(events: list[Event]) -> Batch:
    tools = [e for e in events if e.kind == "tool"]
    batch = Batch(cwd=next((e.cwd for e in tools if e.cwd), None))
    batch.read, batch.edited = files_touched(tools)
    known: dict[str, str] = {}
    for index, e in enumerate(tools):
        i = _input(e)
        if e.tool_name == "Bash" and i.get("command"):
            batch.runs.append(_run(index, e, str(i["command"]), batch.cwd))
        elif e.is_error and e.tool_name not in ("ExitPlanMode", "AskUserQuestion"):
            batch.failures.append((index, e, outputs.tool_error(response_text(e))))
        elif e.tool_name in EDIT_TOOLS:
            change = edits.describe(e.tool_name, i, e.tool_response, known)
            batch.edits.append(Edited(index, e, change, os.path.basename(change.path) or "?"))
        elif e.tool_name in ("Read", "NotebookRead"):
            edits.remember_read(str(i.get("file_path") or i.get("notebook_path") or ""), e.tool_response, known)
        elif e.tool_name in ("Grep", "Glob", "LS"):
            what = i.get("pattern") or batch.short(str(i.get("path") or ""))
            batch.looked.append((index, f"{e.tool_name.lower()} {clip(str(what), 50)!r}"))
        else:
            batch.others.append((index, e))
    return batch


def _run(index: int, e: Event, command: str, cwd: str | None) -> Run:
    i = _input(e)
    failed = e.is_error or (isinstance(e.tool_response, dict) and bool(e.tool_response.get("interrupted")))
    shown = bash.display(command, cwd)
    kind = bash.kind(command, i)
    label = shown
    if bash.is_script(command) and isinstance(i.get("description"), str) and i["description"].strip():
        # an inline script: its description says what it was for
        label = f"{(shown.split() or ['a'])[0]} script ({clip(i['description'], 60)})"
    elif kind == "commit":  # `git add a b c && git commit`: the commit is what matters
        label = "git commit"
    return Run(index, e, shown, label, kind, bash.check_key(command),
               outputs.read(response_text(e), failed=failed, cwd=cwd), command)


def observe(events: list[Event]) -> list[Observation]:
    batch = collect(events)
    found: list[tuple[int, Observation]] = []
    runs, changes = list(batch.runs), list(batch.edits)
    for fix_runs, fix_edits in _fixes(runs, changes):
        found.append((fix_runs[0].index, _made_from(_fix(batch, fix_runs, fix_edits), [*fix_runs, *fix_edits])))
        runs = [r for r in runs if r not in fix_runs]
        changes = [c for c in changes if c not in fix_edits]
    routine: list[Run] = []
    for group in _by_key(runs):
        if any(r.failed for r in group) or group[-1].kind in NOTABLE:
            found.append((group[0].index, _made_from(_checks(group), group)))
        else:
            routine.extend(group)
    if routine:
        found.append((routine[0].index, _made_from(_routine(routine), routine)))
    if changes:
        found.append((changes[0].index, _made_from(_edits(batch, changes), changes)))
    if batch.failures:
        found.append((batch.failures[0][0], _made_from(_failures(batch), [e for _, e, _ in batch.failures])))
    for index, e in batch.others:
        obs = _other(e)
        if obs is not None:
            found.append((index, _made_from(obs, [e])))
    if not found and (batch.read or batch.looked):
        found.append((0, _made_from(_looked(batch), [Provenance.READ])))
    return [paths.tidy_observation(obs, batch.cwd) for _, obs in sorted(found, key=lambda pair: pair[0])]


def _fixes(runs: list[Run], changes: list[Edited]) -> list[tuple[list[Run], list[Edited]]]:
    """A check that failed, then edits, then the same check passing: the edits were the fix."""
    groups: list[tuple[list[Run], list[Edited]]] = []
    taken: set[int] = set()
    for run in runs:
        if not run.failed or run.index in taken:
            continue
        passing = next((r for r in runs if r.index > run.index and r.key == run.key and not r.failed), None)
        if passing is None:
            continue
        between = [c for c in changes if run.index < c.index < passing.index and c.index not in taken]
        if not between:
            continue
        group = [r for r in runs if run.index <= r.index <= passing.index and r.key == run.key]
        taken.update(r.index for r in group)
        taken.update(c.index for c in between)
        groups.append((group, between))
    return groups


def _by_key(runs: list[Run]) -> list[list[Run]]:
    groups: dict[str, list[Run]] = {}
    for run in runs:
        groups.setdefault(run.key, []).append(run)
    return list(groups.values())


def _fix(batch: Batch, runs: list[Run], changes: list[Edited]) -> Observation:
    first, last = runs[0], runs[-1]
    o = first.outcome
    where = " ".join(_edit_labels(changes, sep=" "))
    if o.failed_tests:
        cause = o.assertion or o.error or first.result()
        title = f"{o.failed_tests[0]} failed: {cause} — fixed in {where}"
    else:
        title = f"{first.label} failed: {o.reason() or first.result()} — fixed in {where}"
    tries = f" ({len(runs) - 1} failing runs)" if len(runs) > 2 else ""
    subject = o.failed_tests[0] if o.failed_tests else f"`{first.command}`"
    because = o.explanation or o.assertion or o.error or first.result()
    narrative = (f"{subject} failed{tries} because {because}" + (f" ({o.where})" if o.where and o.where not in because else "")
                 + f". Fixed by editing {', '.join(_edit_labels(changes))}: `{last.command}` then passed ({last.result()}). {NOTE}")
    facts = [o.why()] * bool(o.why()) + [r.fact() for r in runs] + [_edit_fact(batch, c) for c in changes]
    return Observation(type="bugfix", title=clip(title, TITLE_CHARS),
                       subtitle=clip(f"{first.command}: {first.outcome.tests or 'failed'} → {last.result()}", 200),
                       narrative=narrative, facts=_dedupe(facts)[:12], concepts=["heuristic", "fix", first.kind],
                       files_read=batch.read, files_modified=_paths(changes))


def _checks(runs: list[Run]) -> Observation:
    """One command (or check) run once or more in the batch."""
    last = runs[-1]
    failures = [r for r in runs if r.failed]
    more = f" ({len(runs)} runs)" if len(runs) > 1 else ""
    kind = last.kind
    if last.failed:
        reason = last.outcome.reason()
        title = f"{last.label} failed" + (f": {reason}" if reason else "")
        if last.outcome.tests:
            title = f"{last.label}: {last.result()}"
        obs_type = "discovery"
    elif kind == "commit":
        made = outputs.commit(response_text(last.event))
        message = made[1] if made else bash.commit_message(last.raw)
        title = f"Committed {made[0]}: {message}" if made else f"git commit: {message or last.result()}"
        obs_type = "change"
    elif kind == "push":
        branch = outputs.pushed(response_text(last.event))
        title = f"git push: pushed {branch}" if branch else f"{last.label}: {last.result()}"
        obs_type = "change"
    elif kind == "install":
        names = bash.packages(last.raw) or []
        title = f"Added dependency {', '.join(names)} ({bash.install_tool(last.raw)})"
        obs_type = "change"
    elif kind == "server":
        command = last.raw
        url = outputs.listening(response_text(last.event))
        port = bash.port(command)
        title = f"Started server: {last.label}" + (f" on {url}" if url else f" on port {port}" if port else "")
        obs_type = "change"
    else:
        title = f"{last.label}: {last.result()}"
        obs_type = "discovery"
    if failures and not last.failed:
        title += f", after failing: {failures[0].result()}"
    narrative = NOTE
    if failures:
        narrative = f"`{failures[0].command}` failed: {failures[0].result()}. " + (
            f"Last run `{last.command}`: {'failed' if last.failed else 'ok'} — {last.result()}. " if last is not failures[0] else "") + NOTE
    return Observation(type=obs_type, title=clip(title + more, TITLE_CHARS), subtitle=clip(last.fact(), 200), narrative=narrative,
                       facts=_dedupe([r.outcome.why() for r in failures if r.outcome.why()] + [r.fact() for r in runs])[:12],
                       concepts=["heuristic", kind] + (["error"] if failures else []))


def _routine(runs: list[Run]) -> Observation:
    if len(runs) == 1:
        title = f"{runs[0].label}: {runs[0].result()}"
    else:
        labels = _dedupe([clip(r.label, 48) for r in runs])
        title = "Ran " + ", ".join(labels[:3]) + (f" +{len(labels) - 3} more" if len(labels) > 3 else "")
    return Observation(type="discovery", title=clip(title, TITLE_CHARS), subtitle=clip(runs[-1].fact(), 200), narrative=NOTE,
                       facts=_dedupe([r.fact() for r in runs])[:12], concepts=["heuristic", "commands"])


def _edits(batch: Batch, changes: list[Edited]) -> Observation:
    labels = _edit_labels(changes)
    created = [c for c in changes if c.change.what == "new file"]
    verb = "Created" if len(created) == len(changes) else "Edited"
    title = verb + " " + "; ".join(labels)
    return Observation(type="feature" if verb == "Created" else "change", title=clip(title, TITLE_CHARS),
                       subtitle=f"{len(_paths(changes))} file(s) changed", narrative=NOTE,
                       facts=_dedupe([_edit_fact(batch, c) for c in changes])[:12], concepts=["heuristic", "edit"],
                       files_read=batch.read, files_modified=_paths(changes))


def _edit_labels(changes: list[Edited], sep: str = ": ") -> list[str]:
    """One label per file, its changes merged: `calc.py: add() docstring`."""
    merged: dict[str, edits.Change] = {}
    for c in changes:
        into = merged.setdefault(c.name, edits.Change(c.change.path, what=c.change.what))
        into.symbols += [s for s in c.change.symbols if s not in into.symbols]
        if into.what != c.change.what:
            into.what = ""
    return [edits.label(change, name).replace(": ", sep, 1) for name, change in merged.items()]


def _edit_fact(batch: Batch, c: Edited) -> str:
    where = batch.short(c.change.path)
    if c.event.tool_name == "Write":
        content = str(_input(c.event).get("content") or "")
        head = "Created" if c.change.what == "new file" else "Rewrote"
        defined = f": {', '.join(c.change.symbols[:6])}" if c.change.symbols else ""
        return clip(f"{head} {where} ({len(content)} chars){defined}", 300)
    inner = (", ".join(c.change.symbols[:4]) + (f" {c.change.what}" if c.change.what else "")).strip()
    now = f": now {c.change.snippet!r}" if c.change.snippet else ""
    return clip(f"Edited {where}" + (f" ({inner})" if inner else "") + now, 300)


def _failures(batch: Batch) -> Observation:
    items = batch.failures
    primary = [f for f in items if not f[2].startswith("cancelled:")] or items
    facts = [f"{_target(e)} {message if message.startswith(('rejected', 'cancelled')) else 'failed: ' + message}"
             for _, e, message in items]
    title = _dedupe([facts[items.index(f)] for f in primary])
    extra = f" (+{len(items) - 1} more)" if len(items) > 1 else ""
    return Observation(type="discovery", title=clip(title[0], TITLE_CHARS - len(extra)) + extra, subtitle=clip(facts[-1], 200),
                       narrative=NOTE, facts=_dedupe(facts)[:12], concepts=["heuristic", "error"])


def _target(e: Event) -> str:
    i = _input(e)
    what = i.get("file_path") or i.get("notebook_path") or i.get("url") or i.get("pattern") or i.get("query") or i.get("description")
    if isinstance(what, str) and what:
        return f"{e.tool_name} {os.path.basename(what) if '/' in what and 'file_path' in i else clip(what, 60)}"
    return str(e.tool_name)


def _other(e: Event) -> Observation | None:
    i = _input(e)
    r = e.tool_response if isinstance(e.tool_response, dict) else {}
    if e.tool_name == "AskUserQuestion":
        raw = listed if isinstance(listed := i.get("questions"), list) else []
        questions = [str(q.get("question") or "") for q in raw if isinstance(q, dict) and q.get("question")]
        answers = given if isinstance(given := r.get("answers"), dict) else {}
        if not questions:
            return None
        facts = [f"Asked {q!r}: answered {str(answers.get(q, '(no answer)'))!r}" for q in questions]
        title = f"Asked: {questions[0]} — answered: {answers.get(questions[0], 'no answer')}"
        return Observation(type="decision", title=clip(title, TITLE_CHARS), narrative=NOTE, facts=facts[:12],
                           concepts=["heuristic", "decision"])
    if e.tool_name == "ExitPlanMode":
        plan = str(i.get("plan") or "")
        where = os.path.basename(str(r.get("filePath") or ""))
        verdict = "rejected by the user" if e.is_error else "approved"
        title = f"Plan {verdict}: {_heading(plan)}" + (f" ({where})" if where else "")
        return Observation(type="decision", title=clip(title, TITLE_CHARS), narrative=clip(plan, 1200),
                           facts=[], concepts=["heuristic", "plan"])
    if e.tool_name in ("Task", "Agent"):
        agent = i.get("subagent_type") or "agent"
        text = _agent_text(r) or response_text(e)
        lines = [clip(line.strip(" #*-"), 200) for line in text.splitlines()
                 if len(line.strip(" #*-")) > 20 and not line.startswith(_CHATTER)]
        return Observation(type="discovery", title=clip(f"{agent} agent: {i.get('description') or i.get('prompt') or ''}", TITLE_CHARS),
                           narrative=clip(text, 1200), facts=lines[:8], concepts=["heuristic", "agent"])
    if e.tool_name in ("WebFetch", "WebSearch"):
        what = i.get("url") or i.get("query") or ""
        verb = "Fetched" if e.tool_name == "WebFetch" else "Searched the web for"
        return Observation(type="discovery", title=clip(f"{verb} {what}", TITLE_CHARS), narrative=NOTE,
                           facts=[clip(response_text(e), 300)], concepts=["heuristic", "web"])
    return None


def _heading(text: str) -> str:
    line = next((line.strip().lstrip("#").strip() for line in text.splitlines() if line.strip()), "")
    return clip(line.removeprefix("Plan:").strip(), 80)


def _agent_text(response: dict[str, Any]) -> str:
    content = response.get("content")
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _looked(batch: Batch) -> Observation:
    names = [os.path.basename(p) for p in batch.read]
    parts = (["Read " + ", ".join(names[:4]) + (f" +{len(names) - 4} more" if len(names) > 4 else "")] if names else []) + \
            [", ".join(w for _, w in batch.looked[:3])]
    facts = [f"Read {batch.short(p)}" for p in batch.read] + [w for _, w in batch.looked]
    return Observation(type="discovery", title=clip("; ".join(p for p in parts if p), TITLE_CHARS),
                       subtitle=f"{len(batch.read)} file(s) read", narrative=NOTE, facts=facts[:12], concepts=["heuristic"],
                       files_read=batch.read)


def summarize(request: str, events: list[Event], last_message: str) -> Summary:
    """A turn's summary from its events: the same groups as observe(), as sentences."""
    batch = collect(events)
    found = observe(events)
    completed = [o.title for o in found if o.type in ("bugfix", "change", "feature")]
    learned = [o.title for o in found if o.type in ("discovery", "decision") and ("error" in o.concepts or o.type == "decision")]
    checks = [r for r in batch.runs if r.kind in ("test", "lint", "build")]
    next_steps = f"{checks[-1].label} still fails: {checks[-1].result()}" if checks and checks[-1].failed else ""
    looked = [os.path.basename(p) for p in batch.read[:10]] + [w for _, w in batch.looked[:5]]
    # What the prompt and the closing message state is a decision of its own (decisions.py), shown
    # where it applies and with its rivals: the summary keeps what was asked and done.
    asked, said = decisions.without_statements(request), decisions.without_statements(last_message, by="reply")
    summary = Summary(request=clip(asked, 500), investigated=clip(", ".join(looked), 500), learned=clip("; ".join(learned), 800),
                      completed=clip("; ".join(completed), 800), next_steps=clip(next_steps, 300),
                      notes=clip(said, 500) if said else "", files_read=batch.read, files_edited=batch.edited)
    return paths.tidy_summary(summary, batch.cwd)


def _made_from(obs: Observation, sources: Sequence[Run | Edited | Event | Provenance]) -> Observation:
    """`obs` with the provenance of the events it was made from (issue 47)."""
    obs.provenance = provenance_list(s if isinstance(s, Provenance) else tool_provenance(
        (s if isinstance(s, Event) else s.event).tool_name) for s in sources)
    return obs


def _input(e: Event) -> dict[str, Any]:
    return e.tool_input if isinstance(e.tool_input, dict) else {}


def _paths(changes: list[Edited]) -> list[str]:
    return _dedupe([c.change.path for c in changes if c.change.path])


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
