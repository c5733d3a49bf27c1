"""The optional "does this document answer the question?" check of distractor candidates, asked of a model.

The rules already reject documents that contain the normalised gold answer;
a model also catches answers written another way (a paraphrase, a unit
conversion, a translation). A verdict that cannot be had — the call failed,
the budget stopped it, the reply did not parse — is ``None``: the candidate
is marked unverified and not used unless the user says so
(``use_unverified_distractors``), and a rerun asks again.
"""

from __future__ import annotations

from tasks.distractors.config import DistractorConfig
from tasks.distractors.select import AnswerCheck
from tasks.llm import Budget, BudgetLedger, LLMClient, prompt_request
from tasks.llm.parsing import parse_tagged_yes_no
from tasks.qa.outcomes import item_outcome

TEMPLATE = "distractor_check"
TAG = "answers"


def llm_answer_check(client: LLMClient, model: str, config: DistractorConfig, *,
                     budget: Budget | BudgetLedger | None = None, stage: str = "distractor-check") -> AnswerCheck:
    """An :data:`AnswerCheck` that asks ``model`` (a registry name) one yes/no question per document."""
    spec = client.registry.get(model)
    primed = f"<{TAG}>" if spec.mode == "completion" else ""

    def check(pairs: list[tuple[str, str]]) -> list[bool | None]:
        requests = [prompt_request(spec, TEMPLATE, max_tokens=config.check_max_tokens, stop=(f"</{TAG}>", "\n"),
                                   question=question, document=text[: config.check_chars])
                    for question, text in pairs]
        results = client.run_sync(model, requests, stage=stage, budget=budget)
        outcomes = [item_outcome(result, lambda reply: parse_tagged_yes_no(reply, TAG, primed=primed))
                    for result in results]
        return [outcome.value if outcome.ok else None for outcome in outcomes]

    return check
