"""Pointwise judges: one verdict per (response, judge), asked of a model and read tolerantly.

Two kinds, one per protocol: ECLEKTIC's ``support`` judge reads the source
context in the question's language and says whether it supports the answer
(the gold answer is not shown); XRAG's ``correct`` judge compares the answer
with the gold answer, and several of them form a panel whose majority the
metrics take.  Judges read the stored responses, so changing a judge
recomputes judging and metrics only.  A response that failed is not sent to
a judge: its judgement is a ``no_response`` row, which metrics count as wrong.
An abstention — a whole answer that is the fixed abstention answer the
prompts offer ("None") or a plain "I don't know" in the question's language
or English (:func:`tasks.inference.refusals.is_refusal`) — is a "no" for both
kinds, as the protocols rule, without asking the judge: a weak judge must not
accept a non-answer, and the call is not paid for.  Anything longer goes to
the judge, which sees the question: "Non solo Roma, ma anche Milano." is an
answer although it holds "non so".
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from tasks.inference.gold import gold_shown_to
from tasks.inference.refusals import is_refusal
from tasks.llm import BudgetLedger, LLMClient, prompt_request
from tasks.llm.outcomes import item_outcome
from tasks.llm.verdicts import YES_NO, read_yes_no
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse, insert_rows

STAGE = "judging"


@dataclass(frozen=True)
class JudgeKind:
    """A judge's template, the word its verdict may be keyed or tagged by, and the reference it reads besides
    question and answer: an ``instances`` column, passed to the template as ``variable``."""

    template: str
    tag: str
    column: str
    variable: str


KINDS: dict[str, JudgeKind] = {
    "support": JudgeKind("judge_support", "supported", "judge_context", "context"),
    "correct": JudgeKind("judge_correct", "correct", "answer", "gold"),
}


class JudgeConfig(BaseModel):
    """How judges are asked."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_tokens: int = Field(160, ge=16, description="Tokens for one verdict and its one-sentence justification.")
    reference_chars: int = Field(3000, ge=100, description="Characters of the reference text shown to the judge.")


def judge_responses(
    wh: Warehouse, client: LLMClient, benchmark: str, setting: str, lang: str, model: str, judge: str, kind: str,
    config: JudgeConfig, fp: str, *, budget: BudgetLedger | None = None,
) -> StageOutput:
    """``judge``'s verdict on each response of ``model`` in the cell; replaces the cell's earlier verdicts."""
    spec = client.registry.get(judge)
    how = KINDS[kind]
    rows = wh.query_dicts(
        f"SELECT r.instance_id, r.status, r.answer, i.question, i.{how.column} AS reference"
        " FROM responses r JOIN instances i USING (benchmark, instance_id)"
        " WHERE r.benchmark = ? AND r.setting = ? AND r.lang = ? AND r.model = ? ORDER BY r.instance_id",
        [benchmark, setting, lang, model])
    abstained = {row["instance_id"] for row in rows if row["status"] == "ok" and is_refusal(row["answer"], lang)}
    answered = [row for row in rows if row["status"] == "ok" and row["instance_id"] not in abstained]
    stop = ("\n\n",) if spec.mode == "completion" else None  # a base model carries the examples' pattern on
    requests = [prompt_request(spec, how.template, max_tokens=config.max_tokens, stop=stop, response_format=YES_NO,
                               question=row["question"], answer=row["answer"],
                               **{how.variable: (row["reference"] or "")[: config.reference_chars]})
                for row in answered]
    with gold_shown_to(wh, spec, benchmark, [(row["instance_id"], (model,)) for row in answered], requests):
        results = dict(zip((row["instance_id"] for row in answered),
                           client.run_sync(judge, requests, stage=STAGE, budget=budget), strict=True))
    out = []
    for row in rows:
        result = results.get(row["instance_id"])
        if row["instance_id"] in abstained:
            out.append([benchmark, row["instance_id"], model, judge, kind, "no", "ok",
                        "an abstention: no, without asking the judge", None, None, fp, None])
            continue
        if result is None:
            out.append([benchmark, row["instance_id"], model, judge, kind, None, "no_response",
                        f"the response is {row['status']}: nothing to judge", None, None, fp, None])
            continue
        outcome = item_outcome(result, lambda reply: read_yes_no(reply, lang, tag=how.tag))
        verdict = None if not outcome.ok else ("yes" if outcome.value.value else "no")
        out.append([benchmark, row["instance_id"], model, judge, kind, verdict, outcome.status, outcome.reason,
                    result.response.text if result.response else None, result.request_hash, fp,
                    outcome.value.justification if outcome.ok else None])
    with wh.transaction() as cur:
        cur.execute("DELETE FROM judgements WHERE benchmark = ? AND model = ? AND judge = ? AND instance_id IN"
                    " (SELECT instance_id FROM instances WHERE benchmark = ? AND setting = ? AND lang = ?)",
                    [benchmark, model, judge, benchmark, setting, lang])
        insert_rows(cur, "judgements", out)
    verdicts = sum(row[5] is not None for row in out)
    return StageOutput(rows=len(out), message=f"{verdicts} verdicts on {len(out)} responses by {judge}")
