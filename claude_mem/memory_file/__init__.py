"""Memory where every agent reads it: an opt-in, line-budgeted section between two
marker lines in the project's CLAUDE.md or AGENTS.md (setting `memory_file`), rewritten by the
session's worker once the session ended and by `claude-mem memory-file`.

  choose.py   what goes in: current memories by kind, ranked, short-lived kinds faded, lines shared
  section.py  the lines between the markers, and splicing them into the file byte for byte
  write.py    which file, and writing it: atomic, locked, only when it changed

Not on the hook path: the hook only makes sure the session's worker runs.
"""
