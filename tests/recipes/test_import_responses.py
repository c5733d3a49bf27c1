"""Responses made elsewhere, imported as a model's: read like called ones, checked whole, scored without a call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from flows.cli import app
from flows.evaluate import EvaluateParams, evaluate_flow
from tasks.catalog import INFERENCE
from tasks.errors import ConfigError
from tasks.imports.common import import_dataset
from tasks.imports.responses import import_responses, imported_inference
from tasks.warehouse.db import Warehouse

SAMPLE = Path(__file__).resolve().parents[2] / "tasks" / "sample" / "mkqa_sample.jsonl"
# Answers to the sample's 8 English questions, in file order: the six answerable ones right (aliases count: see
# tests/evaluation/test_mkqa_evaluation.py), an answer to the unanswerable 7th and to the 8th, whose gold is a long answer
# (no short answer): both wrong.
ENGLISH = ["412 km", "Petra Voss", "1871", "Yes.", "Jonas Halvar", "eleven", "Blue.", "Blue."]


def _english_ids(wh: Warehouse) -> list[str]:
    """The sample's English instance ids in file order (an id is '<example_id>|<setting>|<lang>')."""
    order = [json.loads(line)["example_id"] for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line]
    ids = {int(i.split("|")[0]): i for (i,) in wh.query("SELECT instance_id FROM instances WHERE lang = 'en'")}
    return [ids[example] for example in order]


def _write(path: Path, lines: list[dict | str]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n"
                            for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def mk(home: Path) -> Path:
    """A home with the MKQA sample in English and German as benchmark ``mk``, and a registry of one baseline."""
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "abstain", "backend": "baseline", "model": "abstain"}]}))
    with Warehouse(home) as wh:
        import_dataset(wh, "mkqa", SAMPLE, "mk", ["en", "de"])
    return home


@pytest.mark.usefixtures("prefect_api")
def test_imported_responses_are_scored_by_eval_without_any_call(mk: Path, tmp_path: Path) -> None:
    with Warehouse(mk) as wh:
        ids = _english_ids(wh)
        answers = _write(tmp_path / "vllm.jsonl", [{"instance_id": i, "text": t} for i, t in zip(ids, ENGLISH)])
        import_responses(wh, "mk", "vllm-run", answers, ["abstain"])
    # `vllm-run` is no registry model: inference must take the imported rows as they are
    rows = evaluate_flow(EvaluateParams(benchmark="mk", models=["vllm-run"], langs=["en"], judges=[], home=str(mk)))
    assert {(r["stage"], r["status"]) for r in rows} == {("inference", "computed"), ("scoring", "computed")}
    with Warehouse(mk) as wh:
        board = {(lang, metric): (value, n) for lang, metric, value, n in wh.query(
            "SELECT lang, metric, value, n FROM leaderboard WHERE benchmark = 'mk' AND model = 'vllm-run'")}
        assert wh.scalar("SELECT count(*) FROM llm_calls") == 0  # nothing was called
        stored = wh.query("SELECT DISTINCT template FROM responses WHERE model = 'vllm-run'")
    assert board[("en", "em")] == (75.0, 8)  # 6 of 8 right: 100 * 6 / 8
    assert board[("en", "f1")] == (75.0, 8)  # the right ones match exactly (F1 1), the wrong ones share no token
    assert stored == [("import:vllm.jsonl",)]  # the imported rows, not replaced by an inference run

    again = evaluate_flow(EvaluateParams(benchmark="mk", models=["vllm-run"], langs=["en"], judges=[], home=str(mk)))
    assert {(r["stage"], r["status"]) for r in again} == {("inference", "cached"), ("scoring", "cached")}


def test_a_reply_is_read_as_inference_reads_it_and_a_missing_instance_is_a_failed_row(mk: Path, tmp_path: Path) -> None:
    with Warehouse(mk) as wh:
        first, second, third, *_ = _english_ids(wh)
        answers = _write(tmp_path / "r.jsonl", [
            {"instance_id": first, "text": "##Reason: The river Velna is described in [d3] and [d7, d3].\n"
                                           "##Answer: The Velna is 412 kilometres long."},
            {"instance_id": second, "text": "whatever the producer printed", "answer": "Petra Voss",
             "citations": ["p9"], "model": "ignored"},
            {"instance_id": third, "text": "   "},
        ])
        import_responses(wh, "mk", "elsewhere", answers, [])
        rows = {r["instance_id"]: r for r in wh.query_dicts(
            "SELECT instance_id, lang, status, reason, answer, citations, language_status, raw_text"
            " FROM responses WHERE model = 'elsewhere'")}
    assert len(rows) == 8  # the English cell only: the file has no German line
    assert rows[first]["status"] == "ok"
    assert rows[first]["answer"] == "The Velna is 412 kilometres long."  # the answer section
    assert rows[first]["citations"] == ["d3", "d7"]  # in order of first appearance, each once
    assert rows[first]["language_status"] == "ok"  # long enough for lingua: its probabilities are stored
    assert (rows[second]["answer"], rows[second]["citations"]) == ("Petra Voss", ["p9"])  # given, not read
    assert (rows[third]["status"], rows[third]["answer"]) == ("parse_failed", None)  # a blank reply holds no answer
    missing = [r for i, r in rows.items() if i not in (first, second, third)]
    assert {(r["status"], r["reason"]) for r in missing} == {
        ("call_failed", "no line for this instance in the imported r.jsonl")}


