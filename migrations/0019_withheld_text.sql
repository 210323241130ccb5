-- The write guard (issue 47, claude_mem/guard/): what it withheld from a memory, as it was written.
--
-- 0017 gave observations and summaries `guard_note` (the neutral note: where text addressed to an
-- AI assistant sat and what it asked for) and `released_at_epoch`. The text itself is kept out of
-- titles, facts, narratives and summaries; a person still sees it whole (`claude-mem show`, the
-- viewer), and releasing the memory puts it back. It is kept here, never indexed or searched:
--   withheld_text  '' or a JSON object of the fields as written before the guard cut them
--                  ({"title": ..., "narrative": ..., "facts": [...]}, a summary's fields by name).
--
-- Withheld summaries are found by project through a partial index, as 0017's observations_withheld
-- finds observations: the pushes leave withheld memories out with one small lookup each.

ALTER TABLE observations ADD COLUMN withheld_text TEXT NOT NULL DEFAULT '';
ALTER TABLE session_summaries ADD COLUMN withheld_text TEXT NOT NULL DEFAULT '';
CREATE INDEX session_summaries_withheld ON session_summaries (project) WHERE guard_note != '' AND released_at_epoch IS NULL;

-- What the worker's guard found in each tool event's output: NULL while no worker has looked, ''
-- when it found nothing, else its notes. The command-failure push and the working set shown after
-- a compaction read a past failure's line straight from the queue: they show it as it is when the
-- worker found nothing there, and screen it themselves only otherwise (the guard runs in the
-- worker; a hook loads it only for such a row).
ALTER TABLE observation_queue ADD COLUMN guard_note TEXT;
