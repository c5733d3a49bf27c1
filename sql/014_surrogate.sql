-- The surrogate judge: ratings predicted from features for systems the judge never saw, and the
-- surrogate's validation per benchmark and judge.
ALTER TABLE arena_ratings ADD COLUMN predicted BOOLEAN DEFAULT FALSE;   -- never NULL: every insert gives it

CREATE TABLE surrogate_reports (
    benchmark     VARCHAR NOT NULL,
    judge         VARCHAR NOT NULL,
    report        JSON NOT NULL,               -- validation (R², Kendall τ), importances, ablations, predictions
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, judge)
);
