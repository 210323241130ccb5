-- The capture store: sessions, prompts, the event queue, and what the worker distils from it.
-- Times are kept twice: ISO-8601 UTC text for people, epoch milliseconds for ordering and filters.
-- Sessions are keyed by Claude Code's own session id so every table can be read without joins.

CREATE TABLE sdk_sessions (
    id INTEGER PRIMARY KEY,
    claude_session_id TEXT NOT NULL UNIQUE,
    sdk_session_id TEXT,                      -- the observer conversation, for resuming it
    project TEXT NOT NULL,
    cwd TEXT,
    transcript_path TEXT,
    user_prompt TEXT,                         -- the first prompt of the session
    status TEXT NOT NULL DEFAULT 'active'
        CHECK (status IN ('active', 'completed', 'failed', 'ended')),
    prompt_counter INTEGER NOT NULL DEFAULT 0,
    started_at TEXT NOT NULL,
    started_at_epoch INTEGER NOT NULL,
    updated_at_epoch INTEGER NOT NULL,
    completed_at_epoch INTEGER
);
CREATE INDEX sdk_sessions_project ON sdk_sessions (project, started_at_epoch DESC);

CREATE TABLE user_prompts (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sdk_sessions (claude_session_id) ON DELETE CASCADE,
    prompt_number INTEGER NOT NULL,
    prompt_text TEXT NOT NULL,
    prompt_id TEXT,                           -- Claude Code's id, so a replayed hook counts once
    created_at TEXT NOT NULL,
    created_at_epoch INTEGER NOT NULL,
    UNIQUE (session_id, prompt_number)
);
CREATE UNIQUE INDEX user_prompts_prompt_id ON user_prompts (session_id, prompt_id)
    WHERE prompt_id IS NOT NULL;

CREATE TABLE observation_queue (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sdk_sessions (claude_session_id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK (kind IN ('tool', 'finalize')),
    tool_name TEXT,
    tool_input TEXT,                          -- JSON, redacted and size-capped
    tool_response TEXT,                       -- JSON, redacted and size-capped
    tool_use_id TEXT,
    is_error INTEGER NOT NULL DEFAULT 0,      -- 1 for PostToolUseFailure
    duration_ms INTEGER,
    agent_id TEXT,                            -- set when a subagent made the call
    cwd TEXT,
    prompt_number INTEGER NOT NULL DEFAULT 0,
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'processing', 'done', 'skipped')),
    attempts INTEGER NOT NULL DEFAULT 0,
    last_error TEXT,
    next_attempt_epoch INTEGER NOT NULL DEFAULT 0,
    claimed_by TEXT,                          -- worker id holding a 'processing' row
    created_at TEXT NOT NULL,
    created_at_epoch INTEGER NOT NULL,
    updated_at_epoch INTEGER NOT NULL
);
-- Claude Code may deliver one tool call twice (retries, replays): queue it once.
CREATE UNIQUE INDEX observation_queue_tool_use ON observation_queue (session_id, tool_use_id)
    WHERE tool_use_id IS NOT NULL;
-- One finalize marker per prompt: a repeated Stop asks for one summary.
CREATE UNIQUE INDEX observation_queue_finalize ON observation_queue (session_id, prompt_number)
    WHERE kind = 'finalize';
CREATE INDEX observation_queue_claim ON observation_queue (session_id, status, id);
CREATE INDEX observation_queue_status ON observation_queue (status);

CREATE TABLE observations (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sdk_sessions (claude_session_id) ON DELETE CASCADE,
    project TEXT NOT NULL,
    type TEXT NOT NULL
        CHECK (type IN ('decision', 'bugfix', 'feature', 'refactor', 'discovery', 'change')),
    raw_type TEXT,                            -- what the model wrote when it was not a known type
    title TEXT NOT NULL,
    subtitle TEXT NOT NULL DEFAULT '',
    narrative TEXT NOT NULL DEFAULT '',
    facts TEXT NOT NULL DEFAULT '[]',         -- JSON list of strings
    concepts TEXT NOT NULL DEFAULT '[]',
    files_read TEXT NOT NULL DEFAULT '[]',
    files_modified TEXT NOT NULL DEFAULT '[]',
    prompt_number INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL DEFAULT 'model' CHECK (source IN ('model', 'heuristic', 'import')),
    model TEXT,
    content_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    created_at_epoch INTEGER NOT NULL,
    UNIQUE (session_id, content_hash)
);
CREATE INDEX observations_project ON observations (project, created_at_epoch DESC);
CREATE INDEX observations_session ON observations (session_id, prompt_number);

