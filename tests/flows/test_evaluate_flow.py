"""The evaluation flow end to end: two models answer an ECLEKTIC benchmark, a judge reads the answers, the
leaderboard and MLflow hold the protocol's numbers (worked out by hand below), and reruns pay nothing twice.

The models and the judge are entries of the home's registry pointing at a loopback endpoint that answers what
the test scripts: ``good`` (a chat model) knows every fact but one, ``weak`` (a base model, completion prompts)
says it does not know, and ``judge`` accepts an answer when it is one of the facts.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from flows.cli import app
from flows.evaluate import EvaluateParams, check_judges, evaluate_flow
from tasks.metrics.leaderboard import ScoringConfig
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer

pytestmark = pytest.mark.usefixtures("prefect_api")

# item → (source language, {language: (question, the fact)})
QUESTIONS = {
    "de:1": ("de", {"de": ("Wann wurde die Velna-Brücke eröffnet?", "1891"),
                    "en": ("When did the Velna Bridge open?", "1891"),
                    "fr": ("Quand le pont de la Velna a-t-il ouvert ?", "1891")}),
    "en:2": ("en", {"en": ("Who wrote The Ferryman's Daughter?", "Maren Tolk"),
                    "de": ("Wer schrieb Die Tochter des Fährmanns?", "Maren Tolk"),
                    "fr": ("Qui a écrit La Fille du passeur ?", "Maren Tolk")}),
}
FACTS = {"1891", "Maren Tolk"}


def _benchmark(home: Path) -> None:
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('e', 'eclektic', ['de', 'en', 'fr'], 'g', '{}', now())")
        for item, (source, asked) in QUESTIONS.items():
            for lang, (question, fact) in asked.items():
                cur.execute("INSERT INTO instances VALUES ('e', ?, ?, 'eclektic', 'closed_book', ?, ?, ?, ?, NULL, ?,"
                            " '[]', 0, 'fp', NULL, NULL, NULL)",
                            [f"{item}:closed_book:{lang}", item, lang, question, fact, source, f"It is {fact}."])


def _judge(prompt: str) -> str:
    answer = prompt.rsplit("\nAnswer:", 1)[1].strip()
    return f"<supported>{'yes' if answer in FACTS else 'no'}</supported>"


@pytest.fixture
def eval_home(home: Path, server: FakeLLMServer) -> Path:
    entries = [{"name": name, "backend": "openai", "model": f"{name}-model", "base_url": server.base_url, "mode": mode,
                "max_concurrency": 2, "timeout": 20}
               for name, mode in (("good", "chat"), ("weak", "completion"), ("judge", "chat"), ("judge2", "chat"))]
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": entries}))
    _benchmark(home)
    for item, (_, asked) in QUESTIONS.items():
        for lang, (question, fact) in asked.items():
            # good knows every fact, except the bridge's year when asked in French
            server.answer(question, "1871" if (item, lang) == ("de:1", "fr") else fact)
    server.answer("\nAnswer:", "I do not know.")  # weak: a completion prompt ends in "Answer:"
    server.answer("You check answers against a reference text.", _judge)
    return home


def _board(home: Path) -> dict[tuple, tuple]:
    with Warehouse(home) as wh:
        rows = wh.query("SELECT model, lang, metric, value, n FROM leaderboard WHERE benchmark = 'e' AND subset = 'all'")
    return {(m, lang, metric): (value, n) for m, lang, metric, value, n in rows}


def _matrix(home: Path, model: str) -> dict[tuple, tuple]:
    """(source, target, metric) → (value, pairs) of the closed-book source × target matrix."""
    with Warehouse(home) as wh:
        rows = wh.query("SELECT subset, lang, metric, value, n FROM leaderboard WHERE benchmark = 'e' AND model = ?"
                        " AND setting = 'closed_book' AND subset LIKE 'source:%'", [model])
    return {(subset.removeprefix("source:"), lang, metric): (value, n) for subset, lang, metric, value, n in rows}


def _means(home: Path, model: str, metric: str) -> dict[str, tuple]:
    """with_diagonal / without_diagonal → (value, cells) of the closed-book matrix's means of ``metric``."""
    with Warehouse(home) as wh:
        rows = wh.query("SELECT subset, value, n FROM leaderboard WHERE benchmark = 'e' AND model = ? AND metric = ?"
                        " AND setting = 'closed_book' AND subset LIKE 'matrix:%'", [model, metric])
    return {subset.removeprefix("matrix:"): (value, n) for subset, value, n in rows}


