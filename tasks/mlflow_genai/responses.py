"""A model's evaluated responses as traces: the question, the model call, reading the answer, and every verdict.

One trace per sampled response (:mod:`tasks.mlflow_genai.sample`):

- the root span is the instance — the question, its language and setting,
  the ids of the documents shown — and the answer;
- a child span is the model call as ``llm_calls`` recorded it (found by the
  response's request hash): the rendered prompt, the reply, tokens,
  latency, cost, attempts, backend and model id, and whether the call was
  a cache hit — made before this evaluation run started, so it cost this
  run nothing.  A call that failed is an ERROR span (and the trace an
  ERROR trace); a response the budget stopped has no call; an imported
  response has none either (``imported``);
- a child span reads the answer: the answer, its citations, whether it
  abstains (:func:`tasks.inference.refusals.is_refusal`) and the language
  it was read as being in.  A reply that could not be read is an ERROR span.

The assessments on the root: each judge's verdict (``judgements``) as
feedback named by the judge's kind, from ``LLM_JUDGE`` with the judge's
registry name — a person's verdicts (judge ``human:NAME``) from ``HUMAN``
NAME — with its justification as rationale and its cost; the language rule
(:func:`tasks.metrics.leaderboard.language_ok`) and every feature
(``features``) as ``CODE`` feedback (an LLM-graded feature from its grader);
a verdict or feature that was not given is feedback with an error (its
status and reason), never left out.  The gold answer is an expectation.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from tasks.features.grades import TEMPLATES as GRADED
from tasks.inference.prompting import document_id
from tasks.inference.refusals import is_refusal
from tasks.metrics.agreement import HUMAN
from tasks.metrics.leaderboard import language_ok
from tasks.mlflow_genai.sample import TraceSample
from tasks.mlflow_genai.traces import CODE, LLM_JUDGE, Gold, SpanRecord, TraceRecord, Verdict, span_window
from tasks.warehouse.db import Warehouse

LANGUAGE_RULE = "babelbench.language_rule"
FEATURES = "babelbench.features"
#: Feedback name of the language rule: whether the answer is in the question's language.
IN_LANGUAGE = "in_question_language"
_VERDICT = {"yes": True, "no": False}


def judge_source(judge: str) -> tuple[str, str]:
    """(MLflow source type, source id) of a judge: a person's verdicts (``human:NAME``) are ``HUMAN`` NAME."""
    if judge.startswith(HUMAN):
        return "HUMAN", judge.removeprefix(HUMAN)
    return LLM_JUDGE, judge


def call_span(call: Mapping[str, Any], start_ns: int, since: datetime | None) -> SpanRecord:
    """The span of one ``llm_calls`` row (with ``request_hash``): the rendered request and the reply, usage,
    cost and where it came from; ERROR when the call failed."""
    window = span_window(start_ns, call["latency_s"])
    usage = {"input_tokens": call["input_tokens"], "output_tokens": call["output_tokens"]}
    attributes: dict[str, Any] = {
        "mlflow.llm.model": call["model_id"], "mlflow.llm.provider": call["backend"],
        "backend": call["backend"], "model": call["model_id"], "mode": call["mode"],
        "latency_s": call["latency_s"], "cost_usd": call["cost_usd"], "attempts": call["attempts"],
        "request_hash": call["request_hash"], "called_at": str(call["created_at"]),
        "cache_hit": since is not None and call["created_at"] < since}
    if None not in usage.values():
        attributes["mlflow.chat.tokenUsage"] = usage | {"total_tokens": usage["input_tokens"] + usage["output_tokens"]}
    if call["cost_usd"] is not None:
        attributes["mlflow.llm.cost"] = {"total_cost": call["cost_usd"]}
    failed = call["call_status"] != "ok"
    return SpanRecord(
        f"{call['backend']}:{call['model_id']}", "CHAT_MODEL" if call["mode"] == "chat" else "LLM", *window,
        inputs=json.loads(call["request"]) if isinstance(call["request"], str) else call["request"],
        outputs=None if failed else {"text": call["response_text"], "finish_reason": call["finish_reason"]},
        attributes=attributes, error=(call["error"] or "the call failed") if failed else None)


