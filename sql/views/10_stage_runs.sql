-- stage_runs: the latest outcome of every (stage, cell), for operators.
CREATE OR REPLACE VIEW stage_runs AS
SELECT stage, cell, fingerprint, status, rows, issues, message, finished_at
FROM artifacts
QUALIFY row_number() OVER (PARTITION BY stage, cell ORDER BY artifact_id DESC) = 1;
