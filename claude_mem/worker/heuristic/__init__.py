"""Observations without a model: what happened, read off the events.

Used when no model can be reached (no credentials, or CLAUDE_MEM_SYNTHESIZER=heuristic) so
capture never stops. It states only what the events show — the command and its result, the
first failing test with its assertion and file:line, the files and definitions an edit touched,
the commit made, the dependency added, the server started — grouping a failing run with the
edit that fixed it when the batch holds both. Deterministic and cheap (regexes over text the
hooks already redacted). Rows are marked source='heuristic' so `claude-mem reprocess` can
later send the same events through the model.

  bash.py      a shell command as a person names it, and its kind
  outputs.py   what a command's output says (test tally, failure, exception, commit)
  edits.py     the definitions an edit touched, and the kind of change
  compose.py   grouping and the observations and summary themselves
  paths.py     paths in what it writes, relative to the project's root
  decisions.py the decisions, rules and conventions a prompt or Claude's closing message states
"""

from claude_mem.worker.heuristic.compose import observe, summarize
from claude_mem.worker.heuristic.decisions import stated

__all__ = ["observe", "stated", "summarize"]
