"""Import flow: a published dataset (MKQA, ECLEKTIC, XRAG, MIRACL, CLIRMatrix, or an installed package's layout)
becomes a benchmark or collection."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from prefect import flow
from prefect.runtime import flow_run
from pydantic import BaseModel, Field

from tasks.catalog import IMPORT
from tasks.imports import IMPORTERS, import_cell
from tasks.settings import resolve_home
from tasks.stages import collect_outcomes, finish_run, flow_session, import_stage
from tasks.tracking import tracked_run

#: every registered importer, the built-in layouts' and installed packages', an enum in the form
Dataset = Literal[tuple(IMPORTERS.names())]  # type: ignore[valid-type]


class ImportParams(BaseModel):
    """Parameters of an import (a form in the Prefect UI)."""

    dataset: Dataset = Field(description="The published layout of the source: mkqa (mkqa.jsonl.gz), eclektic"
                                         " (eclektic_main.jsonl), xrag (xrag.dev/test.jsonl), miracl (a directory of"
                                         " topics, qrels and corpus files: a MIRAGE benchmark) or clirmatrix (a"
                                         " collection directory, as `clir export` writes it) or hf (a folder `babelbench publish` wrote).")
    source: str = Field(description="Path of the published file or directory, as the machine running the flow sees it.")
    name: str | None = Field(None, description="Benchmark (or collection) name; default: the dataset's (mkqa,"
                                               " eclektic, xrag; mirage for miracl), the directory's for clirmatrix and hf.")
    langs: list[str] | None = Field(None, description="Languages to keep; all the source has if empty.")
    split: str = Field("dev", description="miracl only: the topics/qrels split to read (MIRAGE uses dev).")
    options: dict[str, Any] = Field(default_factory=dict, description="Options of the dataset's layout (an installed"
                                    " package's importer may take some).")
    home: str | None = Field(None, description="babelbench home (warehouse); default $BABELBENCH_HOME or ./.babelbench.")
    force: bool = Field(False, description="Import again even if these files were imported unchanged.")


@flow(name="import", log_prints=True)
def import_flow(params: ImportParams) -> list[dict]:
    """Read, check and write the dataset in one transaction, as the import stage's one cell."""
    home = str(resolve_home(params.home))
    source = Path(params.source).expanduser()
    name, cell = import_cell(params.dataset, source, params.name)
    taken = IMPORTERS.get(params.dataset).options
    options = {key: value for key, value in {"split": params.split}.items() if key in taken} | params.options
    force = frozenset({IMPORT.name} if params.force else set())
    with flow_session(home) as wh, tracked_run(wh, "import", params, flow_run.get_id(), logs=False) as run:
        futures = {cell: {IMPORT.name: import_stage.submit(home, cell, params.dataset, str(source), name, params.langs,
                                                           options, force, run.run_id)}}
        return finish_run(run, "import", collect_outcomes(futures))
