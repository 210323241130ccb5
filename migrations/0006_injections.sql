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

-- The files each observation read or modified, one row each, keyed by base name: the
-- PreToolUse hook looks a file up here (an index lookup, not a scan of the project's JSON
-- lists) and compares full paths itself. Kept by triggers, so every writer (worker, import)
-- fills it. The base name is what follows the last '/' (SQL has no basename()).
CREATE TABLE observation_files (
    observation_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    path TEXT NOT NULL,
    modified INTEGER NOT NULL                  -- 1: listed in files_modified, 0: in files_read
);
CREATE INDEX observation_files_name ON observation_files (name, observation_id);
CREATE INDEX observation_files_observation ON observation_files (observation_id);

-- The same rows computed from the JSON lists: what the table holds, for the backfill and the triggers.
CREATE VIEW observation_files_listed (observation_id, name, path, modified) AS
    SELECT o.id, substr(j.value, length(rtrim(j.value, replace(j.value, '/', ''))) + 1), j.value, 0
    FROM observations o, json_each(CASE WHEN json_valid(o.files_read) THEN o.files_read ELSE '[]' END) j
    WHERE j.type = 'text' AND j.value != ''
    UNION ALL
    SELECT o.id, substr(j.value, length(rtrim(j.value, replace(j.value, '/', ''))) + 1), j.value, 1
    FROM observations o, json_each(CASE WHEN json_valid(o.files_modified) THEN o.files_modified ELSE '[]' END) j
    WHERE j.type = 'text' AND j.value != '';

INSERT INTO observation_files SELECT * FROM observation_files_listed;

CREATE TRIGGER observation_files_ai AFTER INSERT ON observations BEGIN
    INSERT INTO observation_files SELECT * FROM observation_files_listed WHERE observation_id = new.id;
END;
CREATE TRIGGER observation_files_ad AFTER DELETE ON observations BEGIN
    DELETE FROM observation_files WHERE observation_id = old.id;
END;
CREATE TRIGGER observation_files_au AFTER UPDATE OF files_read, files_modified ON observations BEGIN
    DELETE FROM observation_files WHERE observation_id = old.id;
    INSERT INTO observation_files SELECT * FROM observation_files_listed WHERE observation_id = new.id;
END;
