"""Tolerant readers of model output: what a reader would accept is accepted, the rest gets a reason."""

from __future__ import annotations

from tasks.llm.parsing import parse_qa_pairs, parse_question_answer, parse_tag, parse_yes_no


def test_question_answer_with_markdown_and_a_primed_label() -> None:
    assert parse_question_answer("**Question:** Wer baute die Brücke?\n**Answer:** Maren Tolk").value == (
        "Wer baute die Brücke?", "Maren Tolk")
    # a completion prompt ended with "Question:", so the reply starts with the question itself
    reply = " In which year did the bridge open?\nAnswer: 1911\nPassage: the model carrying on"
    assert parse_question_answer(reply, primed="Question:").value == ("In which year did the bridge open?", "1911")


def test_full_width_colon_and_quotes_are_accepted() -> None:
    assert parse_question_answer("Question：「韦尔纳河有多长？」\nAnswer：412公里").value == ("韦尔纳河有多长？", "412公里")


def test_numbered_pairs_keep_order_and_a_cut_off_last_pair_is_dropped() -> None:
    reply = "1. Question: a?\nAnswer: b\n2. Question: c?\nAnswer: d\n3. Question: e?"
    assert parse_qa_pairs(reply).value == [("a?", "b"), ("c?", "d")]


def test_no_pair_is_a_parse_failure_with_a_reason() -> None:
    parsed = parse_question_answer("I cannot help with that.")
    assert parsed.status == "parse_failed" and "Question" in (parsed.reason or "")
    assert parse_question_answer("Question: what?\nAnswer:").status == "parse_failed"


def test_tag_unclosed_runs_to_the_end_and_missing_fails() -> None:
    assert parse_tag("Sure. <answer> Tarsk </answer> more", "answer").value == "Tarsk"
    assert parse_tag("<ANSWER>Tarsk", "answer").value == "Tarsk"
    assert parse_tag("Tarsk", "answer").status == "parse_failed"


def test_yes_no_takes_the_first_decisive_word() -> None:
    assert parse_yes_no("<related>Yes</related>").value is True
    assert parse_yes_no("Answer: no, they are about different rivers").value is False
    assert parse_yes_no("maybe").status == "parse_failed"
