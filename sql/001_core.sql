-- Core bookkeeping: flow runs, stage runs (artifacts), the lake catalog, issues.

CREATE TABLE runs (
    run_id            VARCHAR PRIMARY KEY,     -- babelbench run id (uuid)
    flow              VARCHAR NOT NULL,
    started_at        TIMESTAMP NOT NULL,
    finished_at       TIMESTAMP,
    status            VARCHAR NOT NULL,        -- running | completed | failed
    params            JSON,
    code_version      VARCHAR NOT NULL,
    prefect_flow_run_id VARCHAR,
    mlflow_run_id     VARCHAR,
    message           VARCHAR
);

-- One row per stage run and cell: computed, cached (a cache hit) or failed.
CREATE SEQUENCE artifacts_seq;
CREATE TABLE artifacts (
    artifact_id    BIGINT PRIMARY KEY DEFAULT nextval('artifacts_seq'),
    run_id         VARCHAR,
    stage          VARCHAR NOT NULL,
    stage_version  INTEGER NOT NULL,
    cell           VARCHAR NOT NULL,           -- e.g. "ja", or "ja|model" later
    fingerprint    VARCHAR NOT NULL,
    inputs         JSON,                       -- {input name: fingerprint}
    config         JSON,                       -- the config fields the stage read
    code_version   VARCHAR NOT NULL,
    status         VARCHAR NOT NULL CHECK (status IN ('computed', 'cached', 'failed')),
    rows           BIGINT,
    issues         BIGINT NOT NULL DEFAULT 0,
    message        VARCHAR,
    started_at     TIMESTAMP NOT NULL,
    finished_at    TIMESTAMP NOT NULL,
    seconds        DOUBLE NOT NULL
);

-- Parquet shards of lake-backed tables; the current shards of a (table, cell)
-- are the ones listed here. Paths are relative to $BABELBENCH_HOME/lake.
CREATE TABLE lake_shards (
    table_name   VARCHAR NOT NULL,
    cell         VARCHAR NOT NULL,
    fingerprint  VARCHAR NOT NULL,
    path         VARCHAR NOT NULL,
    rows         BIGINT NOT NULL,
    registered_at TIMESTAMP NOT NULL,
    PRIMARY KEY (table_name, path)
);

-- Items that could not be parsed or were cut off, with where and why.
CREATE TABLE ingest_issues (
    fingerprint  VARCHAR NOT NULL,
    stage        VARCHAR NOT NULL,
    cell         VARCHAR NOT NULL,
    source       VARCHAR,
    position     VARCHAR,
    item         VARCHAR,
    reason       VARCHAR NOT NULL
);

-- Dump files on local disk: downloaded and verified, or found in a local directory.
CREATE TABLE dumps (
    wiki          VARCHAR NOT NULL,
    lang          VARCHAR,
    kind          VARCHAR NOT NULL,            -- cirrus | xml | xml_index | page_props | wikidata
    dump_date     VARCHAR,
    name          VARCHAR NOT NULL,
    url           VARCHAR,
    path          VARCHAR NOT NULL,
    size          BIGINT NOT NULL,
    mtime_ns      BIGINT NOT NULL,
    sha1          VARCHAR NOT NULL,
    md5           VARCHAR,
    verified      BOOLEAN NOT NULL,            -- matched a published checksum
    registered_at TIMESTAMP NOT NULL,
    PRIMARY KEY (path)
);

-- Identity of this warehouse: scopes Prefect cache keys so a deleted or new
-- warehouse never reuses cache records that point at another one's data.
CREATE TABLE warehouse_info AS SELECT CAST(uuid() AS VARCHAR) AS warehouse_id, now() AS created_at;
