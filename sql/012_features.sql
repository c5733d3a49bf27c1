-- Heuristic features of responses (MIRAGE-BENCH), one row per (response, feature).
-- status: ok | no_response | unsupported | not_applicable | excluded (value NULL unless ok).
CREATE TABLE features (
    benchmark     VARCHAR NOT NULL,
    instance_id   VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    feature       VARCHAR NOT NULL,
    value         DOUBLE,
    status        VARCHAR NOT NULL,
    reason        VARCHAR,
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, instance_id, model, feature)
);
