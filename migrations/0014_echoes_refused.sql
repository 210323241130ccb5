-- Observations a worker run refused to store because the session already held them: the same
-- type, title and facts, or a title the conversation's recap had shown (worker/echoes.py).
-- `claude-mem stats` sums them beside the observer's tokens.

ALTER TABLE worker_runs ADD COLUMN echoes_refused INTEGER NOT NULL DEFAULT 0;