def test_an_evaluation_scores_each_model_by_the_protocol_and_a_rerun_is_free(eval_home: Path,
                                                                             server: FakeLLMServer) -> None:
    params = EvaluateParams(benchmark="e", models=["good", "weak"], judges=["judge"], home=str(eval_home))
    rows = evaluate_flow(params)
    assert {r["status"] for r in rows} == {"computed"}
    board = _board(eval_home)
    # good: sources de:1/de and en:2/en accepted; pairs de:1→en ✓, de:1→fr ✗, en:2→de ✓, en:2→fr ✓ (percentages)
    assert board[("good", "all", "overall_success")] == (75.0, 4)
    assert board[("good", "all", "transfer")] == (75.0, 4)  # both sources accepted: the same 3 / 4
    assert board[("good", "all", "source_accuracy")] == (100.0, 4)  # pooled over the pairs, like the others
    assert board[("good", "all", "source_question_accuracy")] == (100.0, 2)
    assert board[("good", "fr", "overall_success")] == (50.0, 2)  # de:1→fr ✗, en:2→fr ✓
    matrix = _matrix(eval_home, "good")
    assert {key: value for key, value in matrix.items() if key[2] == "overall_success"} == {
        ("de", "de", "overall_success"): (100.0, 1), ("en", "en", "overall_success"): (100.0, 1),  # the diagonal
        ("de", "en", "overall_success"): (100.0, 1), ("de", "fr", "overall_success"): (0.0, 1),
        ("en", "de", "overall_success"): (100.0, 1), ("en", "fr", "overall_success"): (100.0, 1)}
    assert matrix[("de", "fr", "transfer")] == (0.0, 1)
    # matrix means: with the diagonal (100 + 100 + 100 + 0 + 100 + 100) / 6, without it (100 + 0 + 100 + 100) / 4
    assert _means(eval_home, "good", "overall_success") == {"with_diagonal": (pytest.approx(500 / 6), 6),
                                                            "without_diagonal": (75.0, 4)}
    assert board[("good", "en", "overall_success")] == (100.0, 1)
    # weak: nothing accepted, so no source answer either: transfer is undefined, not 0, over no pair
    assert board[("weak", "all", "overall_success")] == (0.0, 4)
    assert board[("weak", "all", "transfer")] == (None, 0)
    calls = len(server.calls)
    assert calls == 12 + 6  # 6 answers per model, then a verdict per answer of good (weak's refusals are "no" unasked)

    again = evaluate_flow(params)
    assert {r["status"] for r in again} == {"cached"} and len(server.calls) == calls

    # a second judge: inference is reused, only the new judge is asked, and scoring takes the panel
    panel = evaluate_flow(params.model_copy(update={"judges": ["judge", "judge2"]}))
    statuses = {(r["stage"], r["status"]) for r in panel}
    assert ("inference", "cached") in statuses and ("inference", "computed") not in statuses
    assert {r["status"] for r in panel if r["stage"] == "judging" and r["cell"].endswith("/judge2")} == {"computed"}
    assert {r["status"] for r in panel if r["stage"] == "judging" and r["cell"].endswith("/judge")} == {"cached"}
    assert len(server.calls) == calls + 6
    assert _board(eval_home)[("good", "all", "overall_success")] == (75.0, 4)  # two judges who agree


