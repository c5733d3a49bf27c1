-- Recipes are plugins (tasks.recipe): a benchmark's recipe is checked against the registry when it is written,
-- not by a CHECK that names the built-in ones (DuckDB cannot drop a CHECK in place: the table is made again).
CREATE TABLE qa_benchmarks_v3 (
    benchmark   VARCHAR PRIMARY KEY,
    recipe      VARCHAR NOT NULL,
    langs       VARCHAR[] NOT NULL,
    generator   VARCHAR NOT NULL,             -- registry name of the generating model, or 'import:<file>'
    config      JSON NOT NULL,
    updated_at  TIMESTAMP NOT NULL
);
INSERT INTO qa_benchmarks_v3 SELECT * FROM qa_benchmarks;
DROP TABLE qa_benchmarks;
ALTER TABLE qa_benchmarks_v3 RENAME TO qa_benchmarks;

-- A recipe's own data (a multiple-choice recipe's options, say), in the schema the recipe declares
-- (Recipe.extra); NULL for a recipe that keeps none.
ALTER TABLE qa_items ADD COLUMN extra JSON;
ALTER TABLE instances ADD COLUMN extra JSON;

-- The migrations of plugin packages, each in a namespace of its own (entry points of the group
-- babelbench.migrations), recorded as schema_migrations records the core's.
CREATE TABLE plugin_migrations (
    namespace   VARCHAR NOT NULL,
    version     INTEGER NOT NULL,
    name        VARCHAR NOT NULL,
    checksum    VARCHAR NOT NULL,
    applied_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, version)
);
