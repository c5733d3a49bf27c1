"""An item's status from its model call: the parsed value, or why there is none (shared by every stage that calls
a model per item)."""

from __future__ import annotations

from collections.abc import Callable

from tasks.llm.parsing import Parsed
from tasks.llm.types import CallResult


def item_outcome(result: CallResult, parse: Callable[[str], Parsed]) -> Parsed:
    """The item's status: ``ok`` with the parsed value, or why there is none.

    A failed call becomes ``call_failed`` with the client's reason, a budget
    stop ``skipped_budget``; an answer that does not parse ``parse_failed``.
    """
    if result.response is None:
        if result.status == "skipped_budget":
            # a retry the budget stopped says so, with the failure it was retrying
            return Parsed("skipped_budget", None, result.error or "not called: the run's budget was reached")
        return Parsed("call_failed", None, result.error or "the call failed")
    return parse(result.answer)  # past any echo of the prompt: never the prompt's worked example
