"""Files that ship with claude-mem: migrations and prompts.

In a wheel they live inside the package (`claude_mem/migrations`, ...); in a source checkout or
an editable install they are the top-level folders of the repository.
"""

from __future__ import annotations

import os

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def resource_dir(name: str) -> str:
    inside = os.path.join(_PACKAGE_DIR, name)
    if os.path.isdir(inside):
        return inside
    beside = os.path.join(os.path.dirname(_PACKAGE_DIR), name)
    if os.path.isdir(beside):
        return beside
    raise FileNotFoundError(f"claude-mem is missing its {name}/ folder (looked in {inside} and {beside})")
