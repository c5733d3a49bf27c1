"""The arena's battles as traces: one pair of systems on one query, judged in both orders.

The root span holds the question and both systems' answers, and the
outcome; each order the judge was asked in is a child span (the judge's
call: prompt, reply, tokens, cost; an ERROR span when the call failed).
Each order's verdict is feedback ``preferred`` — the system it favours, or
``tie`` — from the judge (``LLM_JUDGE``), with its justification and which
system was shown first; a forfeit (a system without an answer loses
without a call) is ``CODE`` feedback of the arena's rule.

The outcome names a winner only where both orders agree: the system both
favour, ``tie`` when both tie or when they favour opposite systems (the
judge followed the position, as the ratings count it), ``split`` when one
order ties and the other does not, None when an order has no verdict.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from tasks.arena.pairwise import OrderedVerdict
from tasks.mlflow_genai.responses import call_span, judge_source
from tasks.mlflow_genai.sample import TraceSample
from tasks.mlflow_genai.traces import CODE, SpanRecord, TraceRecord, Verdict
from tasks.warehouse.db import Warehouse

PREFERRED = "preferred"
FORFEIT_RULE = "babelbench.arena.forfeit"
TIE = "tie"


def outcome(orders: Sequence[OrderedVerdict]) -> str | None:
    """The winner of a pair over its orders (see the module notes): a system, ``tie``, ``split``, or None."""
    if len(orders) != 2 or any(order.verdict is None for order in orders):
        return None
    favoured = [order.winner() for order in orders]
    if favoured[0] == favoured[1]:
        return favoured[0] or TIE
    return TIE if None not in favoured else "split"


def _order_verdict(battle: Mapping[str, Any], judge: str) -> Verdict:
    shown = {"shown_first": battle["model_a"], "shown_second": battle["model_b"]}
    winner = OrderedVerdict(battle["instance_id"], battle["lang"], battle["model_a"], battle["model_b"],
                            battle["winner"], battle["status"]).winner() or TIE
    if battle["status"] == "forfeit":
        return Verdict(PREFERRED, winner, CODE, FORFEIT_RULE, rationale=battle["reason"], metadata=shown)
    source_type, source_id = judge_source(judge)
    if battle["status"] != "ok":
        return Verdict(PREFERRED, None, source_type, source_id, metadata=shown,
                       error=(battle["status"], battle["reason"] or battle["status"]))
    return Verdict(PREFERRED, winner, source_type, source_id, rationale=battle["justification"], metadata=shown)


def battle_trace(pair: tuple[str, str], rows: list[Mapping[str, Any]], question: str, answers: Mapping[str, Any],
                 judge: str, start_ns: int, since: datetime | None, tags: Mapping[str, str],
                 prompt: tuple[str, str] | None) -> TraceRecord:
    """The trace of one pair's battles (``rows``: its orders, with their calls) on one query."""
    rows = sorted(rows, key=lambda row: row["model_a"] != pair[0])  # the order with the first system shown first
    children, at = [], start_ns
    for row in rows:
        if row["call_status"] is None:
            continue
        span = call_span(row, at, since)
        children.append(SpanRecord(f"{judge}: A={row['model_a']}, B={row['model_b']}", span.span_type, span.start_ns,
                                   span.end_ns, span.inputs, span.outputs, span.attributes, span.error))
        at = span.end_ns
    orders = [OrderedVerdict(r["instance_id"], r["lang"], r["model_a"], r["model_b"], r["winner"], r["status"])
              for r in rows]
    first = rows[0]
    root = SpanRecord(
        f"{pair[0]} vs {pair[1]}", "CHAIN", start_ns, at,
        inputs={"question": question, "lang": first["lang"], "answers": dict(answers)},
        outputs={"winner": outcome(orders),
                 "verdicts": {f"{o.first} shown first": (o.winner() or TIE) if o.verdict else o.status for o in orders}},
        error=None if all(r["status"] in ("ok", "forfeit") for r in rows) else "a battle has no verdict",
        children=tuple(children))
    return TraceRecord(root, tags={**tags, "babelbench.instance_id": first["instance_id"],
                                   "babelbench.lang": first["lang"], "babelbench.pair": f"{pair[0]} vs {pair[1]}"},
                       verdicts=tuple(_order_verdict(row, judge) for row in rows), prompts=(prompt,) if prompt else ())


def battles_traces(wh: Warehouse, benchmark: str, judge: str, models: Sequence[str], langs: Sequence[str],
                   sample: TraceSample, start_ns: int, since: datetime | None,
                   prompt: tuple[str, str] | None) -> list[TraceRecord]:
    """The traces of the sampled battles of ``judge`` between ``models`` on ``benchmark`` in ``langs``: the
    sample takes pairs on queries, N per language."""
    rows = wh.query_dicts(
        "SELECT b.instance_id, b.lang, b.model_a, b.model_b, b.winner, b.status, b.reason, b.justification,"
        " b.request_hash, c.backend, c.model AS model_id, c.mode, c.request, c.response_text, c.finish_reason,"
        " c.input_tokens, c.output_tokens, c.latency_s, c.cost_usd, c.attempts, c.error, c.created_at,"
        " c.status AS call_status FROM battles b LEFT JOIN llm_calls c ON c.request_hash = b.request_hash"
        " WHERE b.benchmark = ? AND b.judge = ? AND list_contains(?, b.lang) AND list_contains(?, b.model_a)"
        " AND list_contains(?, b.model_b) ORDER BY b.lang, b.instance_id, b.model_a, b.model_b",
        [benchmark, judge, list(langs), list(models), list(models)])
    pairs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        pairs[json.dumps([row["instance_id"], *sorted((row["model_a"], row["model_b"]))])].append(row)
    chosen = sorted(sample.pick((group[0]["lang"], key) for key, group in pairs.items()))
    if not chosen:
        return []
    ids = sorted({json.loads(key)[0] for key in chosen})
    questions = dict(wh.query("SELECT instance_id, question FROM instances WHERE benchmark = ?"
                              " AND list_contains(?, instance_id)", [benchmark, ids]))
    answers: dict[str, dict[str, Any]] = defaultdict(dict)
    for instance_id, model, status, answer in wh.query(
            "SELECT instance_id, model, status, answer FROM responses WHERE benchmark = ? AND list_contains(?,"
            " instance_id) AND list_contains(?, model)", [benchmark, ids, list(models)]):
        answers[instance_id][model] = answer if status == "ok" else f"({status})"
    tags = {"babelbench.benchmark": benchmark, "babelbench.judge": judge}
    traces = []
    for n, key in enumerate(chosen):
        instance_id, x, y = json.loads(key)
        traces.append(battle_trace((x, y), pairs[key], questions.get(instance_id, ""),
                                   {m: answers[instance_id].get(m, "(not asked)") for m in (x, y)}, judge,
                                   start_ns + n * 1_000_000, since, tags, prompt))
    return traces
