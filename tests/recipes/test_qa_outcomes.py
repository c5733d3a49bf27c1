"""An item's status from its model call: every way a call can end gives a row with the real reason."""

from __future__ import annotations

from tasks.llm import CallResult, LLMResponse
from tasks.llm.outcomes import item_outcome
from tasks.llm.parsing import parse_question_answer


def test_a_call_never_sent_for_the_budget_says_so() -> None:
    outcome = item_outcome(CallResult("skipped_budget", "h"), parse_question_answer)
    assert (outcome.status, outcome.reason) == ("skipped_budget", "not called: the run's budget was reached")


def test_a_retry_stopped_by_the_budget_keeps_the_failure_it_was_retrying() -> None:
    error = "stopped by the budget after 2 attempts: transient: HTTP 503 overloaded"
    outcome = item_outcome(CallResult("skipped_budget", "h", error=error, attempts=2), parse_question_answer)
    assert outcome.status == "skipped_budget" and outcome.reason == error


def test_a_failed_call_keeps_the_client_reason_and_an_answer_is_parsed() -> None:
    failed = item_outcome(CallResult("failed", "h", error="permanent: HTTP 400 bad request"), parse_question_answer)
    assert (failed.status, failed.reason) == ("call_failed", "permanent: HTTP 400 bad request")
    ok = item_outcome(CallResult("ok", "h", response=LLMResponse("Question: Where is Tarsk?\nAnswer: Velna", 1, 1,
                                                                 "stop", 0.1)), parse_question_answer)
    assert (ok.status, ok.value) == ("ok", ("Where is Tarsk?", "Velna"))
