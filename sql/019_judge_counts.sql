-- What the judge's statistics on arena_ratings count: consistency and first_position_rate are over the judge's own
-- verdicts only (battles with status ok), NULL where there is nothing to count. NULL on rows written before this
-- migration (their two statistics also counted forfeits).
--   judged_pairs: pairs the judge decided in both orders on a query (consistency's denominator);
--   decisive_verdicts: its verdicts that picked a side (first_position_rate's denominator);
--   order_flips: pairs whose two orders picked opposite winners (the answer shown first won both times);
--   forfeits: battles decided without the judge (a system had no answer), left out of both statistics;
--   no_verdict: battles the judge gave no verdict on (failed call, unreadable reply, stopped by the budget).
ALTER TABLE arena_ratings ADD COLUMN judged_pairs INTEGER;
ALTER TABLE arena_ratings ADD COLUMN decisive_verdicts INTEGER;
ALTER TABLE arena_ratings ADD COLUMN order_flips INTEGER;
ALTER TABLE arena_ratings ADD COLUMN forfeits INTEGER;
ALTER TABLE arena_ratings ADD COLUMN no_verdict INTEGER;
