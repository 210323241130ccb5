-- The observer's token usage per local calendar day, for the daily budget (setting
-- observer_daily_tokens) that `status` and `stats` show. Every worker adds each reply's usage
-- (as the SDK reports it) to today's row in the same transaction as to its run's, so several
-- workers count one total. `reached_at_epoch` and `budget` record when the budget in force was
-- reached that day: set by exactly one worker, which says so once.

CREATE TABLE observer_days (
    day TEXT PRIMARY KEY,                     -- YYYY-MM-DD in the machine's local time
    replies INTEGER NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_input_tokens INTEGER NOT NULL DEFAULT 0,
    cache_creation_input_tokens INTEGER NOT NULL DEFAULT 0,
    budget INTEGER,                           -- the budget that was reached
    reached_at_epoch INTEGER
);

-- What the runs spent so far, by the local day each run started (a budget set today counts
-- today's earlier spend).
INSERT INTO observer_days (day, replies, input_tokens, output_tokens, cache_read_input_tokens, cache_creation_input_tokens)
SELECT date(started_at_epoch / 1000, 'unixepoch', 'localtime'), SUM(model_replies), SUM(input_tokens), SUM(output_tokens),
       SUM(cache_read_input_tokens), SUM(cache_creation_input_tokens)
FROM worker_runs WHERE model_replies > 0
GROUP BY 1;
