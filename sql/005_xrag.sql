-- XRAG construction: related article pairs and the intermediate model steps.

-- status: candidate (found, not yet checked) | filtered (outside the date window or past max_pairs; see reason)
--         | related | unrelated | parse_failed | call_failed | skipped_budget (the relatedness check)
CREATE TABLE related_pairs (
    benchmark     VARCHAR NOT NULL,
    pair_id       VARCHAR NOT NULL,
    lang_a        VARCHAR NOT NULL,
    page_a        BIGINT NOT NULL,
    lang_b        VARCHAR NOT NULL,
    page_b        BIGINT NOT NULL,
    method        VARCHAR NOT NULL,            -- how the pair was found: entities | dense
    evidence      VARCHAR[] NOT NULL,          -- shared entities (QIDs or titles), or the similarity
    score         DOUBLE NOT NULL,
    days_apart    DOUBLE,                      -- NULL when a timestamp is missing
    status        VARCHAR NOT NULL,
    reason        VARCHAR,
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, pair_id)
);

-- One model step of the question chain: step = summary | simple_qa | question | answer.
-- parsed holds the step's structured output; status as for qa_items.
CREATE TABLE qa_steps (
    benchmark     VARCHAR NOT NULL,
    step          VARCHAR NOT NULL,
    step_key      VARCHAR NOT NULL,            -- summary/simple_qa: <lang>:<page_id>; question: <pair_id>:<qtype>; answer: <pair_id>:<qtype>:<n>
    lang          VARCHAR NOT NULL,
    output        VARCHAR,
    parsed        JSON,
    status        VARCHAR NOT NULL,
    reason        VARCHAR,
    request_hash  VARCHAR,
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, step, step_key)
);
