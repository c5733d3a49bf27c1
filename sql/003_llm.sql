-- Model calls: the cache that makes reruns free and crashes lose no paid work.
-- One row per distinct request (request_hash = sha256 of backend, model, mode,
-- messages or prompt, and parameters). Only 'ok' rows are served from the
-- cache; a 'failed' row is replaced when a rerun calls again.

CREATE TABLE llm_calls (
    request_hash   VARCHAR PRIMARY KEY,
    model_name     VARCHAR NOT NULL,          -- registry name of the model that made the call
    backend        VARCHAR NOT NULL,          -- openai | llamacpp | anthropic
    model          VARCHAR NOT NULL,          -- provider model id or GGUF path
    mode           VARCHAR NOT NULL,          -- chat | completion
    request        JSON NOT NULL,             -- what was hashed: messages or prompt, and parameters
    status         VARCHAR NOT NULL CHECK (status IN ('ok', 'failed')),
    response_text  VARCHAR,
    finish_reason  VARCHAR,
    input_tokens   INTEGER,
    output_tokens  INTEGER,
    latency_s      DOUBLE,                    -- of the successful attempt
    cost_usd       DOUBLE NOT NULL,
    attempts       INTEGER NOT NULL,          -- tries made, retries included
    error          VARCHAR,                   -- why it failed (status 'failed')
    stage          VARCHAR NOT NULL,          -- the stage that made the call
    raw            JSON,                      -- small provider fields: id, model, usage
    created_at     TIMESTAMP NOT NULL
);
