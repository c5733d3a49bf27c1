-- Distractor candidates per QA item and document language; every candidate
-- considered is a row, status kept | rejected with the reason.
CREATE TABLE distractors (
    benchmark     VARCHAR NOT NULL,
    item_id       VARCHAR NOT NULL,
    lang          VARCHAR NOT NULL,            -- language of the document
    page_id       BIGINT NOT NULL,
    title         VARCHAR NOT NULL,
    rank          INTEGER NOT NULL,            -- hybrid rank among the candidates (1 = most similar)
    bm25_score    DOUBLE,
    dense_sim     DOUBLE,
    difficulty    DOUBLE NOT NULL,             -- similarity to the question; higher is harder
    status        VARCHAR NOT NULL CHECK (status IN ('kept', 'rejected')),
    reason        VARCHAR,
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, item_id, lang, page_id)
);
