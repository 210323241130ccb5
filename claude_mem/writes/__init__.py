"""What a person or the agent writes into memory, each kind of write in one place, whichever door
it comes through (the CLI, the viewer, the MCP tool `remember`, an import of stated memories):

  checks.py    the checks every text passes before anything is stored, logged or indexed: the
               hooks' redaction (`<private>` spans, secrets), empty text, `remember_chars`
  remember.py  a stated memory: checked, stored in the project's stated session, its
               `--supersedes` mark or the marking rules, the index told
  edit.py      an edit (the version before it kept) and its undo
  forget.py    forgetting one observation from the viewer
  index.py     the semantic index follows, through the memory service
"""
