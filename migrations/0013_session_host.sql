-- Which agent a session ran in: Claude Code or the Codex CLI (issue 36). Both write to one data
-- folder and one project; the viewer, `sessions` and search say which host a memory came from.
ALTER TABLE sdk_sessions ADD COLUMN host TEXT NOT NULL DEFAULT 'claude-code';
