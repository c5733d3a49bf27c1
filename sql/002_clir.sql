-- CLIR recipe: collections, evaluations and their metrics. Hits, qrels and
-- rankings are lake-backed (Parquet) and appear as views of the same names.

CREATE TABLE clir_collections (
    name        VARCHAR PRIMARY KEY,
    langs       VARCHAR[] NOT NULL,
    multi       BOOLEAN NOT NULL,
    config      JSON NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);

CREATE TABLE evaluations (
    eval_id       VARCHAR PRIMARY KEY,
    collection    VARCHAR NOT NULL,
    ranker        VARCHAR NOT NULL,
    rerank        VARCHAR,
    split         VARCHAR NOT NULL,
    config        JSON NOT NULL,
    mlflow_run_id VARCHAR,
    created_at    TIMESTAMP NOT NULL
);

-- One value per (evaluation, direction, metric); src_lang/tgt_lang = 'all' for the mean over directions.
CREATE TABLE eval_metrics (
    eval_id    VARCHAR NOT NULL,
    src_lang   VARCHAR NOT NULL,
    tgt_lang   VARCHAR NOT NULL,
    metric     VARCHAR NOT NULL,
    value      DOUBLE NOT NULL,
    ci_low     DOUBLE,
    ci_high    DOUBLE,
    n_queries  INTEGER NOT NULL,
    PRIMARY KEY (eval_id, src_lang, tgt_lang, metric)
);
