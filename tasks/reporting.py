"""What a flow run shows on its Prefect page: a table of stage cells and a short summary."""

from __future__ import annotations

import re
from collections.abc import Sequence

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from tasks.tracking import StageOutcome, TrackedRun


def finish_run(run: TrackedRun, flow: str, outcomes: Sequence[StageOutcome], home: str) -> list[dict]:
    """Record the outcomes (warehouse, MLflow), publish the Prefect artifacts, return the rows for callers."""
    run.finish(outcomes)
    publish_summary(flow, outcomes, home=home, mlflow_run_id=run.mlflow_run_id)
    return [o.as_row() for o in outcomes]


def publish_summary(flow: str, outcomes: Sequence[StageOutcome], *, home: str, mlflow_run_id: str | None) -> str:
    """Create the flow run's Prefect artifacts and return the markdown summary."""
    counts = {s: sum(1 for o in outcomes if o.status == s) for s in ("computed", "cached", "failed")}
    lines = [
        f"## babelbench {flow}",
        f"{counts['computed']} cells computed, {counts['cached']} cache hits, {counts['failed']} failed.",
        "",
        f"- warehouse: `{home}/warehouse.duckdb` (`babelbench --home {home} sql \"SELECT * FROM stage_runs\"`)",
        f"- MLflow run: `{mlflow_run_id or '-'}`",
    ]
    failed = [o for o in outcomes if o.status == "failed"]
    if failed:
        lines += ["", "### Failed cells"] + [f"- **{o.stage}[{o.cell}]**: {o.error}" for o in failed]
    issues = [o for o in outcomes if o.ref and o.ref.issues]
    if issues:
        lines += ["", "### Cells with input issues"] + [f"- {o.stage}[{o.cell}]: {o.ref.issues} issue(s) {o.ref.message}" for o in issues if o.ref]
    markdown = "\n".join(lines)
    key = re.sub(r"[^a-z0-9-]+", "-", f"babelbench-{flow}".lower())
    create_table_artifact(table=[o.as_row() for o in outcomes], key=f"{key}-stages", description=f"Stage cells of this {flow} run")
    create_markdown_artifact(markdown=markdown, key=f"{key}-summary", description=f"Summary of this {flow} run")
    return markdown
