-- Which process runs a flow, so a run whose process died can be marked crashed by the next start.
ALTER TABLE runs ADD COLUMN pid INTEGER;
ALTER TABLE runs ADD COLUMN host VARCHAR;
-- runs.status is now running | completed | failed | crashed (a process that died mid-run, found by the next start).
