"""An evaluation seen where MLflow 3 users look: a real ``mlflow server`` on loopback (its own SQLite store), the
bundled sample evaluated and arena-judged against it through ``MLFLOW_TRACKING_URI``, then read back through
``MlflowClient`` — traces with the judge's feedback (source, value, rationale), the rules' code feedback and the gold
expectation, the benchmark's dataset as the runs' input, the templates in the prompt registry, no stage bookkeeping
among the metrics — and one trace opened in headless Chromium, where its assessments must show."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from deployments.mlflow_screenshots import JUDGE, SAMPLE, evaluate_sample, mlflow_server, open_assessments
from deployments.screenshots import Browser
from tasks.warehouse.db import Warehouse
from tests.support.browser import chromium

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("prefect_api")]

TEMPLATES = Path(__file__).resolve().parents[2] / "tasks" / "llm" / "templates"
SYSTEMS = ["oracle", "abstain"]
#: The only metrics a run charts: XRAG's headline, accuracy, per setting over all languages, and its interval.
HEADLINE = re.compile(r"accuracy/[a-z_]+(/ci_low|/ci_high)?")


def _by_name(assessments: list) -> dict[str, list]:  # noqa: ANN401 - MLflow Assessment entities
    found: dict[str, list] = {}
    for assessment in assessments:
        found.setdefault(assessment.name, []).append(assessment)
    return found


def test_an_evaluation_against_a_tracking_server_is_traces_datasets_and_prompts_a_browser_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mlflow import MlflowClient

    home = tmp_path / "home"
    with mlflow_server(tmp_path, timeout=300) as url:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", url)
        monkeypatch.setenv("BABELBENCH_HOME", str(home))
        evaluate_sample(home, traces="2", systems=SYSTEMS)
        client = MlflowClient(url)
        with Warehouse(home) as wh:
            gold = dict(wh.query("SELECT instance_id, answer FROM instances WHERE benchmark = ?", [SAMPLE]))

        evaluation = client.get_experiment_by_name("babelbench-evaluate").experiment_id
        arena = client.get_experiment_by_name("babelbench-arena").experiment_id
        runs = {run.data.tags.get("babelbench.model", "parent"): run for run in client.search_runs([evaluation])}
        assert set(runs) == {"oracle", "abstain", "parent"}
        [arena_run] = client.search_runs([arena])
        every_run = client.search_runs([e.experiment_id for e in client.search_experiments()])
        assert len(every_run) == 4  # the evaluation, its two model runs, the arena
        for run in every_run:  # stage bookkeeping is tags and a table, never a metric
            assert all(HEADLINE.fullmatch(key) for key in run.data.metrics), run.data.metrics
        for run in (runs["parent"], arena_run):
            assert run.data.metrics == {} and run.data.tags["babelbench.cells.failed"] == "0"

        # the benchmark is one evaluation dataset, every instance a record, the input of every evaluation run
        names = {i.dataset.name for run in [*runs.values(), arena_run] for i in run.inputs.dataset_inputs}
        assert len(names) == 1 and next(iter(names)).startswith(f"{SAMPLE}@")
        [dataset] = client.search_datasets(experiment_ids=[evaluation])
        assert dataset.name in names and len(client.get_dataset(dataset.dataset_id).records) == len(gold)

        # the oracle's traces: 2 per language (de, fr), each judged right, with the judge's word for it
        oracle = runs["oracle"]
        assert oracle.data.tags["mlflow.runType"] == "genai_evaluate" and oracle.data.tags["babelbench.traces.written"] \
            == "4"
        traces = client.search_traces(locations=[evaluation], run_id=oracle.info.run_id)
        assert sorted(t.info.tags["babelbench.lang"] for t in traces) == ["de", "de", "fr", "fr"]
        for found in traces:
            trace = client.get_trace(found.info.trace_id)
            assessments = _by_name(trace.info.assessments)
            [correct] = assessments["correct"]
            assert (correct.value, correct.source.source_type, correct.source.source_id) == (True, "LLM_JUDGE", JUDGE)
            # the oracle answers with the gold answer itself: every word of it
            assert correct.rationale.startswith("The answer holds 100% of the reference answer's words")
            [language] = assessments["in_question_language"]
            assert (language.value, language.source.source_type) == (True, "CODE")
            [expected] = assessments["expected_response"]
            assert expected.value == gold[trace.info.tags["babelbench.instance_id"]]
            assert [s.name for s in trace.data.spans][1:] == ["baseline:oracle", "read answer"]
            # the arena computed the features after the evaluation: each is code feedback on the trace; the
            # oracle's gold answer is no refusal
            [refusal] = assessments["extra_refusal"]
            assert (refusal.value, refusal.source.source_type, refusal.source.source_id) == (
                0.0, "CODE", "babelbench.features")

        # abstain declines: a "no" the rule decides without asking the judge, and its reason as the rationale
        declined = client.search_traces(locations=[evaluation], run_id=runs["abstain"].info.run_id)
        abstained = _by_name(client.get_trace(declined[0].info.trace_id).info.assessments)
        verdict = abstained["correct"][0]
        assert (verdict.value, verdict.rationale) == (False, "an abstention: no, without asking the judge")
        assert abstained["extra_refusal"][0].value == 1.0

        # the arena's battles: oracle vs abstain on 2 queries per language, both orders favouring the oracle
        battles = client.search_traces(locations=[arena], run_id=arena_run.info.run_id)
        assert len(battles) == 4
        battle = client.get_trace(battles[0].info.trace_id)
        preferred = _by_name(battle.info.assessments)["preferred"]
        assert [(p.value, p.source.source_id) for p in preferred] == [("oracle", JUDGE)] * 2
        assert {p.metadata["shown_first"] for p in preferred} == {"oracle", "abstain"}
        assert json.loads(battle.info.response_preview)["winner"] == "oracle"

        # every template a run used is a registered prompt whose version holds the file's text and sha256
        for template in ("answer_xrag", "judge_correct", "judge_pairwise"):
            text = (TEMPLATES / f"{template}.j2").read_text(encoding="utf-8")
            [version] = client.search_prompt_versions(f"babelbench.{template}")
            assert version.template == text
            assert version.tags["babelbench.template_hash"] == hashlib.sha256(text.encode()).hexdigest()
        assert {p["name"] for p in json.loads(arena_run.data.tags["mlflow.linkedPrompts"])} == {
            "babelbench.judge_pairwise"}

        # in a browser: each trace's page shows the judge, its rationale and the gold answer, whichever place the
        # pane gives the judge's feedback among the rest
        browser = Browser(tmp_path, chromium())
        try:
            for found in traces:
                browser.open(f"{url}/#/experiments/{evaluation}/traces?selectedEvaluationId={found.info.trace_id}",
                             ("read answer",), timeout=120)
                open_assessments(browser, timeout=60)
                text = browser.evaluate("document.body.innerText")
                assert "The answer holds 100% of the reference answer" in text
                assert gold[found.info.tags["babelbench.instance_id"]] in text
        finally:
            browser.close()
