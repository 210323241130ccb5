"""Memory that arrives when it matters: what the hooks put into Claude's context instead of
waiting for it to search. The hook path's one room for reading memory back: it never imports
recall/ (chromadb, click); the text it reads and shows is text/'s.

  digest.py    SessionStart: the project's latest summary and recent observations, bounded
  prompt.py    UserPromptSubmit: the project's memories that answer the prompt, when any clears
               the relevance bar (semantic through the memory service, else FTS5 from SQLite)
  files.py     PreToolUse on Read/Edit/Write/MultiEdit/NotebookEdit: what earlier sessions
               learnt about that file
  failures.py  PreToolUse on Bash: the command's latest failure in an earlier session, and
               what fixed it
  lines.py     the shared pieces: one line per memory, the hook's answer

Standard library only (they run inside hook processes). Each push is recorded in the
`injections` table (store/injections.py), so a session never gets the same memory twice, and
`claude-mem stats` can say what memory cost and what it was used for.
"""

from __future__ import annotations

import os

from claude_mem.store import push_reads

TYPE_CHECKING = False  # typing costs the hook ~2 ms to import
if TYPE_CHECKING:
    import sqlite3


def has_memory(conn: sqlite3.Connection, project: str, session_id: str) -> bool:
    """Anything from another session of this project: without it there is nothing to find, and
    no reason to start the memory service."""
    return push_reads.has_memory(conn, project, session_id)


def project_of(conn: sqlite3.Connection, session_id: str, cwd: str | None) -> str:
    """The project the session's memories are filed under (its row, made by its first prompt),
    else the one its working directory names."""
    found = push_reads.session_project(conn, session_id)
    if found is not None:
        return found
    from claude_mem.project import project_for

    return project_for(cwd or os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd())
