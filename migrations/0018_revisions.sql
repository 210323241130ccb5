-- Memory a person can correct (issue 46): `claude-mem edit`, the viewer.
--
-- observation_revisions: every edit of an observation keeps the version before it (its type,
-- title, text and facts), when the edit was made, by whom (a person; the agent, should a tool of
-- its own ever edit) and which fields it changed. `show` lists them; `edit --undo` puts the
-- newest back and drops it, so undoing again goes one version further back. A forgotten
-- observation takes its revisions with it.
--
-- The semantic index follows a rewrite of an observation's text, wherever it is made: the
-- trigger drops the row's vectors kept in SQLite (migration 0016) and leaves its index_state
-- row with an empty collection id, as forget does (store/forget.py), which the memory service's
-- next pass and every catch-up take as "index this row again" (the keyword index follows through
-- the FTS triggers already). The partial index finds those rows without a scan.
--
-- Memories a person or the agent states (`claude-mem remember`, the viewer, the MCP tool
-- `remember`) are kept in one session per project, `stated:<project>`, whose host is 'stated':
-- no agent ran it, and no worker takes it (it never has queued events).

CREATE TABLE observation_revisions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    observation_id INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    author TEXT NOT NULL CHECK (author IN ('person', 'agent')),
    changed TEXT NOT NULL DEFAULT '[]',       -- JSON list of the fields the edit changed
    type TEXT NOT NULL,                       -- the observation as it was before the edit
    title TEXT NOT NULL,
    narrative TEXT NOT NULL DEFAULT '',
    facts TEXT NOT NULL DEFAULT '[]',
    created_at_epoch INTEGER NOT NULL         -- when the edit was made
);
CREATE INDEX observation_revisions_observation ON observation_revisions (observation_id, id);

CREATE TRIGGER observations_index_stale AFTER UPDATE OF type, title, subtitle, narrative, facts, files_read, files_modified
    ON observations BEGIN
    DELETE FROM vectors WHERE kind = 'observation' AND row_id = old.id;
    UPDATE index_state SET collection_id = '', vectors = 0 WHERE kind = 'observation' AND row_id = old.id;
END;
CREATE INDEX index_state_stale ON index_state (kind, row_id) WHERE collection_id = '';
