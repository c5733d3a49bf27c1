"""MKQA from its published file to the leaderboard: import whole or not at all, answer, score by locale."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from flows.evaluate import EvaluateParams, evaluate_flow
from tasks.errors import ConfigError
from tasks.imports.common import import_dataset
from tasks.metrics.mkqa_data import read_gold
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer

pytestmark = pytest.mark.usefixtures("prefect_api")
SAMPLE = Path(__file__).resolve().parents[2] / "tasks" / "sample" / "mkqa_sample.jsonl"
# The model's English answers to the sample's 8 questions, in file order: six right (aliases count), an answer
# to the unanswerable 7th (wrong), and an abstention on the 8th, whose answer is a long answer (right).
ENGLISH = ["412 km", "Petra Voss", "1871", "Yes.", "Jonas Halvar", "eleven", "Blue.", "I don't know."]


def test_a_bad_line_imports_nothing_and_names_the_line(home: Path, tmp_path: Path) -> None:
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    broken = tmp_path / "mkqa.jsonl"
    broken.write_text("\n".join(lines[:3] + ['{"example_id": 5.0, "queries": {}, "answers": {}}'] + lines[3:]) + "\n")
    with Warehouse(home) as wh:
        with pytest.raises(ConfigError, match=r"mkqa.jsonl line 4: example_id 5.0 is not an integer"):
            import_dataset(wh, "mkqa", broken, "mk", None)
        assert wh.scalar("SELECT count(*) FROM instances") == 0
        assert wh.scalar("SELECT count(*) FROM qa_benchmarks") == 0
        with pytest.raises(ConfigError, match=r"ko cannot be imported \(not every example has it\)"):
            import_dataset(wh, "mkqa", SAMPLE, "mk", ["en", "ko"])


def test_an_mkqa_evaluation_scores_each_locale_against_its_gold_answers(home: Path, server: FakeLLMServer) -> None:
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "good", "backend": "openai", "model": "m", "base_url": server.base_url, "mode": "chat"},
        {"name": "abstain", "backend": "baseline", "model": "abstain"}]}))
    examples = read_gold(SAMPLE)
    for example, answer in zip(examples, ENGLISH, strict=True):
        server.answer(example.queries["en"], answer)
        server.answer(example.queries["de"], "Ich weiß nicht.")  # abstains on every German question
    with Warehouse(home) as wh:
        import_dataset(wh, "mkqa", SAMPLE, "mk", ["en", "de"])
    rows = evaluate_flow(EvaluateParams(benchmark="mk", models=["good", "abstain"], judges=[], home=str(home)))
    assert {r["stage"] for r in rows} == {"inference", "scoring"}  # MKQA needs no judge
    with Warehouse(home) as wh:
        board = {(lang, metric): (value, n) for lang, metric, value, n in wh.query(
            "SELECT lang, metric, value, n FROM leaderboard WHERE benchmark = 'mk' AND model = 'good'")}
        floor = {(lang, metric): value for lang, metric, value in wh.query(
            "SELECT lang, metric, value FROM leaderboard WHERE benchmark = 'mk' AND model = 'abstain'")}
        modes = {m for (m,) in wh.query("SELECT DISTINCT mode FROM leaderboard")}
    assert board[("en", "em")] == (87.5, 8)  # 7 of 8
    assert board[("de", "em")] == (25.0, 8)  # abstaining is right only on the 2 questions without a short answer
    assert board[("all", "f1")] == (pytest.approx(100 * 9 / 16), 16)
    assert modes == {"improved"}
    # the baseline that always abstains scores the share of questions without a short answer: 2 of 8
    assert floor[("en", "f1")] == floor[("de", "f1")] == floor[("all", "f1")] == 25.0


def test_the_eval_command_scores_mkqa_in_the_mode_it_is_given(home: Path) -> None:
    from typer.testing import CliRunner

    from flows.cli import app

    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "abstain", "backend": "baseline", "model": "abstain"}]}))
    with Warehouse(home) as wh:
        import_dataset(wh, "mkqa", SAMPLE, "mk", ["en"])
    command = ["--home", str(home), "eval", "--benchmark", "mk", "--models", "abstain", "--judges", ""]
    wrong = CliRunner().invoke(app, [*command, "--mkqa-mode", "strict"])
    assert wrong.exit_code == 2 and "mkqa_mode" in wrong.output
    result = CliRunner().invoke(app, [*command, "--mkqa-mode", "official"])
    assert result.exit_code == 0, result.output
    with Warehouse(home) as wh:
        rows = {(lang, metric): (value, mode) for lang, metric, value, mode in wh.query(
            "SELECT lang, metric, value, mode FROM leaderboard WHERE benchmark = 'mk'")}
    # The baseline abstains on every question: in the official mode an abstention is no text with no-answer
    # probability 1 (it was the text "I don't know." with probability 0, which matched no gold string: EM 0).
    # Nothing beats everyone abstaining (2 of 8 questions have no short answer), τ stays 0, and at τ 0 every
    # abstention abstains: EM = F1 = 2/8 = 25, 0 on the 6 answerable questions, 100 on the 2 others.  The row
    # over all locales is the official macro average, here of one locale.
    expected = {"em": 25.0, "f1": 25.0, "answerable_em": 0.0, "answerable_f1": 0.0, "unanswerable_em": 100.0,
                "unanswerable_f1": 100.0}
    assert rows == {(lang, metric): (value, "official") for lang in ("en", "all") for metric, value in expected.items()}
