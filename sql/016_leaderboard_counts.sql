-- What each leaderboard number stands on: the responses of its slice (setting, language, subset) that were
-- answered (status ok), that failed (call or parse failed, stopped by the budget: counted incorrect, never left
-- out), and the answered ones for which some judge of the panel gave no verdict (failed call, unreadable reply,
-- budget).  NULL on rows written before this migration.
ALTER TABLE leaderboard ADD COLUMN answered INTEGER;
ALTER TABLE leaderboard ADD COLUMN failed INTEGER;
ALTER TABLE leaderboard ADD COLUMN judge_failed INTEGER;
