"""A migrations folder holding only the first k of ours: a database as an older claude-mem left it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from claude_mem.store.db import migrations


def copy_first_migrations(k: int, directory: Path) -> Path:
    directory.mkdir()
    for migration in migrations()[:k]:
        shutil.copy(migration.path, directory / os.path.basename(migration.path))
    return directory
