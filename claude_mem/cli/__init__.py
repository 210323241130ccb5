"""The `claude-mem` command line (click). Commands parse, call one core function, format.

  app.py       the group, and what the commands of one run share (settings, database, JSON)
  format.py    tables, fields, colours          params.py  dates people type, usage errors, the index
  progress.py  progress bars on a terminal
  install.py   install, uninstall               status.py  status
  recall.py    search, reindex, mcp             inspect.py sessions, show, observations, summaries, queue
  manage.py    forget, prune, export, import, settings
  npm_import.py  `import` of the npm claude-mem's database
  marks.py     marks (apply, add, undo)         stats.py   stats
  writes.py    remember, edit
  memory_file.py  memory-file
  worker.py    worker, service, workers, retry, reprocess, doctor, demo
  logs.py      logs                             viewer.py  viewer
The hook commands (context, new, pre, save, summary) are dispatched by entry.py before click is
imported; they are registered here too (app.py), for `--help`.
"""

from __future__ import annotations

from claude_mem.cli import (  # noqa: F401  (each registers its commands)
    inspect,
    install,
    logs,
    manage,
    marks,
    memory_file,
    recall,
    stats,
    status,
    viewer,
    worker,
    writes,
)
from claude_mem.cli.app import cli


def main(args: list[str]) -> int:
    try:
        cli.main(args=args, prog_name="claude-mem", standalone_mode=True)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0