CREATE TABLE session_summaries (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sdk_sessions (claude_session_id) ON DELETE CASCADE,
    project TEXT NOT NULL,
    request TEXT NOT NULL DEFAULT '',
    investigated TEXT NOT NULL DEFAULT '',
    learned TEXT NOT NULL DEFAULT '',
    completed TEXT NOT NULL DEFAULT '',
    next_steps TEXT NOT NULL DEFAULT '',
    files_read TEXT NOT NULL DEFAULT '[]',
    files_edited TEXT NOT NULL DEFAULT '[]',
    notes TEXT NOT NULL DEFAULT '',
    prompt_number INTEGER NOT NULL DEFAULT 0,
    source TEXT NOT NULL DEFAULT 'model' CHECK (source IN ('model', 'derived', 'heuristic', 'import')),
    model TEXT,
    created_at TEXT NOT NULL,
    created_at_epoch INTEGER NOT NULL,
    UNIQUE (session_id, prompt_number)
);
CREATE INDEX session_summaries_project ON session_summaries (project, created_at_epoch DESC);

-- Model replies that yielded nothing usable are kept, never dropped.
CREATE TABLE raw_replies (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sdk_sessions (claude_session_id) ON DELETE CASCADE,
    queue_ids TEXT NOT NULL DEFAULT '[]',
    reply TEXT NOT NULL,
    error TEXT NOT NULL,
    created_at TEXT NOT NULL,
    created_at_epoch INTEGER NOT NULL
);

-- Keyword search. External-content tables stay in step through triggers.
CREATE VIRTUAL TABLE observations_fts USING fts5 (
    title, subtitle, narrative, facts, concepts,
    content = 'observations', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
    INSERT INTO observations_fts (rowid, title, subtitle, narrative, facts, concepts)
    VALUES (new.id, new.title, new.subtitle, new.narrative, new.facts, new.concepts);
END;
CREATE TRIGGER observations_ad AFTER DELETE ON observations BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, title, subtitle, narrative, facts, concepts)
    VALUES ('delete', old.id, old.title, old.subtitle, old.narrative, old.facts, old.concepts);
END;
CREATE TRIGGER observations_au AFTER UPDATE ON observations BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, title, subtitle, narrative, facts, concepts)
    VALUES ('delete', old.id, old.title, old.subtitle, old.narrative, old.facts, old.concepts);
    INSERT INTO observations_fts (rowid, title, subtitle, narrative, facts, concepts)
    VALUES (new.id, new.title, new.subtitle, new.narrative, new.facts, new.concepts);
END;

CREATE VIRTUAL TABLE session_summaries_fts USING fts5 (
    request, investigated, learned, completed, next_steps, notes,
    content = 'session_summaries', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER session_summaries_ai AFTER INSERT ON session_summaries BEGIN
    INSERT INTO session_summaries_fts (rowid, request, investigated, learned, completed, next_steps, notes)
    VALUES (new.id, new.request, new.investigated, new.learned, new.completed, new.next_steps, new.notes);
END;
CREATE TRIGGER session_summaries_ad AFTER DELETE ON session_summaries BEGIN
    INSERT INTO session_summaries_fts (session_summaries_fts, rowid, request, investigated, learned, completed, next_steps, notes)
    VALUES ('delete', old.id, old.request, old.investigated, old.learned, old.completed, old.next_steps, old.notes);
END;
CREATE TRIGGER session_summaries_au AFTER UPDATE ON session_summaries BEGIN
    INSERT INTO session_summaries_fts (session_summaries_fts, rowid, request, investigated, learned, completed, next_steps, notes)
    VALUES ('delete', old.id, old.request, old.investigated, old.learned, old.completed, old.next_steps, old.notes);
    INSERT INTO session_summaries_fts (rowid, request, investigated, learned, completed, next_steps, notes)
    VALUES (new.id, new.request, new.investigated, new.learned, new.completed, new.next_steps, new.notes);
END;

CREATE VIRTUAL TABLE user_prompts_fts USING fts5 (
    prompt_text,
    content = 'user_prompts', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER user_prompts_ai AFTER INSERT ON user_prompts BEGIN
    INSERT INTO user_prompts_fts (rowid, prompt_text) VALUES (new.id, new.prompt_text);
END;
CREATE TRIGGER user_prompts_ad AFTER DELETE ON user_prompts BEGIN
    INSERT INTO user_prompts_fts (user_prompts_fts, rowid, prompt_text) VALUES ('delete', old.id, old.prompt_text);
END;
CREATE TRIGGER user_prompts_au AFTER UPDATE ON user_prompts BEGIN
    INSERT INTO user_prompts_fts (user_prompts_fts, rowid, prompt_text) VALUES ('delete', old.id, old.prompt_text);
    INSERT INTO user_prompts_fts (rowid, prompt_text) VALUES (new.id, new.prompt_text);
END;
