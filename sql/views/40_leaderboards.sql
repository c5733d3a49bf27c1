-- leaderboards: every number a leaderboard shows, evaluation metrics and arena ratings alike.
--   setting 'arena' and metric 'bt_rating' for Bradley–Terry ratings (natural-log logits, mean zero), with their
--   rank intervals; source is the metric's scoring mode or 'judge:<name>' for a rating.
--   predicted: a rating the surrogate judge predicted from features alone (the judge never saw that system;
--   n is 0 battles) — never to be read as a judged rating. Always false for evaluation metrics.
CREATE OR REPLACE VIEW leaderboards AS
SELECT benchmark, setting, lang, subset, model, metric, value, ci_low, ci_high,
       CAST(NULL AS INTEGER) AS rank_low, CAST(NULL AS INTEGER) AS rank_high, n, mode AS source,
       FALSE AS predicted
FROM leaderboard
UNION ALL
SELECT benchmark, 'arena', lang, 'all', model, 'bt_rating', rating, ci_low, ci_high, rank_low, rank_high, n_battles,
       'judge:' || judge, predicted
FROM arena_ratings;
