"""Paths in what the heuristic synthesizer writes, relative to the project's root.

A title is read in a push of a few hundred characters: `C:\\Users\\dev\\AppData\\Local\\Temp\\tmp…\\
ledger\\services\\billing\\invoice.py` fills it and says no more than `services/billing/invoice.py`
(issue 51: sessions recorded on another machine and replayed here, or a session's folder inside
its repository). Paths under the session's folder or its git root lose that prefix; an absolute path
from elsewhere (another machine, a deleted clone) loses everything up to the project folder's name
in it. The recorded files (files_read, files_modified) keep their absolute paths: the file index
and the file push compare those.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from claude_mem.project import find_git_root
from claude_mem.store.memories import Observation, Summary


def roots(cwd: str | None) -> list[str]:
    """The prefixes a path of the session is relative to: its git root, then its folder."""
    if not cwd:
        return []
    tidy = cwd.replace("\\", "/").rstrip("/")
    found = find_git_root(cwd) if os.path.isdir(cwd) else None
    top = found[0].replace("\\", "/").rstrip("/") if found else tidy
    return [top] if top == tidy else [top, tidy]


def relative(text: str, cwd: str | None) -> str:
    """`text` with the session's absolute paths written relative to the project's root."""
    if not text or not cwd:
        return text
    places = roots(cwd)
    for root in places:  # the project's root first: what lies in it is named from there
        text = text.replace(root + "/", "")
    name = places[0].rsplit("/", 1)[-1] if places else ""
    return _foreign(text, name) if name and name in text else text


def _foreign(text: str, name: str) -> str:
    """An absolute path of another machine or folder passing through a folder of the project's
    name, from that folder on (one pass over the text: a pasted command can be long)."""
    out: list[str] = []
    done = 0
    for match in re.finditer(r"[\\/]" + re.escape(name) + r"[\\/]", text):
        if match.start() < done:
            continue
        start = match.start()
        while start > done and text[start - 1] not in _ENDS:
            start -= 1
        head = text[start:match.start()]
        if not re.match(r"(?:[A-Za-z]:)?[\\/]", head):
            continue  # not an absolute path: left as it is
        end = match.end()
        while end < len(text) and text[end] not in _ENDS:
            end += 1
        out += [text[done:start], text[match.end():end].replace("\\", "/")]
        done = end
    return "".join(out) + text[done:]


_ENDS = frozenset(" \t\n'\"`,;()[]{}<>|*?")


def tidy_observation(obs: Observation, cwd: str | None) -> Observation:
    if not cwd:
        return obs
    return replace(obs, title=relative(obs.title, cwd), subtitle=relative(obs.subtitle, cwd), narrative=relative(obs.narrative, cwd),
                   facts=[relative(f, cwd) for f in obs.facts])


def tidy_summary(summary: Summary, cwd: str | None) -> Summary:
    if not cwd:
        return summary
    return replace(summary, request=relative(summary.request, cwd), investigated=relative(summary.investigated, cwd),
                   learned=relative(summary.learned, cwd), completed=relative(summary.completed, cwd),
                   next_steps=relative(summary.next_steps, cwd), notes=relative(summary.notes, cwd))
