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
from tasks.llm.outcomes import item_outcome
from tasks.llm.verdicts import YES_NO, read_yes_no

TEMPLATE = "distractor_check"


def llm_answer_check(client: LLMClient, model: str, config: DistractorConfig, *,
                     budget: Budget | BudgetLedger | None = None, stage: str = "distractor-check") -> AnswerCheck:
    """An :data:`AnswerCheck` that asks ``model`` (a registry name) one yes/no question per document."""
    spec = client.registry.get(model)
    stop = ("\n\n",) if spec.mode == "completion" else None  # a base model carries the examples' pattern on

    def check(asked: list[tuple[str, str, str]]) -> list[bool | None]:
        requests = [prompt_request(spec, TEMPLATE, max_tokens=config.check_max_tokens, stop=stop, response_format=YES_NO,
                                   question=question, document=text[: config.check_chars])
                    for question, text, _ in asked]
        results = client.run_sync(model, requests, stage=stage, budget=budget)
        outcomes = [item_outcome(result, lambda reply, lang=lang: read_yes_no(reply, lang, tag="answers"))
                    for result, (_, _, lang) in zip(results, asked, strict=True)]
        return [outcome.value.value if outcome.ok else None for outcome in outcomes]

    return check
