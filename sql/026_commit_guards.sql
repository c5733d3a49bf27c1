-- Rows that concurrent writers of a DuckLake warehouse all rewrite, so that their commits conflict and the later
-- one is replayed on the earlier one's result (tasks/warehouse/db.py): 'artifacts' is rewritten by every commit
-- that records a stage cell's outcome (one cell's outputs and its artifacts row commit together; its artifact_id
-- is the next one), and '<table>' by every upsert of that table. A DuckLake keeps no keys, so this is how two
-- workers computing the same cell leave one result and an upsert never leaves two rows of a key. The embedded
-- warehouse's writers take turns at the file: there the table stays empty.
CREATE TABLE commit_guards (
    name        VARCHAR NOT NULL,
    written_at  TIMESTAMP NOT NULL
);
INSERT INTO commit_guards VALUES ('artifacts', now());