def _documents(raw: str | None) -> list[str]:
    return [document_id(document) for document in json.loads(raw or "[]")]


def _read_span(row: Mapping[str, Any], start_ns: int) -> SpanRecord:
    answer = row["given_answer"]
    return SpanRecord(
        "read answer", "PARSER", start_ns, start_ns, inputs={"reply": row["raw_text"]},
        outputs=None if row["status"] == "parse_failed" else {
            "answer": answer, "citations": list(row["citations"] or []), "abstained": is_refusal(answer, row["lang"]),
            "detected_language": row["detected_lang"], "language_status": row["language_status"],
            "target_prob": row["target_prob"], "english_prob": row["english_prob"],
            "switched_share": row["switched_share"]},
        error=f"parse_failed: {row['reason']}" if row["status"] == "parse_failed" else None)


def response_trace(row: Mapping[str, Any], judgements: list[Mapping[str, Any]], features: list[Mapping[str, Any]],
                   feature_sources: Mapping[str, tuple[str, str]], prompt: tuple[str, str] | None, start_ns: int,
                   since: datetime | None, tags: Mapping[str, str]) -> TraceRecord:
    """The trace of one response row (see :func:`responses_traces` for its columns) with its verdicts."""
    children: list[SpanRecord] = []
    at = start_ns
    if row["request_hash"] is not None and row["call_status"] is not None:
        children.append(call_span(row, at, since))
        at = children[-1].end_ns
    if row["status"] in ("ok", "parse_failed"):
        children.append(_read_span(row, at))
    failed = row["status"] != "ok"
    root = SpanRecord(
        row["instance_id"], "CHAIN", start_ns, max([at, *(child.end_ns for child in children)]),
        inputs={"question": row["question"], "lang": row["lang"], "setting": row["setting"],
                "documents": _documents(row["documents"])},
        outputs=None if failed else {"answer": row["given_answer"]},
        attributes={"imported": row["request_hash"] is None, "template": row["template"]},
        error=f"{row['status']}: {row['reason']}" if failed else None, children=tuple(children))
    verdicts = [_judge_verdict(j) for j in judgements] + [_language_verdict(row)]
    verdicts += [_feature_verdict(f, feature_sources.get(f["feature"], (CODE, FEATURES))) for f in features]
    golds = [Gold("expected_response", row["gold_answer"], row["benchmark"])]
    if row["gold"]:
        golds.append(Gold("expected_answers", json.loads(row["gold"]), row["benchmark"]))
    return TraceRecord(root, tags={**tags, "babelbench.instance_id": row["instance_id"], "babelbench.lang": row["lang"],
                                   "babelbench.setting": row["setting"], "babelbench.status": row["status"]},
                       verdicts=tuple(verdicts), golds=tuple(golds), prompts=(prompt,) if prompt else ())


def _judge_verdict(judgement: Mapping[str, Any]) -> Verdict:
    source_type, source_id = judge_source(judgement["judge"])
    metadata = {key: str(judgement[column]) for key, column in (
        ("mlflow.assessment.judgeCost", "cost_usd"), ("mlflow.assessment.judgeInputTokens", "input_tokens"),
        ("mlflow.assessment.judgeOutputTokens", "output_tokens")) if judgement[column] is not None}
    given = judgement["status"] == "ok"
    return Verdict(judgement["kind"], _VERDICT.get(judgement["verdict"]) if given else None, source_type, source_id,
                   rationale=judgement["justification"] or judgement["reason"],
                   error=None if given else (judgement["status"], judgement["reason"] or judgement["status"]),
                   metadata=metadata)


def _language_verdict(row: Mapping[str, Any]) -> Verdict:
    """Whether the answer is in the question's language, as the scorers decide it; an error where it is not
    decided (a failed response, a language that could not be told)."""
    decided = language_ok(row)
    if decided is None:
        why = row["status"] if row["status"] != "ok" else (row["language_status"] or "unchecked")
        return Verdict(IN_LANGUAGE, None, CODE, LANGUAGE_RULE,
                       error=(why, f"the answer's language is not decided ({why})"))
    return Verdict(IN_LANGUAGE, decided, CODE, LANGUAGE_RULE,
                   rationale=f"read as {row['detected_lang'] or 'the gold answer itself'}; the question is in"
                             f" {row['lang']}")


