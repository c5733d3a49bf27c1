"""Publish flow: a benchmark or a CLIR collection as a Hugging Face dataset folder (Parquet, card, Croissant),
optionally pushed to the hub, linked from a Prefect artifact."""

from __future__ import annotations

from pathlib import Path

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run
from pydantic import BaseModel, Field

from tasks.publish import publish, push_folder
from tasks.settings import resolve_home
from tasks.stages import artifact_key, flow_session
from tasks.tracking import tracked_run


class PublishParams(BaseModel):
    """Parameters of a publish (a form in the Prefect UI)."""

    benchmark: str = Field(description="The benchmark or CLIR collection to publish (built or imported).")
    out: str = Field(description="The folder to write it under, as <out>/<benchmark>, on the machine running the flow.")
    repo: str | None = Field(None, description="A Hugging Face dataset repository (owner/name) to upload the folder to;"
                                               " needs a token (HF_TOKEN). Empty: the folder only.")
    home: str | None = Field(None, description="babelbench home (warehouse); default $BABELBENCH_HOME or ./.babelbench.")


@flow(name="publish", log_prints=True)
def publish_flow(params: PublishParams) -> list[dict]:
    """Write the folder (atomically, checked by mlcroissant and datasets before it is swapped in), push it when a
    repository is named, and link it from a markdown artifact.  Not a stage cell: a publish is rewritten every time,
    byte for byte the same over the same warehouse: it returns no cells to print."""
    home = str(resolve_home(params.home))
    with flow_session(home) as wh, tracked_run(wh, "publish", params, flow_run.get_id(), logs=False) as run:
        published = publish(wh, params.benchmark, Path(params.out).expanduser().resolve(), params.repo)
        pushed = push_folder(published.folder, params.repo) if params.repo else None
        configurations = ", ".join(f"{name} ({rows} rows)" for name, rows in published.rows.items())
        create_markdown_artifact(
            markdown=f"**{params.benchmark}** published to `{published.folder}`: {configurations}"
                     + (f"; pushed to [{params.repo}]({pushed})" if pushed else ""),
            key=artifact_key("publish", params.benchmark), description=f"Publish of {params.benchmark}")
        run.finish([])
        print(f"{params.benchmark} published to {published.folder}: {configurations}"
              + (f"; pushed to {pushed}" if pushed else ""))
        return []
