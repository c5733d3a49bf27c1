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

from tasks.llm import BudgetLedger, CallResult, LLMClient, prompt_request
from tasks.llm.verdicts import QC_CHECKS, read_checks
from tasks.qa.xrag_articles import article_texts
from tasks.stage import StageOutput
from tasks.text.answer_match import normalise_answer
from tasks.warehouse.db import Warehouse

TEMPLATE = "qc_prescreen"
#: The three questions the pre-screen answers: check name → its key in the reply.
LLM_CHECKS = {"natural": "natural", "answerable": "answerable", "answer_correct": "correct"}
# English phrasings of a question that leans on a text the reader of the benchmark will not have.
_CONTEXT_REFERENCE = re.compile(
    r"\b(?:the|this|that|above|given)\s+(?:passage|text|article|paragraph|document|excerpt|summary|context)s?\b",
    re.IGNORECASE,
)


class QcConfig(BaseModel):
    """How the pre-screen reads the items."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    doc_chars: int = Field(1500, ge=100, description="Characters of each supporting document shown to the screening model.")
    max_tokens: int = Field(160, ge=16, description="Tokens for the three verdicts and their justification.")


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


def llm_verdicts(result: CallResult, lang: str) -> list[tuple[str, str, str | None]]:
    """(check_name, verdict, reason) per LLM check; a verdict missing from the reply, or not plainly yes or no, is
    ``unsure`` with the reason (:func:`tasks.llm.verdicts.read_checks`)."""
    if result.response is None:
        reason = f"pre-screen call {result.status}: {result.error or 'no answer'}"
        return [(check, "unsure", reason) for check in LLM_CHECKS]
    read = read_checks(result.answer, lang, LLM_CHECKS)  # past any echo of the prompt, whose example has verdicts too
    return [(check, "unsure", parsed.reason) if not parsed.ok else (check, "pass" if parsed.value else "fail", None)
            for check, parsed in read.items()]


def _documents_texts(wh: Warehouse, items: list[tuple], limit: int) -> list[list[str]]:
    """What each item was written from: ECLEKTIC's context, else its supporting articles (each cut to ``limit``)."""
    supporting = [[] if context else [(d["lang"], d["page_id"]) for d in json.loads(documents)]
                  for _, _, _, context, documents, *_ in items]
    articles = article_texts(wh, {key for keys in supporting for key in keys})
    return [[context[:limit]] if context else [articles[key].text[:limit] for key in keys]
            for (_, _, _, context, *_), keys in zip(items, supporting, strict=True)]


def prescreen(
    wh: Warehouse, client: LLMClient, benchmark: str, judge: str | None, config: QcConfig, fp: str,
    *, budget: BudgetLedger | None = None, stage: str = "qc-prescreen",
) -> StageOutput:
    """Rule checks and, when a ``judge`` is named, one LLM pre-screen per generated item.

    Replaces the benchmark's earlier pre-screen rows.
    """
    items = wh.query(
        "SELECT item_id, question, answer, context, documents, lang FROM qa_items"
        " WHERE benchmark = ? AND status = 'ok' ORDER BY item_id",
        [benchmark],
    )
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    rows = []
    for item_id, question, answer, *_ in items:
        for check, verdict, reason in rule_verdicts(question, answer):
            rows.append([benchmark, item_id, check, verdict, f"rule:{check}", None, reason, "prescreen", fp, now])
    if judge is not None:
        spec = client.registry.get(judge)
        requests = [
            prompt_request(spec, TEMPLATE, max_tokens=config.max_tokens, stop=("\n\n",), response_format=QC_CHECKS,
                           question=question, answer=answer, documents=texts)
            for (_, question, answer, *_), texts in zip(items, _documents_texts(wh, items, config.doc_chars), strict=True)
        ]
        results = client.run_sync(judge, requests, stage=stage, budget=budget)
        for (item_id, *_, lang), result in zip(items, results, strict=True):
            for check, verdict, reason in llm_verdicts(result, lang):
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
