"""Where the report goes: the MLflow run of the benchmark's latest completed evaluation, and a Prefect key."""

from __future__ import annotations

import json
from pathlib import Path

from tasks.arena.report import evaluation_run
from tasks.reporting import artifact_key
from tasks.warehouse.db import Warehouse


def test_the_report_belongs_to_the_latest_completed_evaluation_of_its_benchmark(home: Path) -> None:
    home.mkdir(parents=True)
    runs = [  # run id, flow, started, status, benchmark, MLflow run
        ("r1", "evaluate", "2025-01-01", "completed", "m", "ml-evaluate-old"),
        ("r2", "arena", "2025-01-02", "completed", "m", "ml-arena"),
        ("r3", "evaluate", "2025-01-03", "failed", "m", "ml-evaluate-failed"),
        ("r4", "report", "2025-01-04", "completed", "m", "ml-report"),
        ("r5", "evaluate", "2025-01-05", "completed", "other", "ml-other"),
    ]
    with Warehouse(home) as wh:
        with wh.transaction() as cur:
            cur.executemany("INSERT INTO runs (run_id, flow, started_at, status, params, code_version, mlflow_run_id)"
                            " VALUES (?, ?, ?, ?, ?, 'v', ?)",
                            [[r, flow, started, status, json.dumps({"benchmark": benchmark}), ml]
                             for r, flow, started, status, benchmark, ml in runs])
        assert evaluation_run(wh, "m") == "ml-arena"
        assert evaluation_run(wh, "other") == "ml-other"
        assert evaluation_run(wh, "unknown") is None


def test_a_prefect_artifact_key_has_only_lowercase_letters_digits_and_dashes() -> None:
    assert artifact_key("report", "MIRAGE_de.v2 (dev)") == "report-mirage-de-v2-dev"
    assert artifact_key("report", "m") == "report-m"
