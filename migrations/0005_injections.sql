-- What memory puts into Claude's context, and what the observer spends (issue 13).
--
-- injections: one row per push (the SessionStart digest, a prompt's recall, a file's or a
-- command's history) and per pull (observations fetched through the MCP get_observations).
-- The hooks read it to never give a session the same memory twice; `stats`, `show` and the
-- viewer add it up. No foreign key to sdk_sessions: SessionStart runs before the session's
-- first prompt has created its row.

CREATE TABLE injections (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    project TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('digest', 'prompt', 'file', 'command', 'fetch')),
    refs TEXT NOT NULL DEFAULT '[]',          -- JSON list: "obs:12", "sum:3"
    note TEXT NOT NULL DEFAULT '',            -- digest: SessionStart source; file: its path; command: program + subcommand
    chars INTEGER NOT NULL DEFAULT 0,
    tokens INTEGER NOT NULL DEFAULT 0,        -- an estimate: chars / 4, rounded up
    created_at_epoch INTEGER NOT NULL
);
CREATE INDEX injections_session ON injections (session_id, kind, note);
CREATE INDEX injections_project ON injections (project, created_at_epoch);

-- The observer's token usage as the SDK reports it, added up per worker run after every reply.
ALTER TABLE worker_runs ADD COLUMN model_replies INTEGER NOT NULL DEFAULT 0;
ALTER TABLE worker_runs ADD COLUMN input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE worker_runs ADD COLUMN output_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE worker_runs ADD COLUMN cache_read_input_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE worker_runs ADD COLUMN cache_creation_input_tokens INTEGER NOT NULL DEFAULT 0;

-- Failed tool calls, so the PreToolUse hook finds a command's past failures without reading
-- the whole queue (a few per cent of its rows).
CREATE INDEX observation_queue_failures ON observation_queue (tool_name, id) WHERE is_error = 1;
