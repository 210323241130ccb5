-- Two small partial indexes for what the digest and the pushes read on every session and prompt.
--
-- The digest's "Remembered on request" block (push/digest.py) asks for a project's newest memories
-- a person or the agent stated (source 'person' or 'agent'). Through observations_project that
-- walked every observation of the project to find the few stated ones, or none: 7.3 ms of a
-- 17 ms digest at 100k observations (bench/scale.py), on every SessionStart.
CREATE INDEX observations_stated ON observations (project, created_at_epoch DESC) WHERE source IN ('person', 'agent');

-- A project's stated decisions (issue 51: the digest's decisions block, the push's decisions by
-- session and by scope, `ask`): the same walk, filtered on type.
CREATE INDEX observations_decisions ON observations (project, created_at_epoch DESC) WHERE type = 'decision';
