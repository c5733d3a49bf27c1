-- leaderboards: every number a leaderboard shows, evaluation metrics and arena ratings alike.
--   setting 'arena' and metric 'bt_rating' for Bradley–Terry ratings (natural-log logits, mean zero), with their
--   rank intervals; source is the metric's scoring mode or 'judge:<name>' for a rating.
--   predicted: a rating the surrogate judge predicted from features alone (the judge never saw that system;
--   n is 0 battles) — never to be read as a judged rating. Always false for evaluation metrics.
--   answered / failed / judge_failed: the slice's responses with status ok, those that failed, and the answered
--   ones lacking some judge's verdict. For an arena rating, failed is the sampled queries the system had no answer
--   to (each a loss against every system that answered), and answered / judge_failed are NULL.
--   unbounded: for an arena rating with no finite value (value NULL) or an interval open on one side, which side
--   ('high': never lost to the rated systems, 'low': never won, 'both'); NULL for finite ratings and metrics.
--   subset of an arena rating: 'all', or 'window:after_cutoff' / 'window:before_cutoff' for ratings on the battles
--   whose question is in that window for both systems (sql/025).
CREATE OR REPLACE VIEW leaderboards AS
SELECT benchmark, setting, lang, subset, model, metric, value, ci_low, ci_high,
       CAST(NULL AS INTEGER) AS rank_low, CAST(NULL AS INTEGER) AS rank_high, n, mode AS source,
       FALSE AS predicted, answered, failed, judge_failed, CAST(NULL AS VARCHAR) AS unbounded
FROM leaderboard
UNION ALL
SELECT benchmark, 'arena', lang, subset, model, 'bt_rating', rating, ci_low, ci_high, rank_low, rank_high, n_battles,
       'judge:' || judge, predicted, CAST(NULL AS INTEGER), failed_queries, CAST(NULL AS INTEGER), unbounded
FROM arena_ratings;
