-- One word for one concept: the rows that say "B supersedes A" (or "B duplicates A") are marks,
-- as `claude-mem marks`, the export's "kind": "mark" and the viewer already call them; an
-- observation an active mark points away from is superseded. Renaming keeps every row, its id
-- and its foreign keys (SQLite rewrites the references); the indexes get the table's name.

ALTER TABLE memory_links RENAME TO marks;
ALTER TABLE link_sweep RENAME TO mark_sweep;

DROP INDEX memory_links_old;
DROP INDEX memory_links_new;
CREATE INDEX marks_old ON marks (old_id) WHERE undone_at_epoch IS NULL;
CREATE INDEX marks_new ON marks (new_id);
