-- Model evaluation: what each model answered, what each judge said, and the leaderboard.
-- Imported benchmarks (MKQA, MIRAGE) sit beside the built recipes, and an instance can carry
-- structured gold answers.  Statuses are columns: a failed call is a row with its reason.

-- qa_benchmarks: the recipe check gains the imported recipes (DuckDB cannot alter a CHECK in place).
CREATE TABLE qa_benchmarks_v2 (
    benchmark   VARCHAR PRIMARY KEY,
    recipe      VARCHAR NOT NULL CHECK (recipe IN ('eclektic', 'xrag', 'mkqa', 'mirage')),
    langs       VARCHAR[] NOT NULL,
    generator   VARCHAR NOT NULL,             -- registry name of the generating model, or 'import:<file>'
    config      JSON NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);
INSERT INTO qa_benchmarks_v2 SELECT * FROM qa_benchmarks;
DROP TABLE qa_benchmarks;
ALTER TABLE qa_benchmarks_v2 RENAME TO qa_benchmarks;

-- MKQA: every gold answer of the instance's language, [{type, text, entity, aliases}]; NULL elsewhere.
ALTER TABLE instances ADD COLUMN gold JSON;

-- One model's answer to one instance.
CREATE TABLE responses (
    benchmark     VARCHAR NOT NULL,
    instance_id   VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,            -- registry name
    setting       VARCHAR NOT NULL,
    lang          VARCHAR NOT NULL,            -- the question's language
    status        VARCHAR NOT NULL CHECK (status IN ('ok', 'call_failed', 'parse_failed', 'skipped_budget')),
    reason        VARCHAR,
    raw_text      VARCHAR,                     -- the reply as stored in llm_calls
    answer        VARCHAR,                     -- the answer read from it
    citations     VARCHAR[] NOT NULL,          -- cited document ids, in order of first appearance
    input_tokens  INTEGER,
    output_tokens INTEGER,
    latency_s     DOUBLE,
    request_hash  VARCHAR,                     -- the llm_calls row it came from
    template      VARCHAR NOT NULL,
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, instance_id, model)
);

-- One judge's verdict on one response.  kind: support (ECLEKTIC) | correct (XRAG's panel).
-- status no_response: the response itself failed, so nothing was judged.
CREATE TABLE judgements (
    benchmark     VARCHAR NOT NULL,
    instance_id   VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    judge         VARCHAR NOT NULL,            -- registry name of the judging model
    kind          VARCHAR NOT NULL,
    verdict       VARCHAR CHECK (verdict IN ('yes', 'no')),
    status        VARCHAR NOT NULL CHECK (status IN ('ok', 'call_failed', 'parse_failed', 'skipped_budget', 'no_response')),
    reason        VARCHAR,
    raw_text      VARCHAR,
    request_hash  VARCHAR,
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, instance_id, model, judge)
);

-- One number of the leaderboard with its 95% interval.  lang 'all' pools the languages;
-- subset names a slice (an XRAG question type, ...) or 'all'; mode says how it was scored.
CREATE TABLE leaderboard (
    benchmark     VARCHAR NOT NULL,
    setting       VARCHAR NOT NULL,
    lang          VARCHAR NOT NULL,
    subset        VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    metric        VARCHAR NOT NULL,
    value         DOUBLE,                      -- NULL when undefined (an empty denominator)
    ci_low        DOUBLE,
    ci_high       DOUBLE,
    n             INTEGER NOT NULL,
    mode          VARCHAR NOT NULL,
    judges        VARCHAR[] NOT NULL,
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, setting, lang, subset, model, metric)
);