def _runs(home: Path) -> tuple[list, dict]:
    """The evaluation experiment's parent runs, and its model runs by model (the latest of each)."""
    import mlflow

    mlflow.set_tracking_uri(f"sqlite:///{home / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["babelbench-evaluate"], output_format="list", order_by=["start_time"])
    return ([r for r in runs if "mlflow.parentRunId" not in r.data.tags],
            {r.data.tags["babelbench.model"]: r for r in runs if "mlflow.parentRunId" in r.data.tags})


def _traces(run) -> dict[str, object]:  # noqa: ANN001 - an MLflow Run
    """The traces of a model run, by instance id."""
    import mlflow

    found = mlflow.search_traces(locations=[run.info.experiment_id], run_id=run.info.run_id, return_type="list")
    return {trace.info.tags["babelbench.instance_id"]: trace for trace in found}


def _assessments(trace) -> dict[str, object]:  # noqa: ANN001 - an MLflow Trace
    return {a.name: a for a in trace.info.assessments}


def test_each_model_evaluation_is_an_mlflow_evaluation_run_with_traces_a_dataset_and_prompts(eval_home: Path) -> None:
    import hashlib

    import mlflow
    from mlflow import MlflowClient
    from mlflow.genai.datasets import get_dataset

    evaluate_flow(EvaluateParams(benchmark="e", models=["good", "weak"], judges=["judge"], home=str(eval_home)))
    parents, children = _runs(eval_home)
    assert len(parents) == 1 and set(children) == {"good", "weak"}
    good, weak = children["good"], children["weak"]
    assert good.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
    assert good.data.tags["mlflow.runType"] == "genai_evaluate"
    # every run names the warehouse it read, which keeps no snapshots here (the embedded default)
    assert {run.data.tags["babelbench.warehouse.snapshot"] for run in [*parents, good, weak]} == {
        "none (the embedded warehouse keeps no snapshots)"}
    assert good.data.tags["babelbench.warehouse"] == str(eval_home.resolve() / "warehouse.duckdb")
    assert good.data.params["judges"] == "judge" and good.data.params["failed_responses"] == "none"
    # metrics: the headline (overall success over all languages, 75%, see above) and its interval, nothing else
    assert set(good.data.metrics) == {"overall_success/closed_book", "overall_success/closed_book/ci_low",
                                      "overall_success/closed_book/ci_high"}
    assert good.data.metrics["overall_success/closed_book"] == 75.0
    assert good.data.metrics["overall_success/closed_book/ci_low"] <= 75.0 <= good.data.metrics[
        "overall_success/closed_book/ci_high"]
    table = mlflow.load_table("leaderboard.json", run_ids=[good.info.run_id])
    french = table[(table["lang"] == "fr") & (table["subset"] == "all") & (table["metric"] == "overall_success")]
    # good in French: de:1→fr wrong (1871), en:2→fr right; it stands on 4 answers, each pair's source-language one
    # (de:1 in de, en:2 in en) and its French one, none failed
    assert (french.iloc[0]["value"], french.iloc[0]["answered"], french.iloc[0]["failed"]) == (50.0, 4, 0)

    # the benchmark as an evaluation dataset, the input of both runs: its 6 instances with their facts
    [good_input] = good.inputs.dataset_inputs
    assert re.fullmatch(r"e@[0-9a-f]{12}", good_input.dataset.name)
    assert [i.dataset.name for i in weak.inputs.dataset_inputs] == [good_input.dataset.name]
    [dataset] = [d for d in mlflow.genai.datasets.search_datasets(filter_string=f'name = "{good_input.dataset.name}"')]
    records = get_dataset(dataset_id=dataset.dataset_id).to_df()
    by_id = {row["inputs"]["instance_id"]: row for _, row in records.iterrows()}
    assert len(by_id) == 6 and by_id["de:1:closed_book:fr"]["expectations"] == {"expected_response": "1891"}
    assert by_id["en:2:closed_book:de"]["inputs"]["question"] == "Wer schrieb Die Tochter des Fährmanns?"

    # the templates each run used, registered once and linked; a version's tag is the sha256 of the file
    linked = json.loads(good.data.tags["mlflow.linkedPrompts"])
    assert {p["name"] for p in linked} == {"babelbench.answer_closed_book", "babelbench.judge_support"}
    client = MlflowClient()
    template = Path(__file__).resolve().parents[2] / "tasks" / "llm" / "templates" / "answer_closed_book.j2"
    [version] = client.search_prompt_versions("babelbench.answer_closed_book")
    assert version.tags["babelbench.template_hash"] == hashlib.sha256(template.read_bytes()).hexdigest()
    assert version.template == template.read_text(encoding="utf-8")

    # every response is a trace (2 per language, under the sample of 30), its verdicts and gold on it
    traces = _traces(good)
    assert good.data.tags["babelbench.traces.written"] == "6" and len(traces) == 6
    wrong = mlflow.get_trace(traces["de:1:closed_book:fr"].info.trace_id)
    assert [(s.name, s.span_type) for s in wrong.data.spans] == [
        ("de:1:closed_book:fr", "CHAIN"), ("openai:good-model", "CHAT_MODEL"), ("read answer", "PARSER")]
    root, call, read = wrong.data.spans
    assert root.inputs == {"question": "Quand le pont de la Velna a-t-il ouvert ?", "lang": "fr",
                           "setting": "closed_book", "documents": []}
    assert root.outputs == {"answer": "1871"} and read.outputs["abstained"] is False
    assert call.attributes["cache_hit"] is False and call.attributes["backend"] == "openai"
    assert "Quand le pont de la Velna a-t-il ouvert ?" in json.dumps(call.inputs, ensure_ascii=False)
    given = _assessments(wrong)
    assert (given["support"].value, given["support"].source.source_type, given["support"].source.source_id) == (
        False, "LLM_JUDGE", "judge")
    assert given["expected_response"].value == "1891"
    # "1871" has no letters: its language cannot be told, so the rule gives no verdict and says why
    assert given["in_question_language"].value is None
    assert given["in_question_language"].error.error_code == "unchecked"
    # the right English answer is the gold itself: in the question's language by the rule
    assert _assessments(traces["en:2:closed_book:en"])["in_question_language"].value is True

    # weak abstains: read as an abstention, a "no" decided without asking the judge, and the reason says so
    refusal = mlflow.get_trace(_traces(weak)["en:2:closed_book:en"].info.trace_id)
    assert [s.span_type for s in refusal.data.spans] == ["CHAIN", "LLM", "PARSER"]  # a completion model
    assert refusal.data.spans[2].outputs["abstained"] is True
    verdict = _assessments(refusal)["support"]
    assert verdict.value is False and verdict.rationale == "an abstention: no, without asking the judge"

    # a rerun answers from the cache: its traces say so
    evaluate_flow(EvaluateParams(benchmark="e", models=["good"], judges=["judge"], home=str(eval_home)))
    rerun = _runs(eval_home)[1]["good"]
    assert rerun.info.run_id != good.info.run_id
    again = mlflow.get_trace(_traces(rerun)["de:1:closed_book:fr"].info.trace_id)
    assert again.data.spans[1].attributes["cache_hit"] is True
    assert [i.dataset.digest for i in rerun.inputs.dataset_inputs] == [good_input.dataset.digest]  # reused
    assert len(client.search_prompt_versions("babelbench.answer_closed_book")) == 1  # unchanged: not registered again


def test_no_evaluation_run_charts_stage_bookkeeping(eval_home: Path) -> None:
    """Cell counts, rows, seconds, fingerprints and cost are tags and one table, never metrics."""
    import mlflow

    evaluate_flow(EvaluateParams(benchmark="e", models=["good", "weak"], judges=["judge"], home=str(eval_home),
                                 traces={"traces": "none"}))
    parents, children = _runs(eval_home)
    [parent] = parents
    assert parent.data.metrics == {}
    # 2 models × 3 languages, each an inference and a judging cell, and a scoring cell per model: 6 + 6 + 2
    assert (parent.data.tags["babelbench.cells.computed"], parent.data.tags["babelbench.cells.failed"]) == ("14", "0")
    assert parent.data.tags["babelbench.cost.calls"] == "18"  # 6 answers of each model, 6 verdicts on good's
    stages = mlflow.load_table("stages.json", run_ids=[parent.info.run_id])
    assert sorted(stages["stage"].value_counts().items()) == [("inference", 6), ("judging", 6), ("scoring", 2)]
    assert all(len(fp) == 64 for fp in stages["fingerprint"]) and (stages["seconds"] >= 0).all()
    for run in children.values():
        assert all(key.startswith("overall_success/") for key in run.data.metrics), run.data.metrics
        assert run.data.tags["babelbench.traces"] == "none" and run.data.tags["babelbench.traces.written"] == "0"


def test_the_evaluation_run_holds_its_judges_agreement(eval_home: Path) -> None:
    import mlflow

    evaluate_flow(EvaluateParams(benchmark="e", models=["good", "weak"], judges=["judge", "judge2"],
                                 home=str(eval_home), traces={"traces": "none"}))
    [parent] = _runs(eval_home)[0]
    # the two judges answer alike: good's 5 right answers yes, its French 1871 and weak's 6 refusals no —
    # p_o = 1, p_e = (5/12)² + (7/12)² < 1, so κ = 1
    assert parent.data.metrics["kappa.support.judge vs judge2"] == 1.0
    table = mlflow.load_table("judge_agreement.json", run_ids=[parent.info.run_id])
    pooled = table[table["lang"] == "all"].iloc[0]
    assert (list(pooled["judges"]), pooled["n"], pooled["agreement"]) == (["judge", "judge2"], 12, 1.0)
    assert set(table["lang"]) == {"all", "de", "en", "fr"}


def test_the_leaderboard_command_prints_what_the_evaluation_stored(eval_home: Path) -> None:
    evaluate_flow(EvaluateParams(benchmark="e", models=["good"], judges=["judge"], home=str(eval_home)))
    result = CliRunner().invoke(app, ["--home", str(eval_home), "leaderboard", "--benchmark", "e", "--format", "json"])
    assert result.exit_code == 0, result.output
    rows = {(r["lang"], r["metric"]): r for r in json.loads(result.output)}
    assert rows[("all", "overall_success")]["value"] == 75.0 and rows[("all", "overall_success")]["mode"] == "protocol"
    assert {key: rows[("all", "overall_success")][key] for key in ("answered", "failed", "judge_failed")} == {
        "answered": 6, "failed": 0, "judge_failed": 0}
    missing = CliRunner().invoke(app, ["--home", str(eval_home), "leaderboard", "--benchmark", "nope"])
    assert missing.exit_code == 2 and "no leaderboard for benchmark 'nope'" in missing.output


def test_questions_asked_only_in_their_source_language_still_give_the_question_level_source_accuracy(eval_home: Path) -> None:
    with Warehouse(eval_home) as wh, wh.transaction() as cur:  # no translation passed its gate: no pairs
        cur.execute("DELETE FROM instances WHERE lang <> source_lang")
    evaluate_flow(EvaluateParams(benchmark="e", models=["good"], judges=["judge"], home=str(eval_home)))
    board = _board(eval_home)
    assert board[("good", "all", "source_question_accuracy")] == (100.0, 2)  # de:1 in de, en:2 in en: both right
    assert board[("good", "all", "overall_success")] == (None, 0)  # no pair: undefined, not 0
    assert board[("good", "all", "source_accuracy")] == (None, 0)


def test_a_budget_stopped_evaluation_resumes_without_sending_a_request_twice(eval_home: Path,
                                                                             server: FakeLLMServer) -> None:
    from tasks.llm import Budget

    stopped = EvaluateParams(benchmark="e", models=["good"], judges=["judge"], budget=Budget(max_calls=4),
                             home=str(eval_home))
    evaluate_flow(stopped)
    with Warehouse(eval_home) as wh:
        statuses = sorted(s for (s,) in wh.query("SELECT status FROM responses WHERE model = 'good'"))
    # 4 paid calls in the whole run: answers first, so 4 of the 6 questions answered and nothing left to judge them
    assert statuses.count("ok") + statuses.count("skipped_budget") == 6 and statuses.count("skipped_budget") >= 2
    assert len(server.calls) == 4
    evaluate_flow(stopped.model_copy(update={"budget": Budget()}))
    bodies = [json.dumps(call.body, sort_keys=True) for call in server.calls]
    assert len(bodies) == len(set(bodies)) == 6 + 6  # every answer and every verdict asked exactly once
    assert _board(eval_home)[("good", "all", "overall_success")] == (75.0, 4)


def test_a_changed_instance_recomputes_only_its_own_cells_and_a_changed_reference_only_its_judging(
        eval_home: Path, server: FakeLLMServer) -> None:
    params = EvaluateParams(benchmark="e", models=["good"], judges=["judge"], home=str(eval_home))
    evaluate_flow(params)

    def computed(rows: list[dict]) -> set[tuple[str, str]]:
        return {(r["stage"], r["cell"]) for r in rows if r["status"] == "computed"}

    with Warehouse(eval_home) as wh, wh.transaction() as cur:  # a French question reworded
        cur.execute("UPDATE instances SET question = 'Qui est l''auteur de La Fille du passeur ?'"
                    " WHERE instance_id = 'en:2:closed_book:fr'")
    server.answer("Qui est l'auteur de La Fille du passeur ?", "Maren Tolk")
    assert computed(evaluate_flow(params)) == {
        ("inference", "e/closed_book/fr/good"), ("judging", "e/closed_book/fr/good/judge"), ("scoring", "e/good")}
    with Warehouse(eval_home) as wh, wh.transaction() as cur:  # the context the judge reads for German, corrected
        cur.execute("UPDATE instances SET judge_context = 'Maren Tolk schrieb es.' WHERE instance_id = 'en:2:closed_book:de'")
    assert computed(evaluate_flow(params)) == {("judging", "e/closed_book/de/good/judge"), ("scoring", "e/good")}


@pytest.fixture
def down_home(eval_home: Path) -> Path:
    """``eval_home`` with ``down``: a model registered at an endpoint where nothing listens (port 9, discard)."""
    registry = yaml.safe_load((eval_home / "models.yaml").read_text())
    registry["models"].append({"name": "down", "backend": "openai", "model": "down-model", "mode": "chat",
                               "base_url": "http://127.0.0.1:9/v1", "max_concurrency": 2, "timeout": 5})
    (eval_home / "models.yaml").write_text(yaml.safe_dump(registry))
    return eval_home


def test_a_model_whose_endpoint_is_down_gets_no_credit_and_the_leaderboard_and_exit_code_say_it_failed(
        down_home: Path) -> None:
    result = CliRunner().invoke(app, ["--home", str(down_home), "eval", "--benchmark", "e", "--models", "good,down",
                                      "--judges", "judge"])
    assert result.exit_code == 1, result.output
    # one line naming the model that failed (and not the one that answered), with the commonest reason
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: model down: 6 of 6 responses failed (call_failed: ")
    assert "good" not in errors[0]
    board = _board(down_home)
    # every question asked is in the denominators: 4 pairs and 2 source questions, none accepted
    assert board[("down", "all", "overall_success")] == (0.0, 4)
    assert board[("down", "all", "source_question_accuracy")] == (0.0, 2)
    assert board[("down", "all", "transfer")] == (None, 0)
    assert board[("good", "all", "overall_success")] == (75.0, 4)
    shown = CliRunner().invoke(app, ["--home", str(down_home), "leaderboard", "--benchmark", "e", "--format", "json"])
    rows = {(r["model"], r["lang"], r["subset"], r["metric"]): r for r in json.loads(shown.output)}
    down = rows[("down", "all", "all", "overall_success")]
    assert (down["answered"], down["failed"], down["judge_failed"]) == (0, 6, 0)
    good = rows[("good", "all", "all", "overall_success")]
    assert (good["answered"], good["failed"], good["judge_failed"]) == (6, 0, 0)
    table = CliRunner().invoke(app, ["--home", str(down_home), "leaderboard", "--benchmark", "e", "--models", "down"])
    assert table.output.splitlines()[0].split()[9:13] == ["n", "answered", "failed", "judge_failed"]
    # down's transfer over no pair is undefined ("-"); a value from one question has no interval ("n/a")
    assert "n/a" in table.output
    csv_out = CliRunner().invoke(app, ["--home", str(down_home), "leaderboard", "--benchmark", "e", "--format", "csv"])
    assert "answered,failed,judge_failed" in csv_out.output.splitlines()[0]
    # in MLflow each of down's 6 responses is an error trace saying why, with nothing read from it
    import mlflow

    traces = _traces(_runs(down_home)[1]["down"])
    assert len(traces) == 6 and {t.info.state.value for t in traces.values()} == {"ERROR"}
    failed = mlflow.get_trace(traces["de:1:closed_book:fr"].info.trace_id)
    assert failed.data.spans[0].status.description.startswith("call_failed: ")
    assert "read answer" not in [span.name for span in failed.data.spans]


def test_a_failed_verdict_is_counted_and_incorrect_unless_the_user_excludes_it(eval_home: Path,
                                                                                server: FakeLLMServer) -> None:
    # the judge's reply on the French question of en:2 cannot be read; every other verdict as before
    server.answer("You check answers against a reference text.",
                  lambda prompt: "no idea" if "Fille du passeur" in prompt else _judge(prompt))
    params = EvaluateParams(benchmark="e", models=["good"], judges=["judge"], home=str(eval_home))
    evaluate_flow(params)
    with Warehouse(eval_home) as wh:
        counts = wh.query("SELECT answered, failed, judge_failed FROM leaderboard WHERE model = 'good'"
                          " AND setting = 'closed_book' AND lang = 'all' AND subset = 'all' AND metric = 'transfer'")
    assert counts == [(6, 0, 1)]
    board = _board(eval_home)
    # pairs de:1→en ✓, de:1→fr ✗ (1871), en:2→de ✓, en:2→fr unjudged → incorrect: 2 of 4
    assert board[("good", "all", "overall_success")] == (50.0, 4)
    assert board[("good", "fr", "overall_success")] == (0.0, 2)
    evaluate_flow(params.model_copy(update={"scoring": ScoringConfig(judge_failures="exclude")}))
    board = _board(eval_home)
    # en:2→fr left out: 2 of the 3 other pairs; in French only de:1→fr is left, a failure
    assert board[("good", "all", "overall_success")] == (pytest.approx(100 * 2 / 3), 3)
    assert board[("good", "fr", "overall_success")] == (0.0, 1)


def test_a_judge_that_is_also_a_contestant_is_refused_unless_the_user_allows_it(eval_home: Path) -> None:
    result = CliRunner().invoke(app, ["--home", str(eval_home), "eval", "--benchmark", "e", "--models", "good,judge",
                                      "--judges", "judge"])
    assert result.exit_code == 2
    assert "error: judge would judge its own answers" in result.output and "--judge-own-system" in result.output
    check_judges(EvaluateParams(benchmark="e", models=["good", "judge"], judges=["judge"], judge_own_system=True))


def test_a_baseline_that_compares_with_the_gold_is_refused_on_a_benchmark_without_any(home: Path,
                                                                                      tmp_path: Path) -> None:
    from tasks.imports.common import import_dataset
    from tests.recipes.test_import_miracl import _miracl

    home.mkdir(parents=True)
    with Warehouse(home) as wh:  # judged passages and questions, no answers; two systems answered
        import_dataset(wh, "miracl", _miracl(tmp_path), "mirage", None)
        with wh.transaction() as cur:
            for model in ("extractive", "abstain"):
                cur.execute("INSERT INTO responses (benchmark, instance_id, model, setting, lang, status, answer,"
                            " citations, template, fingerprint) SELECT 'mirage', instance_id, ?, setting, lang, 'ok',"
                            " 'Im Keldagebirge.', [], 't', 'fp' FROM instances WHERE benchmark = 'mirage'", [model])
    for args in (["arena", "--benchmark", "mirage", "--models", "extractive,abstain", "--judge", "reference-judge"],
                 ["eval", "--benchmark", "mirage", "--models", "oracle"]):
        result = CliRunner().invoke(app, ["--home", str(home), *args])
        errors = [line for line in result.output.splitlines() if line.startswith("error:")]
        assert result.exit_code == 2 and len(errors) == 1, result.output
        assert "benchmark 'mirage' has no gold answers" in errors[0], errors
    with Warehouse(home) as wh:  # refused before any call: nothing judged, nothing answered by the oracle
        assert wh.scalar("SELECT count(*) FROM battles") == 0
        assert wh.scalar("SELECT count(*) FROM responses WHERE model = 'oracle'") == 0