@pytest.mark.parametrize(("lines", "error"), [
    (['{"instance_id": "nope|closed_book|en", "text": "x"}'], r"r.jsonl line 1: benchmark 'mk' has no instance"
                                                               r" 'nope\|closed_book\|en'"),
    (['{"instance_id": "ID", "text": "x"}', "{not json"], r"r.jsonl line 2: not JSON"),
    (['{"instance_id": "ID", "answer": "x"}'], r"r.jsonl line 1: not a valid response .*text"),
    (['{"instance_id": "ID", "text": "x"}', "", '{"instance_id": "ID", "text": "y"}'],
     r"r.jsonl line 3: instance '.*' again \(first on line 1\)"),
    (['{"instance_id": "ID", "text": "x", "citations": "d1"}'], r"r.jsonl line 1: not a valid response .*citations"),
])
def test_a_bad_line_is_named_and_nothing_is_written(mk: Path, tmp_path: Path, lines: list[str], error: str) -> None:
    with Warehouse(mk) as wh:
        first = _english_ids(wh)[0]
        path = _write(tmp_path / "r.jsonl", [line.replace("ID", first) for line in lines])
        with pytest.raises(ConfigError, match=error):
            import_responses(wh, "mk", "elsewhere", path, [])
        assert wh.scalar("SELECT count(*) FROM responses") == 0


def test_a_registry_name_an_unknown_benchmark_or_an_empty_file_is_refused(mk: Path, tmp_path: Path) -> None:
    path = _write(tmp_path / "r.jsonl", [])
    with Warehouse(mk) as wh:
        with pytest.raises(ConfigError, match="'abstain' is a model of the registry: give imported responses a name"):
            import_responses(wh, "mk", "abstain", path, ["abstain"])
        with pytest.raises(ConfigError, match="no benchmark 'nope'"):
            import_responses(wh, "nope", "elsewhere", path, ["abstain"])
        with pytest.raises(ConfigError, match="r.jsonl: no responses"):
            import_responses(wh, "mk", "elsewhere", path, ["abstain"])


def test_the_import_responses_command(mk: Path, tmp_path: Path) -> None:
    with Warehouse(mk) as wh:
        first = _english_ids(wh)[0]
    good = _write(tmp_path / "good.jsonl", [{"instance_id": first, "text": "412 km"}])
    result = CliRunner().invoke(app, ["--home", str(mk), "import", "responses", "--benchmark", "mk",
                                      "--model", "batch", "--file", str(good)])
    assert result.exit_code == 0, result.output
    assert "import-responses[mk/batch]: computed" in result.output and "'call_failed': 7, 'ok': 1" in result.output
    taken = CliRunner().invoke(app, ["--home", str(mk), "import", "responses", "--benchmark", "mk",
                                     "--model", "abstain", "--file", str(good)])
    assert taken.exit_code == 2 and "is a model of the registry" in taken.output


def test_eval_of_a_cell_the_imported_file_did_not_cover_says_so(mk: Path, tmp_path: Path) -> None:
    with Warehouse(mk) as wh:
        answers = _write(tmp_path / "en.jsonl", [{"instance_id": _english_ids(wh)[0], "text": "412 km"}])
        import_responses(wh, "mk", "vllm-run", answers, [])
        assert imported_inference(wh, INFERENCE, "c", "mk", "closed_book", "en", "vllm-run", "run") is not None
        with pytest.raises(ConfigError, match="'vllm-run' has imported responses to 'mk', but none in setting"
                                              " 'closed_book', language 'de'"):
            imported_inference(wh, INFERENCE, "c", "mk", "closed_book", "de", "vllm-run", "run")
        # a model without imported responses is not this module's business: inference asks the registry
        assert imported_inference(wh, INFERENCE, "c", "mk", "closed_book", "de", "abstain", "run") is None


def test_the_features_of_imported_responses_are_computed_like_called_ones(mk: Path, tmp_path: Path) -> None:
    from tasks.features.compute import compute_feature
    from tasks.features.models import FeatureModels

    with Warehouse(mk) as wh:
        first, second, *_ = _english_ids(wh)
        answers = _write(tmp_path / "r.jsonl", [{"instance_id": first, "text": "##Answer: 412 km"},
                                                {"instance_id": second, "text": "Petra Voss"}])
        import_responses(wh, "mk", "elsewhere", answers, [])
        compute_feature(wh, "mk", "extra_answer_chars", None, FeatureModels(), "fp")
        values = dict(wh.query("SELECT instance_id, value FROM features WHERE model = 'elsewhere' AND status = 'ok'"))
    assert values == {first: 6.0, second: 10.0}  # len("412 km"), len("Petra Voss"); the 6 missing lines: no_response
