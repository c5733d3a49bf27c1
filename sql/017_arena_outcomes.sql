-- The arena's outcomes that are not a judge's verdict, and ratings that have no finite value.
--
-- battles: status 'forfeit' is a pair on a sampled query where a system has no answer (its response failed or it
-- was never asked): the system that answered wins without a judge call (winner set, raw_text and request_hash
-- NULL), and two systems without an answer tie. DuckDB cannot alter a CHECK in place: the table is rebuilt.
CREATE TABLE battles_v2 (
    benchmark     VARCHAR NOT NULL,
    instance_id   VARCHAR NOT NULL,
    lang          VARCHAR NOT NULL,
    judge         VARCHAR NOT NULL,
    model_a       VARCHAR NOT NULL,
    model_b       VARCHAR NOT NULL,
    winner        VARCHAR CHECK (winner IN ('a', 'b', 'tie')),
    status        VARCHAR NOT NULL CHECK (status IN ('ok', 'forfeit', 'call_failed', 'parse_failed', 'skipped_budget')),
    reason        VARCHAR,
    raw_text      VARCHAR,
    request_hash  VARCHAR,
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, instance_id, judge, model_a, model_b)
);
INSERT INTO battles_v2 SELECT * FROM battles;
DROP TABLE battles;
ALTER TABLE battles_v2 RENAME TO battles;

-- arena_ratings: rating is the maximum-likelihood logit, NULL where it is unbounded (a system outside the core:
-- it never loses, or never wins, against the rated systems); ci_low / ci_high are NULL where the bootstrap leaves
-- the interval open on that side. unbounded: 'high' | 'low' | 'both' (which side is open), NULL when finite.
-- failed_queries: the sampled queries of the slice on which the system had no answer (each a loss against every
-- system that answered). NULL on rows written before this migration.
ALTER TABLE arena_ratings ALTER COLUMN rating DROP NOT NULL;
ALTER TABLE arena_ratings ALTER COLUMN ci_low DROP NOT NULL;
ALTER TABLE arena_ratings ALTER COLUMN ci_high DROP NOT NULL;
ALTER TABLE arena_ratings ADD COLUMN unbounded VARCHAR;
ALTER TABLE arena_ratings ADD COLUMN failed_queries INTEGER;
