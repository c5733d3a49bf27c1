"""LLM-graded features: grades read robustly, references chosen by the rules, failures kept as rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.features.grades import graded, parse_grade
from tasks.features.inputs import FeatureInput
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer, fake_client, prompt_of


@pytest.mark.parametrize(("reply", "grade"), [
    ("It states the reference's facts. [[5]]", 5), ("Grade: [[ 3 ]]", 3), ("Grade: 4", 4),
    ("**Score:** 2 — an honest refusal", 2), ("[[2]] first thought, but on reflection [[4]]", 4),
])
def test_grades_are_read_from_the_shapes_graders_write(reply: str, grade: int) -> None:
    assert parse_grade(reply).value == grade


@pytest.mark.parametrize("reply", ["[[7]]", "It is quite good.", ""])
def test_a_reply_without_a_grade_is_a_parse_failure(reply: str) -> None:
    assert parse_grade(reply).status == "parse_failed"


def test_a_base_model_continuing_an_opened_slot_is_read_from_its_first_digit() -> None:
    assert parse_grade("4]] because", primed=True).value == 4


def _item(model: str, answer: str, reference: str | None, *, own: bool = False, status: str = "ok") -> FeatureInput:
    return FeatureInput(f"i-{model}", model, "de", "Wo entspringt die Velna?", status, answer, answer, answer, (),
                        frozenset(), {}, reference, own, "ok", 0.9, 0.1, 0.0)


def test_overlap_is_graded_against_the_reference_and_never_a_system_against_itself(
        tmp_path: Path, server: FakeLLMServer) -> None:
    server.answer("Im Keldagebirge.\n", "Accurate and complete. [[5]]")
    server.answer("In Tarsk.", "It contradicts the reference.")  # no grade: kept as parse_failed
    items = [_item("good", "Im Keldagebirge.", "Im Keldagebirge."), _item("wrong", "In Tarsk.", "Im Keldagebirge."),
             _item("ref", "Im Keldagebirge.", "Im Keldagebirge.", own=True), _item("none", "Ja.", None),
             _item("failed", "", "Im Keldagebirge.", status="call_failed")]
    with Warehouse(tmp_path / "home") as wh:
        values = graded("answer_overlap_score", items, fake_client(wh, server), "fake", None)
    assert [(v.value, v.status) for v in values] == [
        (5.0, "ok"), (None, "parse_failed"), (None, "excluded"), (None, "not_applicable"), (None, "no_response")]
    prompts = [prompt_of(call.body) for call in server.calls]
    assert len(prompts) == 2 and all("Reference answer: Im Keldagebirge." in p for p in prompts)


def test_fluency_is_graded_in_the_question_language(tmp_path: Path, server: FakeLLMServer) -> None:
    server.answer("Grade how fluent", "Fluent German. [[4]]")
    with Warehouse(tmp_path / "home") as wh:
        values = graded("fluency_score", [_item("sys", "Sie entspringt im Keldagebirge.", None)],
                        fake_client(wh, server), "fake", None)
    assert values[0].value == 4.0 and "as text in German" in prompt_of(server.calls[0].body)