def _feature_verdict(feature: Mapping[str, Any], source: tuple[str, str]) -> Verdict:
    given = feature["status"] == "ok"
    return Verdict(feature["feature"], feature["value"] if given else None, *source,
                   error=None if given else (feature["status"], feature["reason"] or feature["status"]))


def feature_sources(wh: Warehouse, benchmark: str) -> dict[str, tuple[str, str]]:
    """Each LLM-graded feature's source: ``LLM_JUDGE`` with the grading model recorded in its cell (its
    ``artifacts`` config); every other feature is ``CODE``."""
    rows = wh.query("SELECT DISTINCT f.feature, a.config->'model'->>'model' FROM features f"
                    " JOIN artifacts a ON a.fingerprint = f.fingerprint AND a.stage = 'features'"
                    " WHERE f.benchmark = ? AND list_contains(?, f.feature)", [benchmark, list(GRADED)])
    return {feature: (LLM_JUDGE, grader or "grader") for feature, grader in rows}


def sampled_responses(wh: Warehouse, benchmark: str, model: str, sample: TraceSample) -> list[str]:
    """The instance ids of ``model``'s responses that the sample takes, sorted."""
    return sorted(sample.pick(wh.query("SELECT lang, instance_id FROM responses WHERE benchmark = ? AND model = ?",
                                       [benchmark, model])))


def responses_traces(wh: Warehouse, benchmark: str, model: str, ids: list[str], start_ns: int,
                     since: datetime | None, prompts: Mapping[str, tuple[str, str]]) -> list[TraceRecord]:
    """The traces of ``model``'s responses to instances ``ids`` of ``benchmark``, one millisecond apart from
    ``start_ns``.

    ``since``: when the evaluation run started (a call made before is a cache hit); ``prompts``: template name →
    its registered (prompt name, version).
    """
    if not ids:
        return []
    rows = wh.query_dicts(
        "SELECT r.benchmark, r.instance_id, r.setting, r.lang, r.status, r.reason, r.raw_text,"
        " r.answer AS given_answer, r.citations, r.request_hash, r.template, r.language_status, r.detected_lang,"
        " r.target_prob, r.english_prob, r.switched_share, i.question, i.answer AS gold_answer, i.gold, i.documents,"
        " c.backend, c.model AS model_id, c.mode, c.request, c.response_text, c.finish_reason, c.input_tokens,"
        " c.output_tokens, c.latency_s, c.cost_usd, c.attempts, c.error, c.created_at, c.status AS call_status"
        " FROM responses r JOIN instances i USING (benchmark, instance_id)"
        " LEFT JOIN llm_calls c ON c.request_hash = r.request_hash"
        " WHERE r.benchmark = ? AND r.model = ? AND list_contains(?, r.instance_id) ORDER BY r.lang, r.instance_id",
        [benchmark, model, ids])
    judgements: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for judgement in wh.query_dicts(
            "SELECT j.instance_id, j.judge, j.kind, j.verdict, j.status, j.reason, j.justification, c.cost_usd,"
            " c.input_tokens, c.output_tokens FROM judgements j LEFT JOIN llm_calls c ON c.request_hash = j.request_hash"
            " WHERE j.benchmark = ? AND j.model = ? AND list_contains(?, j.instance_id) ORDER BY j.judge",
            [benchmark, model, ids]):
        judgements[judgement["instance_id"]].append(judgement)
    features: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for feature in wh.query_dicts("SELECT instance_id, feature, value, status, reason FROM features"
                                  " WHERE benchmark = ? AND model = ? AND list_contains(?, instance_id)"
                                  " ORDER BY feature", [benchmark, model, ids]):
        features[feature["instance_id"]].append(feature)
    sources = feature_sources(wh, benchmark)
    tags = {"babelbench.benchmark": benchmark, "babelbench.model": model}
    return [response_trace(row, judgements[row["instance_id"]], features[row["instance_id"]], sources,
                           prompts.get(row["template"]), start_ns + n * 1_000_000, since, tags)
            for n, row in enumerate(rows)]
