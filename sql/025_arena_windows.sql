-- Arena ratings split by knowledge cutoff (docs/live-benchmarks.md, "The arena by window").
--
-- arena_ratings.subset: 'all' for the ratings of every battle (as before); 'window:after_cutoff' or
-- 'window:before_cutoff' for ratings fitted only on the battles whose question is in that window for both systems
-- (relative to each one's knowledge cutoff). A system without a cutoff has no window rows. The subset enters the
-- primary key, which DuckDB cannot alter in place: the table is rebuilt (its rows are the 'all' subset).
CREATE TABLE arena_ratings_v2 (
    benchmark     VARCHAR NOT NULL,
    judge         VARCHAR NOT NULL,
    lang          VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    rating        DOUBLE,
    ci_low        DOUBLE,
    ci_high       DOUBLE,
    rank_low      INTEGER NOT NULL,
    rank_high     INTEGER NOT NULL,
    n_battles     INTEGER NOT NULL,
    ties          VARCHAR NOT NULL,
    consistency   DOUBLE,
    first_position_rate DOUBLE,
    fingerprint   VARCHAR NOT NULL,
    predicted     BOOLEAN DEFAULT FALSE,
    unbounded     VARCHAR,
    failed_queries INTEGER,
    judged_pairs  INTEGER,
    decisive_verdicts INTEGER,
    order_flips   INTEGER,
    forfeits      INTEGER,
    no_verdict    INTEGER,
    subset        VARCHAR NOT NULL DEFAULT 'all',
    PRIMARY KEY (benchmark, judge, lang, subset, model)
);
INSERT INTO arena_ratings_v2 SELECT *, 'all' FROM arena_ratings;
DROP TABLE arena_ratings;
ALTER TABLE arena_ratings_v2 RENAME TO arena_ratings;
