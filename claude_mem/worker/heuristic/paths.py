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

_STOP = r"[^\s'\"`:,;()\[\]{}<>|*?]"


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
    if not name:
        return text
    # An absolute path of another machine or folder that passes through a folder of the project's name.
    foreign = re.compile(r"(?:[A-Za-z]:)?[\\/](?:" + _STOP + r"+[\\/])*?" + re.escape(name) + r"[\\/](" + _STOP + r"+(?:[\\/]" + _STOP
                         + r"+)*)")
    return foreign.sub(lambda m: m.group(1).replace("\\", "/"), text)


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
