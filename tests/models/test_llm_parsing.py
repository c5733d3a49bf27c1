"""Tolerant readers of model output: what a reader would accept is accepted, the rest gets a reason.

Readers get the model's own answer: the reply past any echo of its prompt (``echo_end``, applied by the client to
every call).  The echo cases use the real templates, whose worked examples hold verdicts and pairs of their own.
"""

from __future__ import annotations

import pytest

from tasks.llm import render
from tasks.llm.parsing import echo_end, parse_qa_pairs, parse_question_answer, parse_tag
from tasks.llm.verdicts import read_yes_no

PASSAGE = "The Kestel Mill is a tide mill on the Ulva estuary. It was built in 1790 and restored in 1985."
OWN_PAIR = ("When was the Kestel Mill built?", "1790")


def _own(reply: str, prompt: str, *, completion: bool = False) -> str:
    """What a stage's reader is given: the reply past its echo of the prompt (as the client cuts it)."""
    return reply[echo_end(reply, prompt, at_start=completion):]


def _eclektic_prompt(*, chat: bool) -> str:
    return render("eclektic_qa", chat=chat, language="English", context=PASSAGE)


def test_question_answer_with_markdown_and_a_primed_label() -> None:
    assert parse_question_answer("**Question:** Wer baute die Brücke?\n**Answer:** Maren Tolk").value == (
        "Wer baute die Brücke?", "Maren Tolk")
    # a completion prompt ended with "Question:", so the reply starts with the question itself
    reply = " In which year did the bridge open?\nAnswer: 1911\nPassage: the model carrying on"
    assert parse_question_answer(reply, primed="Question:").value == ("In which year did the bridge open?", "1911")


def test_a_chat_reply_with_a_preamble_markdown_and_a_closing_remark() -> None:
    reply = ("Sure! Here is a quiz question about the passage:\n\n**Question:** When was the Kestel Mill built?\n"
             "**Answer:** 1790\n\nLet me know if you would like another one.")
    assert parse_question_answer(reply).value == OWN_PAIR
    summary = "Here is the summary:\n\n<summary>The Kestel Mill is a tide mill.</summary>\n\nI kept every name."
    assert parse_tag(summary, "summary").value == "The Kestel Mill is a tide mill."
    verdict = "The document only says when the mill was restored.\n\n<answers>no</answers>"
    assert read_yes_no(verdict, "en", tag="answers").value.value is False


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


# --- a model that repeats its prompt ---------------------------------------------------------------------------------


def test_a_chat_model_repeating_the_whole_prompt_gives_its_own_verdict_not_the_examples() -> None:
    prompt = render("xrag_related", chat=True, title_a="Kestel Mill", text_a=PASSAGE, title_b="Ulva",
                    text_b="The Ulva is a river that reaches the sea at the Kestel Mill.")
    reply = f"{prompt}\n\n**Related:** <related>no</related>"  # the first worked example says yes
    assert read_yes_no(reply, "en", tag="related").value.value is True  # read from the start: the example's verdict
    assert read_yes_no(_own(reply, prompt), "en", tag="related").value.value is False


@pytest.mark.parametrize("start", ["Read the passage", "Passage: The Harlow", "Answer: Leeds"])
def test_an_echo_from_any_point_re_wrapped_is_skipped(start: str) -> None:
    prompt = _eclektic_prompt(chat=True)
    echoed = " ".join(prompt[prompt.index(start):].split())  # one long line, as some chat models quote
    reply = f"You asked:\n> {echoed}\n\n**Question:** When was the Kestel Mill built?\n**Answer:** 1790"
    assert parse_question_answer(_own(reply, prompt)).value == OWN_PAIR


@pytest.mark.parametrize("start", ["Read the passage", "Passage: The Harlow"])  # all, or cut to the context
def test_an_endpoint_returning_prompt_and_completion_is_read_after_the_prompt(start: str) -> None:
    prompt = _eclektic_prompt(chat=False)  # a completion prompt: it ends with the label "Question:"
    completion = " When was the Kestel Mill built?\nAnswer: 1790\n\nPassage: The Ulva is a river.\nQuestion: How long?"
    reply = prompt[prompt.index(start):] + completion
    assert parse_question_answer(_own(reply, prompt, completion=True), primed="Question:").value == OWN_PAIR


@pytest.mark.parametrize("carried_on", [
    "Passage: The Harlow Clock Tower was completed in 1882.\nQuestion: In which city were the bells of the Harlow "
    "Clock Tower cast?\nAnswer: Leeds",  # the worked example again
    f"Passage: {PASSAGE}\nQuestion: Who restored the Kestel Mill?\nAnswer: the Ulva Trust",  # its own instance again
])
def test_a_completion_carrying_on_the_few_shot_pattern_keeps_its_first_answer(carried_on: str) -> None:
    prompt = _eclektic_prompt(chat=False)
    completion = f" When was the Kestel Mill built?\nAnswer: 1790\n\n{carried_on}"
    assert parse_question_answer(_own(completion, prompt, completion=True), primed="Question:").value == OWN_PAIR


def test_an_answer_quoting_a_little_of_the_prompt_is_not_an_echo() -> None:
    prompt = _eclektic_prompt(chat=True)
    reply = "**Question:** In which year was the tide mill on the Ulva estuary built?\n**Answer:** 1790"
    assert echo_end(reply, prompt) == 0
    assert _own("echo: " + prompt, prompt).strip() == ""  # a bare echo leaves nothing to read
    assert parse_question_answer(_own("echo: " + prompt, prompt)).status == "parse_failed"
    # what reading from the start took: the labels the instruction quotes ('keeping the labels "Question:" and …')
    assert parse_question_answer("echo: " + prompt).value == ("and", '" in English.')


def test_an_answer_copying_the_text_it_was_given_is_not_an_echo() -> None:
    names = "Kestel Mill, Ulva Lighthouse, Mirrow Abbey, Orvik Harbour"  # names stay as they are in German
    prompt = render("translate", chat=True, source="English", target="German", text=names)
    assert echo_end(f"**German:** {names}", prompt) == 0
    echoed = f"English: {names}\nGerman: {names}"  # the prompt's last line repeated, label and all
    assert echoed[echo_end(echoed, prompt):] == f"\nGerman: {names}"
