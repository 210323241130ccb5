-- A model outage is a property of the session, not of its events (issue 11): transient failures
-- (the observer CLI killed, a timeout, 429, 5xx, 529, a refused connection) never count toward an
-- event's attempts. The session records since when the model has been unreachable and how many
-- tries in a row failed (the exponent of its backoff, kept across workers); the first success
-- clears both. observer_error stays the latest failure's message.

ALTER TABLE sdk_sessions ADD COLUMN outage_since_epoch INTEGER;
ALTER TABLE sdk_sessions ADD COLUMN outage_failures INTEGER NOT NULL DEFAULT 0;

-- The last good turn of the observer conversation (an assistant message uuid): a new CLI resumes
-- the conversation cut there, so a message that failed is never sent twice, and one the API
-- rejected cannot poison the turns after it.
ALTER TABLE sdk_sessions ADD COLUMN sdk_resume_at TEXT;

-- Rows due for work, by session, read by every hook with one index-only range scan: a session
-- with due rows and no live worker gets one.
CREATE INDEX observation_queue_due ON observation_queue (status, next_attempt_epoch, session_id);
