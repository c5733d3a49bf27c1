"""Report flow: the benchmark's self-contained HTML report, logged to MLflow and linked from a Prefect artifact."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run
from pydantic import BaseModel, Field

from tasks.arena.report import write_report
from tasks.errors import ConfigError
from tasks.orchestration import flow_session
from tasks.settings import resolve_home
from tasks.tracking import tracked_run


class ReportParams(BaseModel):
    """Parameters of a report (a form in the Prefect UI)."""

    benchmark: str = Field(description="The benchmark to report on.")
    out: str = Field(description="Where to write the HTML file.")
    home: str | None = None


@flow(name="report", log_prints=True)
def report_flow(params: ReportParams) -> list[dict]:
    """Write the report; log it and its plots to this run's MLflow run; link it from a Prefect markdown artifact.

    A report is not a stage cell (it is rewritten every time): it returns no cells to print.
    """
    import mlflow

    home = str(resolve_home(params.home))
    out = Path(params.out).resolve()
    with flow_session(home) as wh, tracked_run(wh, "report", params, flow_run.get_id()) as run:
        known = wh.scalar("SELECT count(*) FROM leaderboards WHERE benchmark = ?", [params.benchmark])
        if not known:
            raise ConfigError(f"benchmark {params.benchmark!r} has no leaderboard or arena ratings yet; run"
                              " `babelbench eval` or `babelbench arena` first")
        sections = write_report(wh, params.benchmark, out)
        mlflow.log_artifact(str(out))
        for section in sections:
            for name, svg in section.figures.items():
                if svg:
                    mlflow.log_text(svg, f"plots/{section.name}/{name}")
        create_markdown_artifact(
            markdown=f"Report of **{params.benchmark}**: [{out.name}]({out.as_uri()}) — also in MLflow run"
                     f" `{run.mlflow_run_id}` (artifact `{out.name}`).",
            key=f"report-{params.benchmark.lower().replace('_', '-')}", description=f"Report of {params.benchmark}")
        run.finish([])
        print(f"report written to {out}")
        return []
