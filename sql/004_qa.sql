-- QA benchmarks (ECLEKTIC, XRAG): definitions, candidates, generated items,
-- review decisions and instances.  Generation, QC and translation statuses are
-- columns: an item that failed is a row with its reason, never a missing row.

CREATE TABLE qa_benchmarks (
    benchmark   VARCHAR PRIMARY KEY,
    recipe      VARCHAR NOT NULL CHECK (recipe IN ('eclektic', 'xrag')),
    langs       VARCHAR[] NOT NULL,
    generator   VARCHAR NOT NULL,             -- registry name of the generating model
    config      JSON NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);

-- ECLEKTIC: every article considered, with the outcome of each filter.
CREATE TABLE qa_candidates (
    benchmark     VARCHAR NOT NULL,
    lang          VARCHAR NOT NULL,
    page_id       BIGINT NOT NULL,
    qid           VARCHAR,
    title         VARCHAR NOT NULL,
    chars         INTEGER NOT NULL,
    page_views    BIGINT,                      -- NULL when no page-view file was given
    linked_langs  VARCHAR[] NOT NULL,          -- other chosen languages with a sitelink for the QID
    eligible      BOOLEAN NOT NULL,
    reason        VARCHAR,                     -- why not eligible
    selected      BOOLEAN NOT NULL,            -- eligible and within the per-language sample
    fingerprint   VARCHAR NOT NULL
);

-- One generated QA pair.  status: ok | parse_failed | call_failed | skipped_budget.
CREATE TABLE qa_items (
    benchmark     VARCHAR NOT NULL,
    item_id       VARCHAR NOT NULL,
    recipe        VARCHAR NOT NULL,
    lang          VARCHAR NOT NULL,            -- language of question and answer
    question      VARCHAR,
    answer        VARCHAR,
    qtype         VARCHAR,                     -- XRAG: aggregation | comparison | multihop | set
    context       VARCHAR,                     -- ECLEKTIC: the first sentences the question was written from
    documents     JSON NOT NULL,               -- supporting documents: [{lang, page_id, title}]
    used_pairs    JSON,                        -- XRAG: the simple QA pairs the question combines
    status        VARCHAR NOT NULL CHECK (status IN ('ok', 'parse_failed', 'call_failed', 'skipped_budget')),
    reason        VARCHAR,
    request_hash  VARCHAR,                     -- the llm_calls row that produced it
    generator     VARCHAR NOT NULL,
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, item_id)
);

-- Every QC decision, LLM pre-screen or human, with who made it.  check_name:
-- natural | answerable | answer_correct | overall; verdict: pass | fail | unsure.
CREATE TABLE qa_reviews (
    benchmark         VARCHAR NOT NULL,
    item_id           VARCHAR NOT NULL,
    check_name        VARCHAR NOT NULL,
    verdict           VARCHAR NOT NULL CHECK (verdict IN ('pass', 'fail', 'unsure')),
    reviewer          VARCHAR NOT NULL,        -- 'llm:<model>' or 'human:<name>'
    corrected_answer  VARCHAR,
    reason            VARCHAR,
    source            VARCHAR NOT NULL,        -- 'prescreen' or the imported file
    fingerprint       VARCHAR,                 -- the pre-screen stage run (NULL for imports)
    decided_at        TIMESTAMP NOT NULL
);

-- One benchmark instance: a question in one language for one setting, with its documents.
CREATE TABLE instances (
    benchmark     VARCHAR NOT NULL,
    instance_id   VARCHAR NOT NULL,
    item_id       VARCHAR NOT NULL,
    recipe        VARCHAR NOT NULL,
    setting       VARCHAR NOT NULL,
    lang          VARCHAR NOT NULL,            -- language of the question (and expected answer)
    question      VARCHAR NOT NULL,
    answer        VARCHAR NOT NULL,
    source_lang   VARCHAR NOT NULL,
    prompt_hint   JSON,                        -- ECLEKTIC ablations: {kind, source_lang, title} of the hint to give
    judge_context VARCHAR,                     -- ECLEKTIC: the source context in the question's language, for the judge
    documents     JSON NOT NULL,               -- [{lang, page_id, title, text, role: support|distractor}] in presented order
    seed          BIGINT NOT NULL,
    fingerprint   VARCHAR NOT NULL,
    PRIMARY KEY (benchmark, instance_id)
);
