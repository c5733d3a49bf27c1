"""What a feature reads about one response: its texts, its citations, the judged passages and a reference answer.

One query over ``responses`` and ``instances`` gives every feature the same
view.  The reference an overlap feature compares with is the instance's gold
answer when the benchmark has one; otherwise the answer of a *reference
system* named in the configuration — and then that system's own responses
get no overlap score (status ``excluded``): a contestant is never scored
against itself.

The reply a feature reads (``raw_text``) is the model's own: the stored
reply past any echo of the prompt, cut where the model layer cut it when the
call returned (:func:`tasks.llm.parsing.echo_end` with the call's prompt from
``llm_calls``).  ``primed`` says the prompt ended by opening the reason
section for the model — a completion-mode call (the mode the call was made
in, from ``llm_calls``, not the registry's today) of MIRAGE's template — so
its reply *is* the reasoning, up to the answer marker
(:func:`tasks.inference.reading.reason_section`).  A response without a
stored call (imported) is read as a whole reply.  The prompts are read only
with the passages (the model features), whose reading costs as much.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from tasks.inference.prompting import MIRAGE, document_id
from tasks.inference.reading import strip_citations
from tasks.llm import LLMRequest
from tasks.llm.parsing import echo_end
from tasks.warehouse.db import Warehouse


@dataclass(frozen=True)
class FeatureInput:
    """One response as features see it (citations stripped from ``answer_text``)."""

    instance_id: str
    model: str
    lang: str
    question: str
    status: str  # the response's status: features of a failed response are not computed
    answer: str
    answer_text: str
    raw_text: str  # the model's own reply (see the module notes)
    citations: tuple[str, ...]
    relevant: frozenset[str]  # ids of the query's judged relevant passages (shown or not)
    passages: dict[str, str]  # every shown passage's text by id (empty when not read, see feature_inputs)
    reference: str | None  # the reference answer, None when there is none
    reference_is_own: bool  # the reference is this response's own system's answer
    language_status: str | None
    target_prob: float | None
    english_prob: float | None
    switched_share: float | None
    primed: bool = False  # the prompt opened the reason section: the reply starts inside it


def past_echo(raw_text: str, mode: str | None, request: str | None) -> str:
    """``raw_text`` past any echo of the prompt of its call (``request``: the ``llm_calls`` JSON, None when the
    response has no stored call)."""
    if request is None:
        return raw_text
    fields = {key: value for key, value in json.loads(request).items() if key in LLMRequest.model_fields}
    return raw_text[echo_end(raw_text, LLMRequest.model_validate(fields).prompt_text, at_start=mode == "completion"):]


def feature_inputs(wh: Warehouse, benchmark: str, reference_model: str | None = None, *,
                   passages: bool = True) -> list[FeatureInput]:
    """Every response of ``benchmark``, in a stable order; without the shown passages' texts (and the prompts that
    cut echoes from the replies) unless ``passages``.

    Only the model features read the passages (about 8,192 tokens a
    response) and the reasoning; the deterministic features are shipped to
    Dask workers, where serialising those texts would cost more than
    computing the feature.
    """
    rows = wh.query_dicts(
        "SELECT r.instance_id, r.model, r.lang, r.status, r.answer, r.raw_text, r.citations, r.language_status,"
        " r.target_prob, r.english_prob, r.switched_share, r.template, i.question, i.answer AS gold, i.documents,"
        " ref.answer AS reference, c.mode, " + ("c.request" if passages else "NULL AS request") +
        " FROM responses r JOIN instances i USING (benchmark, instance_id)"
        " LEFT JOIN responses ref ON ref.benchmark = r.benchmark AND ref.instance_id = r.instance_id"
        "   AND ref.model = ? AND ref.status = 'ok'"
        " LEFT JOIN llm_calls c ON c.request_hash = r.request_hash"
        " WHERE r.benchmark = ? ORDER BY r.instance_id, r.model", [reference_model, benchmark])
    inputs = []
    for row in rows:
        documents = json.loads(row["documents"] or "[]")
        # the judged relevant set: the instance's supporting documents — every relevant passage of a MIRACL query
        # (its judged non-relevant ones are the distractors), an XRAG question's supporting articles — all shown
        relevant = frozenset(document_id(d) for d in documents if d.get("role") == "support")
        reference = row["gold"] or strip_citations(row["reference"] or "")  # a system's answer, citations removed
        inputs.append(FeatureInput(
            row["instance_id"], row["model"], row["lang"], row["question"], row["status"], row["answer"] or "",
            strip_citations(row["answer"] or ""), past_echo(row["raw_text"] or "", row["mode"], row["request"]),
            tuple(row["citations"] or ()), relevant,
            {document_id(d): d.get("text") or "" for d in documents} if passages else {},
            reference or None, not row["gold"] and row["model"] == reference_model, row["language_status"],
            row["target_prob"], row["english_prob"], row["switched_share"],
            primed=row["mode"] == "completion" and row["template"] == MIRAGE))
    return inputs
