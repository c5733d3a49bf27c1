-- The RAG arena: pairwise battles judged in both orders, and the ratings made from them.

-- One judged comparison. model_a is the answer shown first (as "A"), so each pair appears twice per query,
-- once in each order. winner: a | b | tie (NULL unless status is ok).
CREATE TABLE battles (
    benchmark     VARCHAR NOT NULL,
    instance_id   VARCHAR NOT NULL,
    lang          VARCHAR NOT NULL,
    judge         VARCHAR NOT NULL,
    model_a       VARCHAR NOT NULL,
    model_b       VARCHAR NOT NULL,
    winner        VARCHAR CHECK (winner IN ('a', 'b', 'tie')),
    status        VARCHAR NOT NULL CHECK (status IN ('ok', 'call_failed', 'parse_failed', 'skipped_budget')),
    reason        VARCHAR,
    raw_text      VARCHAR,
    request_hash  VARCHAR,
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, instance_id, judge, model_a, model_b)
);

-- Bradley–Terry ratings per judge and language ('all': every language's battles together).
CREATE TABLE arena_ratings (
    benchmark     VARCHAR NOT NULL,
    judge         VARCHAR NOT NULL,
    lang          VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    rating        DOUBLE NOT NULL,             -- natural-log logit, mean zero over the systems
    ci_low        DOUBLE NOT NULL,
    ci_high       DOUBLE NOT NULL,
    rank_low      INTEGER NOT NULL,
    rank_high     INTEGER NOT NULL,
    n_battles     INTEGER NOT NULL,
    ties          VARCHAR NOT NULL,            -- the tie policy: drop | half
    consistency   DOUBLE,                      -- the judge's agreement across both orders
    first_position_rate DOUBLE,                -- share of decisive verdicts for the answer shown first
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, judge, lang, model)
);
