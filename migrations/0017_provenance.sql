-- Memory a person controls and can trust: who wrote a memory, what it was made from, what the
-- write guard withheld from it, and the scope a rule was stated for.
--
-- observations.source (who wrote the row) gains 'person' (`claude-mem remember`, the viewer) and
-- 'agent' (the MCP `remember` tool) beside the observer model, the heuristic synthesizer and
-- import. SQLite cannot change a CHECK in place, so the table is rebuilt under its own name with
-- the same rows and ids, as 0004 did; the runner turns foreign keys off around a migration (the
-- drop must not cascade to marks) and checks them before it commits. The keyword index is keyed
-- by row id and stays valid; the indexes, the view and the triggers are made again.
--
-- New columns:
--   provenance  JSON list of what the memory was made from (claude_mem/kinds.py, Provenance):
--               the user's prompt, the session's own edits, a file read, a web fetch, a command's
--               output, an MCP tool's output, stated by a person or the agent, imported, a teammate's.
--               '[]' for rows written before it was kept: unknown.
--   guard_note  '' or what the write guard found and left out (text addressed to an AI assistant,
--               an impersonated system turn), said neutrally; a memory with a note is withheld from
--               what memory injects unasked until a person releases it.
--   released_at_epoch  when a person released a withheld memory (NULL: not released).
--   scope       '' (the whole project) or the component, path or area a decision or rule was
--               stated for.
--
-- session_summaries gain guard_note and released_at_epoch, for the same guard.
-- marks: relation gains 'conflicts' (two current memories with rival claims on one subject,
-- neither newer), author gains 'agent' (a mark set through the MCP tool).

DROP VIEW observation_files_listed;

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
    source TEXT NOT NULL DEFAULT 'model'
        CHECK (source IN ('model', 'heuristic', 'import', 'person', 'agent')),
    model TEXT,
    content_hash TEXT NOT NULL,
    created_at TEXT NOT NULL,
    created_at_epoch INTEGER NOT NULL,
    provenance TEXT NOT NULL DEFAULT '[]',    -- JSON list of Provenance values
    guard_note TEXT NOT NULL DEFAULT '',      -- what the write guard left out; withheld while not released
    released_at_epoch INTEGER,                -- a person released the withheld memory
    scope TEXT NOT NULL DEFAULT '',           -- '' = the whole project
    UNIQUE (session_id, content_hash)
);
INSERT INTO observations_new (id, session_id, project, type, raw_type, title, subtitle, narrative, facts, concepts,
                              files_read, files_modified, prompt_number, source, model, content_hash, created_at,
                              created_at_epoch)
    SELECT id, session_id, project, type, raw_type, title, subtitle, narrative, facts, concepts,
           files_read, files_modified, prompt_number, source, model, content_hash, created_at, created_at_epoch
    FROM observations;
-- AUTOINCREMENT's high-water mark moves over: an id once given (then forgotten) is never given again.
DELETE FROM sqlite_sequence WHERE name = 'observations_new';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'observations_new', max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'observations'), 0),
                          coalesce((SELECT max(id) FROM observations_new), 0));
DROP TABLE observations;
ALTER TABLE observations_new RENAME TO observations;

CREATE INDEX observations_project ON observations (project, created_at_epoch DESC);
CREATE INDEX observations_session ON observations (session_id, prompt_number);
CREATE INDEX observations_withheld ON observations (project) WHERE guard_note != '' AND released_at_epoch IS NULL;

CREATE TRIGGER observations_ai AFTER INSERT ON observations BEGIN
    INSERT INTO observations_fts (rowid, title, subtitle, narrative, facts, concepts)
    VALUES (new.id, cjk_spaced(new.title), cjk_spaced(new.subtitle), cjk_spaced(new.narrative), cjk_spaced(new.facts),
            cjk_spaced(new.concepts));
END;
CREATE TRIGGER observations_ad AFTER DELETE ON observations BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, title, subtitle, narrative, facts, concepts)
    VALUES ('delete', old.id, cjk_spaced(old.title), cjk_spaced(old.subtitle), cjk_spaced(old.narrative),
            cjk_spaced(old.facts), cjk_spaced(old.concepts));
END;
CREATE TRIGGER observations_au AFTER UPDATE OF title, subtitle, narrative, facts, concepts ON observations BEGIN
    INSERT INTO observations_fts (observations_fts, rowid, title, subtitle, narrative, facts, concepts)
    VALUES ('delete', old.id, cjk_spaced(old.title), cjk_spaced(old.subtitle), cjk_spaced(old.narrative),
            cjk_spaced(old.facts), cjk_spaced(old.concepts));
    INSERT INTO observations_fts (rowid, title, subtitle, narrative, facts, concepts)
    VALUES (new.id, cjk_spaced(new.title), cjk_spaced(new.subtitle), cjk_spaced(new.narrative), cjk_spaced(new.facts),
            cjk_spaced(new.concepts));
END;

CREATE VIEW observation_files_listed (observation_id, name, path, modified) AS
    SELECT o.id, substr(j.value, length(rtrim(j.value, replace(j.value, '/', ''))) + 1), j.value, 0
    FROM observations o, json_each(CASE WHEN json_valid(o.files_read) THEN o.files_read ELSE '[]' END) j
    WHERE j.type = 'text' AND j.value != ''
    UNION ALL
    SELECT o.id, substr(j.value, length(rtrim(j.value, replace(j.value, '/', ''))) + 1), j.value, 1
    FROM observations o, json_each(CASE WHEN json_valid(o.files_modified) THEN o.files_modified ELSE '[]' END) j
    WHERE j.type = 'text' AND j.value != '';
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
CREATE TRIGGER observations_vectors_gone AFTER DELETE ON observations BEGIN
    DELETE FROM vectors WHERE kind = 'observation' AND row_id = old.id;
END;

ALTER TABLE session_summaries ADD COLUMN guard_note TEXT NOT NULL DEFAULT '';
ALTER TABLE session_summaries ADD COLUMN released_at_epoch INTEGER;

CREATE TABLE marks_rebuilt (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    old_id INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    new_id INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    relation TEXT NOT NULL CHECK (relation IN ('supersedes', 'duplicates', 'conflicts')),
    author TEXT NOT NULL CHECK (author IN ('model', 'rule', 'person', 'agent')),
    rule TEXT NOT NULL DEFAULT '',            -- which rule, or the model's name
    reason TEXT NOT NULL DEFAULT '',          -- why, in a few words
    created_at_epoch INTEGER NOT NULL,
    undone_at_epoch INTEGER,                  -- a person took the mark back
    UNIQUE (old_id, new_id)
);
INSERT INTO marks_rebuilt (id, old_id, new_id, relation, author, rule, reason, created_at_epoch, undone_at_epoch)
    SELECT id, old_id, new_id, relation, author, rule, reason, created_at_epoch, undone_at_epoch FROM marks;
DELETE FROM sqlite_sequence WHERE name = 'marks_rebuilt';
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'marks_rebuilt', max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'marks'), 0),
                          coalesce((SELECT max(id) FROM marks_rebuilt), 0));
DROP TABLE marks;
ALTER TABLE marks_rebuilt RENAME TO marks;
CREATE INDEX marks_old ON marks (old_id) WHERE undone_at_epoch IS NULL;
CREATE INDEX marks_new ON marks (new_id);
