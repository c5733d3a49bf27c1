"""Quality control of generated QA items: rule checks and an LLM pre-screen, stored as reviews.

The papers used annotators; a build here pre-screens every item so that
people review the doubtful ones first (``babelbench review export``) and
their decisions, imported later, override the machine's.  Every decision is a
``qa_reviews`` row naming who made it: ``rule:<check>`` for the checks that
need no model, ``llm:<model>`` for the pre-screen, ``human:<name>`` for
imports.  Whether a machine ``fail`` keeps an item out of the instances is the
instance stage's QC policy, not decided here.

A check that could not run — its call failed or was skipped by the budget,
or its reply has no readable verdict — is stored as ``unsure``, never as a
pass: the ``qa_status`` view calls such an item ``unchecked`` and the
default policy keeps it out.  Without the pre-screen (``--no-prescreen``)
the rule checks still run; only the model is not asked.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from pydantic import BaseModel, ConfigDict, Field

from tasks.distractors.answers import normalise_answer
from tasks.llm import BudgetLedger, CallResult, LLMClient, prompt_request
from tasks.qa.xrag_articles import article_texts
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse

TEMPLATE = "qc_prescreen"
PRIMED = "Natural:"
#: The three questions the pre-screen answers, as (check_name, label in the reply).
LLM_CHECKS = (("natural", "Natural"), ("answerable", "Answerable"), ("answer_correct", "Correct"))
# English phrasings of a question that leans on a text the reader of the benchmark will not have.
_CONTEXT_REFERENCE = re.compile(
    r"\b(?:the|this|that|above|given)\s+(?:passage|text|article|paragraph|document|excerpt|summary|context)s?\b",
    re.IGNORECASE,
)


class QcConfig(BaseModel):
    """How the pre-screen reads the items."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_chars: int = Field(1500, ge=100, description="Characters of each supporting document shown to the screening model.")
    max_tokens: int = Field(24, ge=8, description="Tokens for the three verdict lines.")


def rule_verdicts(question: str, answer: str) -> list[tuple[str, str, str | None]]:
    """(check_name, verdict, reason) of the checks that need no model."""
    leak = normalise_answer(answer)
    leaked = bool(leak) and f" {leak} " in f" {normalise_answer(question)} "
    reference = _CONTEXT_REFERENCE.search(question)
    return [
        ("answer_leak", "fail" if leaked else "pass", "the question contains its answer" if leaked else None),
        ("context_reference", "fail" if reference else "pass",
         f"the question refers to {reference.group(0)!r}, which the reader does not see" if reference else None),
    ]


def llm_verdicts(result: CallResult, *, primed: str = "") -> list[tuple[str, str, str | None]]:
    """(check_name, verdict, reason) per LLM check; a line missing from the reply is ``unsure`` with the reason.

    ``primed`` is the label a completion prompt ends with (see :mod:`tasks.llm.parsing`).
    """
    if result.response is None:
        reason = f"pre-screen call {result.status}: {result.error or 'no answer'}"
        return [(check, "unsure", reason) for check, _ in LLM_CHECKS]
    text = primed + result.answer  # past any echo of the prompt, whose worked example has verdicts too
    verdicts = []
    for check, label in LLM_CHECKS:
        # "Natural: yes", "**Natural:** yes", "**Natural**: *yes*" and full-width colons alike
        match = re.search(rf"{label}[\s*_]*[:：][\s*_]*(yes|no)\b", text, re.IGNORECASE)
        if match is None:
            verdicts.append((check, "unsure", f"no '{label}: yes/no' line in the reply"))
        else:
            verdicts.append((check, "pass" if match.group(1).lower() == "yes" else "fail", None))
    return verdicts


def _documents_texts(wh: Warehouse, items: list[tuple], limit: int) -> list[list[str]]:
    """What each item was written from: ECLEKTIC's context, else its supporting articles (each cut to ``limit``)."""
    supporting = [[] if context else [(d["lang"], d["page_id"]) for d in json.loads(documents)]
                  for _, _, _, context, documents in items]
    articles = article_texts(wh, {key for keys in supporting for key in keys})
    return [[context[:limit]] if context else [articles[key].text[:limit] for key in keys]
            for (_, _, _, context, _), keys in zip(items, supporting, strict=True)]


def prescreen(
    wh: Warehouse, client: LLMClient, benchmark: str, judge: str | None, config: QcConfig, fp: str,
    *, budget: BudgetLedger | None = None, stage: str = "qc-prescreen",
) -> StageOutput:
    """Rule checks and, when a ``judge`` is named, one LLM pre-screen per generated item.

    Replaces the benchmark's earlier pre-screen rows.
    """
    items = wh.query(
        "SELECT item_id, question, answer, context, documents FROM qa_items"
        " WHERE benchmark = ? AND status = 'ok' ORDER BY item_id",
        [benchmark],
    )
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    rows = []
    for item_id, question, answer, _, _ in items:
        for check, verdict, reason in rule_verdicts(question, answer):
            rows.append([benchmark, item_id, check, verdict, f"rule:{check}", None, reason, "prescreen", fp, now])
    if judge is not None:
        spec = client.registry.get(judge)
        requests = [
            prompt_request(spec, TEMPLATE, max_tokens=config.max_tokens, stop=("\n\n",), question=question,
                           answer=answer, documents=texts)
            for (_, question, answer, _, _), texts in zip(items, _documents_texts(wh, items, config.doc_chars), strict=True)
        ]
        results = client.run_sync(judge, requests, stage=stage, budget=budget)
        for (item_id, _, _, _, _), result in zip(items, results, strict=True):
            for check, verdict, reason in llm_verdicts(result, primed=PRIMED if spec.mode == "completion" else ""):
                rows.append([benchmark, item_id, check, verdict, f"llm:{judge}", None, reason, "prescreen", fp, now])
    with wh.transaction() as cur:
        cur.execute("DELETE FROM qa_reviews WHERE benchmark = ? AND source = 'prescreen'", [benchmark])
        if rows:
            cur.executemany("INSERT INTO qa_reviews VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    failed = len({row[1] for row in rows if row[3] == "fail"})
    unsure = len({row[1] for row in rows if row[3] == "unsure"} - {row[1] for row in rows if row[3] == "fail"})
    how = f"by rules and llm:{judge}" if judge else "by rules only (no pre-screen model)"
    return StageOutput(rows=len(rows), message=f"{len(items)} items screened {how}: {failed} with a failed check,"
                                                f" {unsure} with a check that could not run")
