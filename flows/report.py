"""Report flow: the benchmark's self-contained HTML report, logged to its evaluation's MLflow run and linked from a
Prefect artifact."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run
from pydantic import BaseModel, Field

from tasks.arena import evaluation_run, log_report, write_report
from tasks.settings import resolve_home
from tasks.stages import artifact_key, flow_session, require_results
from tasks.tracking import tracked_run, tracking_uri


class ReportParams(BaseModel):
    """Parameters of a report (a form in the Prefect UI)."""

    benchmark: str = Field(description="The benchmark to report on.")
    out: str = Field(description="Where to write the HTML file.")
    as_of: int | None = Field(None, description="Read the warehouse as it was at this snapshot (a DuckLake's; every"
                                                " report names the one it read); default: the latest.")
    home: str | None = None


@flow(name="report", log_prints=True)
def report_flow(params: ReportParams) -> list[dict]:
    """Write the report from one warehouse snapshot (``as_of``, else the latest), which it names; log it and its
    plots to the evaluation's MLflow run (this run's when the warehouse has no completed evaluation of the
    benchmark); link it from a Prefect markdown artifact.

    A report is not a stage cell (it is rewritten every time): it returns no cells to print.
    """
    home = str(resolve_home(params.home))
    out = Path(params.out).resolve()
    with flow_session(home) as wh, tracked_run(wh, "report", params, flow_run.get_id()) as run:
        results = run.results(params.as_of)  # every read at one snapshot, which the report names
        require_results(results, params.benchmark)
        sections = write_report(results, params.benchmark, out)
        evaluation = evaluation_run(results, params.benchmark)
        logged_to = evaluation or run.mlflow_run_id
        log_report(tracking_uri(wh.home), logged_to, out, sections)
        where = ("the evaluation's MLflow run" if evaluation else
                 "this report's MLflow run (no completed evaluation of it in this warehouse)")
        create_markdown_artifact(
            markdown=f"Report of **{params.benchmark}**: [{out.name}]({out.as_uri()}) — also in {where}"
                     f" `{logged_to}` (artifact `{out.name}`, plots under `plots/`).",
            key=artifact_key("report", params.benchmark), description=f"Report of {params.benchmark}")
        run.finish([])
        print(f"report written to {out}; logged to MLflow run {logged_to}")
        return []
