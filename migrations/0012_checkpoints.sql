-- A compaction's checkpoint: what a session was in the middle of when Claude Code compacted it.
--
-- The PreCompact hook only inserts a pending row (the hook budget allows no more), with the
-- session's last queued event at that moment: the worker first takes every event up to it, then
-- writes the checkpoint (request, done, decided, still failing, next) with the model or the
-- heuristic synthesizer. SessionStart(compact) shows the newest written one, with the session's
-- working set read from its events.

CREATE TABLE checkpoints (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sdk_sessions (claude_session_id) ON DELETE CASCADE,
    trigger TEXT NOT NULL DEFAULT '',         -- "auto" or "manual", as Claude Code says
    upto_queue_id INTEGER NOT NULL DEFAULT 0, -- the session's last queued event when it was asked for
    prompt_number INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'written')),
    request TEXT NOT NULL DEFAULT '',
    completed TEXT NOT NULL DEFAULT '',
    decided TEXT NOT NULL DEFAULT '',
    failing TEXT NOT NULL DEFAULT '',
    next_steps TEXT NOT NULL DEFAULT '',
    source TEXT NOT NULL DEFAULT '' CHECK (source IN ('', 'model', 'heuristic')),
    created_at_epoch INTEGER NOT NULL,
    written_at_epoch INTEGER
);
CREATE INDEX checkpoints_session ON checkpoints (session_id, status, id);
