-- Worker bookkeeping: which worker ran when (for `workers` and `doctor`), and a whole-session
-- observer outage recorded once on the session instead of once per event.

ALTER TABLE sdk_sessions ADD COLUMN observer_error TEXT;
ALTER TABLE sdk_sessions ADD COLUMN observer_error_at_epoch INTEGER;
ALTER TABLE sdk_sessions ADD COLUMN synthesizer TEXT;

-- Which synthesizer handled a row, so `reprocess` can send heuristic rows through the model.
ALTER TABLE observation_queue ADD COLUMN processed_by TEXT;

CREATE TABLE worker_runs (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    pid INTEGER NOT NULL,
    create_time REAL NOT NULL,               -- process start time: a reused pid is not ours
    worker_id TEXT NOT NULL UNIQUE,          -- written into observation_queue.claimed_by
    synthesizer TEXT,
    started_at_epoch INTEGER NOT NULL,
    ended_at_epoch INTEGER,
    exit_reason TEXT,
    events_done INTEGER NOT NULL DEFAULT 0,
    observations_stored INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX worker_runs_session ON worker_runs (session_id, started_at_epoch DESC);
