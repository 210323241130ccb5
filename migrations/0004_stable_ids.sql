-- Row ids of memories are never reused (AUTOINCREMENT).
--
-- Without it SQLite gives a new row max(id) + 1: forgetting the newest observation and then
-- storing another gave the new one the forgotten one's id. A ref an agent already holds
-- ("obs:57") would then name a different memory, and the viewer's stream, which follows
-- growing ids, would skip the new row. SQLite cannot add AUTOINCREMENT to a table, so each
-- table is rebuilt under its own name with the same rows and ids (the keyword indexes are
-- keyed by those ids and stay valid); its indexes and triggers are made again.

-- user_prompts
CREATE TABLE user_prompts_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sdk_sessions (claude_session_id) ON DELETE CASCADE,
    prompt_number INTEGER NOT NULL,
    prompt_text TEXT NOT NULL,
    prompt_id TEXT,                           -- Claude Code's id, so a replayed hook counts once
    created_at TEXT NOT NULL,
    created_at_epoch INTEGER NOT NULL,
    UNIQUE (session_id, prompt_number)
);
INSERT INTO user_prompts_new SELECT * FROM user_prompts;
DROP TABLE user_prompts;
ALTER TABLE user_prompts_new RENAME TO user_prompts;
CREATE UNIQUE INDEX user_prompts_prompt_id ON user_prompts (session_id, prompt_id)
    WHERE prompt_id IS NOT NULL;
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

-- observations
CREATE TABLE observations_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
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
INSERT INTO observations_new SELECT * FROM observations;
DROP TABLE observations;
ALTER TABLE observations_new RENAME TO observations;
CREATE INDEX observations_project ON observations (project, created_at_epoch DESC);
CREATE INDEX observations_session ON observations (session_id, prompt_number);
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

-- session_summaries
CREATE TABLE session_summaries_new (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
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
INSERT INTO session_summaries_new SELECT * FROM session_summaries;
DROP TABLE session_summaries;
ALTER TABLE session_summaries_new RENAME TO session_summaries;
CREATE INDEX session_summaries_project ON session_summaries (project, created_at_epoch DESC);
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
