-- Machine translations of QA fields with their quality gate.  status: ok |
-- call_failed | parse_failed | skipped_budget; gate: pass | fail (NULL when
-- there was no translation to check).  Only gate = 'pass' rows enter instances.
CREATE TABLE translations (
    benchmark      VARCHAR NOT NULL,
    item_id        VARCHAR NOT NULL,
    field          VARCHAR NOT NULL CHECK (field IN ('question', 'answer', 'context')),
    src_lang       VARCHAR NOT NULL,
    tgt_lang       VARCHAR NOT NULL,
    source_text    VARCHAR NOT NULL,
    text           VARCHAR,                    -- the translation
    back_text      VARCHAR,                    -- round trip into src_lang
    detected_lang  VARCHAR,                    -- lingua's verdict on text
    chrf           DOUBLE,                     -- chrF(back_text, source_text)
    numbers_ok     BOOLEAN,
    entities_ok    BOOLEAN,
    gate           VARCHAR CHECK (gate IN ('pass', 'fail')),
    status         VARCHAR NOT NULL,
    reason         VARCHAR,                    -- every failed check, '; '-separated
    translator     VARCHAR NOT NULL,
    fingerprint    VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, item_id, field, tgt_lang)
);
