-- Memory that knows what is no longer true: links between observations.
--
-- "new_id supersedes old_id": the newer observation makes the older one's main claim no longer
-- true (a port changed, a failure was fixed). "new_id duplicates old_id": the same claim seen
-- again; the older copy folds under the newest. Who said so is kept (the observer model, a rule
-- of claude-mem, a person), why in a few words, and when. Nothing is deleted: a superseded
-- observation stays searchable, ranked below what replaced it, and is never pushed.
--
-- A person's undo keeps the row (undone_at_epoch set), so a rule never marks that pair again.

CREATE TABLE memory_links (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    old_id INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    new_id INTEGER NOT NULL REFERENCES observations (id) ON DELETE CASCADE,
    relation TEXT NOT NULL CHECK (relation IN ('supersedes', 'duplicates')),
    author TEXT NOT NULL CHECK (author IN ('model', 'rule', 'person')),
    rule TEXT NOT NULL DEFAULT '',            -- which rule, or the model's name
    reason TEXT NOT NULL DEFAULT '',          -- why, in a few words
    created_at_epoch INTEGER NOT NULL,
    undone_at_epoch INTEGER,                  -- a person took the mark back
    UNIQUE (old_id, new_id)
);
-- "Is this one still current?": every reader asks it of a handful of ids at once.
CREATE INDEX memory_links_old ON memory_links (old_id) WHERE undone_at_epoch IS NULL;
CREATE INDEX memory_links_new ON memory_links (new_id);

-- The rules' pass over observations stored before this migration: they get marks too. It runs
-- in slices (the worker, `claude-mem marks apply`), from after `through_id` up to `upto_id`.
CREATE TABLE link_sweep (
    id INTEGER PRIMARY KEY,                   -- one row, id 1
    through_id INTEGER NOT NULL DEFAULT 0,
    upto_id INTEGER NOT NULL DEFAULT 0
);
INSERT INTO link_sweep (id, through_id, upto_id) VALUES (1, 0, (SELECT coalesce(max(id), 0) FROM observations));
