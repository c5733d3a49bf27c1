-- The four options of every multiple-choice item, with the article each title names: what a reviewer reads to see
-- whether a distractor is too close to the answer.  Written by the mc-questions stage with the items.
CREATE TABLE mc_options (
    benchmark  VARCHAR NOT NULL,
    item_id    VARCHAR NOT NULL,
    letter     VARCHAR NOT NULL,
    lang       VARCHAR NOT NULL,
    page_id    BIGINT NOT NULL,
    title      VARCHAR NOT NULL,
    correct    BOOLEAN NOT NULL
);
