"""Long stages report their progress as Prefect progress artifacts: parts done of all, items (documents, queries),
their rate and the time left; the counts are those the stages wrote to the warehouse."""

from __future__ import annotations

import re
import time
from pathlib import Path
from uuid import UUID

import pytest

from flows.clir import ClirBuildParams, clir_build_flow
from flows.corpus import CorpusParams, corpus_flow
from tasks.pairing.config import ClirConfig
from tasks.progress import Progress, artifact_key
from tasks.sample.mirror import build_sample_mirror
from tasks.warehouse.db import Warehouse

LANGS = ["en", "de"]
LINE = re.compile(r"^(?P<what>.+): (?P<done>[\d,]+) of (?P<total>[\d,]+) (?P<parts>\w+)s, (?P<items>[\d,]+) (?P<unit>\w+)s, "
                  r"(?P<rate>[\d,]+) (?P=unit)s/s, ETA (?P<eta>.+)$")


def _progress_artifacts(flow_run_id: UUID) -> list[tuple[str, float, dict[str, str]]]:
    """(key, percent, the description's parts) of the progress artifacts of a flow run and its task runs."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterType

    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            type=ArtifactFilterType(any_=["progress"]), flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
    found = []
    for artifact in artifacts:
        match = LINE.match(artifact.description or "")
        assert match, artifact.description
        found.append((artifact.key, float(artifact.data), match.groupdict()))
    return found


@pytest.mark.usefixtures("prefect_api")
def test_ingest_index_and_mining_show_their_progress_with_the_counts_they_wrote(tmp_path: Path) -> None:
    mirror = build_sample_mirror(tmp_path / "mirror")
    home = tmp_path / "home"
    ingest = corpus_flow(CorpusParams(langs=LANGS, source=mirror.root.as_uri(), home=str(home), progress=False),
                         return_state=True)
    build = clir_build_flow(ClirBuildParams(name="t", langs=LANGS, clir=ClirConfig(top_k=20, min_documents=10),
                                            home=str(home)), return_state=True)
    shown = {key: (percent, line) for key, percent, line in
             _progress_artifacts(ingest.state_details.flow_run_id) + _progress_artifacts(build.state_details.flow_run_id)}
    with Warehouse(home) as wh:
        documents = dict(wh.query("SELECT lang, count(*) FROM documents GROUP BY lang"))
        articles = dict(wh.query("SELECT lang, count(*) FROM documents WHERE NOT is_redirect AND NOT is_disambiguation"
                                 " GROUP BY lang"))
    for lang in LANGS:
        expected = {f"documents {lang}": (documents[lang], "doc"), f"index {lang}": (articles[lang], "doc"),
                    f"retrieval {lang}": (articles[lang], "query")}
        for what, (items, unit) in expected.items():
            percent, line = shown[artifact_key(what)]
            assert percent == 100.0 and line["what"] == what and line["done"] == line["total"]
            assert (int(line["items"].replace(",", "")), line["unit"]) == (items, unit)
            assert int(line["rate"].replace(",", "")) > 0 and line["eta"] == "0 s"


def test_the_eta_is_the_time_per_part_so_far_times_the_parts_left() -> None:
    started = time.monotonic()
    progress = Progress("index xx", 4, "doc", parts="block")
    time.sleep(0.2)
    progress.advance(1, 500)
    eta = progress.eta_seconds()
    elapsed = time.monotonic() - started  # read after the ETA's own clock, so it bounds it however busy the machine
    progress.close()
    assert eta is not None and 3 * 0.2 <= eta <= 3 * elapsed  # three blocks left, each as long as the first
    assert LINE.match(progress.summary())["items"] == "500"
    assert Progress("documents xx", None, "doc").eta_seconds() is None  # parts not known beforehand: no ETA


@pytest.mark.usefixtures("prefect_api")
def test_a_models_calls_show_their_progress_in_the_evaluation_run(home: Path) -> None:
    from flows.evaluate import EvaluateParams, evaluate_flow
    from tests.flows.test_evaluate_flow import QUESTIONS, _benchmark

    home.mkdir(parents=True)
    _benchmark(home)
    state = evaluate_flow(EvaluateParams(benchmark="e", models=["extractive"], judges=["reference-judge"],
                                         home=str(home)), return_state=True)
    answering = [(percent, line) for key, percent, line in _progress_artifacts(state.state_details.flow_run_id)
                 if key.endswith("-extractive")]  # one per batch of calls: the model's cells
    instances = sum(len(asked) for _, asked in QUESTIONS.values())
    assert answering and all(percent == 100.0 and line["unit"] == "call" and line["done"] == line["total"]
                             for percent, line in answering)
    assert sum(int(line["items"]) for _, line in answering) == instances
