"""The demo's QA half: small ECLEKTIC- and XRAG-style benchmarks written by the local model, and an evaluation
that shows something.

The benchmarks the local model writes are kept small on purpose — it is a
270M-parameter base model at about 40 tokens/s on two cores — so every
status (parse, pre-screen, gate) shows up in a few minutes.  Its answers are
weak; the point there is the machinery, and the statuses say honestly what
came out.

The evaluation needs more questions than that to say anything, and a judge
that can read: so the systems are also evaluated on bundled samples — a few
dozen cross-document questions in German and French in XRAG's release format
(written from the sample articles, :mod:`tasks.sample.xrag_sample`), and a
sample in MKQA's format — and everything is judged by the reference judge, a
deterministic baseline that compares answers with the gold answer.  With the
``oracle`` (the gold answer, citing the gold passages) above ``extractive``
above ``abstain``, the leaderboard and the arena show that the scorers
separate a right answer from a wrong one; the local model is placed among
them.
"""

from __future__ import annotations

from pathlib import Path

from flows.arena import ArenaParams, arena_flow
from flows.evaluate import EvaluateParams, evaluate_flow
from flows.qa import InstancesParams, QaBuildParams, TranslateParams, instances_flow, qa_build_flow, translate_flow
from flows.report import ReportParams, report_flow
from tasks.arena import ArenaConfig
from tasks.imports import import_dataset
from tasks.instances import InstanceConfig
from tasks.qa import XragConfig
from tasks.sample import load_questions, write_xrag_sample
from tasks.warehouse import Warehouse

GENERATOR = "local"
#: The systems the demo evaluates: the local model, the baseline that always abstains (MKQA's floor), the one
#: that copies the likeliest sentence of the shown passages, and the oracle that gives the gold answer.
SYSTEMS = [GENERATOR, "abstain", "extractive", "oracle"]
#: Every judgement of the demo: a deterministic baseline that compares with the gold answer (offline, the local
#: model is the only other judge, and a 270M base model's verdicts are noise).  Not a judge to trust.
JUDGE = "reference-judge"
MKQA_SAMPLE = Path(__file__).resolve().parents[1] / "tasks" / "sample" / "mkqa_sample.jsonl"
#: The bundled XRAG-format sample, imported under this name; the arena and the report are about it.
XRAG_SAMPLE = "xrag-sample"
# ECLEKTIC: every sample language; the items are translated into English only (each translation is two calls).
ECLEKTIC_TARGETS = ["en"]
# XRAG: English pivot with German; one pair per kind and one question type (the recipe's machinery: the
# evaluation is on the bundled sample, where one generated question would say nothing).
XRAG_LANGS = ["en", "de"]
XRAG = XragConfig(max_pairs=1, question_types=("comparison",), questions_per_type=1)


def run_qa_demo(home: Path, langs: list[str]) -> list[dict]:
    """Build, translate and assemble both benchmarks; evaluate the local model and the three baselines on the
    ECLEKTIC one and on the bundled XRAG- and MKQA-format samples, judged by the reference judge; run an arena
    on the XRAG sample and write its report.

    The pre-screen is advisory (``qc_policy: human``).
    """
    rows: list[dict] = []
    rows += qa_build_flow(QaBuildParams(recipe="eclektic", langs=langs, generator=GENERATOR, home=str(home)))
    rows += qa_build_flow(QaBuildParams(recipe="xrag", langs=XRAG_LANGS, generator=GENERATOR, xrag=XRAG, home=str(home)))
    policy = InstanceConfig(qc_policy="human")
    for benchmark, targets in (("eclektic", ECLEKTIC_TARGETS), ("xrag", XRAG_LANGS[1:])):
        rows += translate_flow(TranslateParams(benchmark=benchmark, to=targets, translator=GENERATOR,
                                               qc_policy=policy.qc_policy, home=str(home)))
        rows += instances_flow(InstancesParams(benchmark=benchmark, instances=policy, home=str(home)))
    rows += evaluate_flow(EvaluateParams(benchmark="eclektic", models=SYSTEMS, judges=[JUDGE], home=str(home)))
    with Warehouse(home) as wh:  # questions about the sample's world, in XRAG's and MKQA's published layouts
        import_dataset(wh, "xrag", write_xrag_sample(home / "xrag-sample.jsonl"), XRAG_SAMPLE, None)
        import_dataset(wh, "mkqa", MKQA_SAMPLE, "mkqa-sample", None)
    rows += evaluate_flow(EvaluateParams(benchmark=XRAG_SAMPLE, models=SYSTEMS, judges=[JUDGE], home=str(home)))
    rows += evaluate_flow(EvaluateParams(benchmark="mkqa-sample", models=SYSTEMS, judges=[], home=str(home)))
    every_question = ArenaConfig(queries_per_lang=len(load_questions()))  # each pair of systems in both orders
    rows += arena_flow(ArenaParams(benchmark=XRAG_SAMPLE, models=SYSTEMS, judge=JUDGE, arena=every_question,
                                   bootstrap=200, home=str(home)))
    report_flow(ReportParams(benchmark=XRAG_SAMPLE, out=str(home / "report.html"), home=str(home)))
    return rows


QA_SUMMARY = """
    SELECT benchmark, 'qa_items' AS "table", qc_status AS outcome, count(*) AS n
    FROM qa_status GROUP BY ALL
    UNION ALL
    SELECT benchmark, 'translations', status || coalesce(' / gate ' || gate, ''), count(*) FROM translations GROUP BY ALL
    UNION ALL
    SELECT benchmark, 'instances', setting || ' ' || lang, count(*) FROM instances GROUP BY ALL
    ORDER BY 1, 2, 3
"""


def qa_summary(wh: Warehouse) -> tuple[list[str], list[tuple]]:
    """What the QA demo produced, by benchmark, table and outcome."""
    return wh.query_with_columns(QA_SUMMARY)


LEADERBOARD = """
    SELECT benchmark, setting, metric, model, round(value, 3) AS value,
           coalesce('[' || round(ci_low, 3) || ', ' || round(ci_high, 3) || ']', 'n/a') AS "95% interval", n, failed,
           judge_failed
    FROM leaderboard WHERE lang = 'all' AND subset = 'all'
      AND metric IN ('overall_success', 'transfer', 'source_accuracy', 'source_question_accuracy', 'accuracy', 'f1')
    ORDER BY benchmark, setting, metric, value DESC NULLS LAST, model
"""


def leaderboard_summary(wh: Warehouse) -> tuple[list[str], list[tuple]]:
    """The demo's leaderboard: each benchmark's headline metrics pooled over languages, best first."""
    return wh.query_with_columns(LEADERBOARD)


ARENA_SUMMARY = """
    SELECT model,
           CASE unbounded WHEN 'high' THEN 'never lost' WHEN 'low' THEN 'never won' WHEN 'both' THEN 'unrated'
                ELSE round(rating, 3)::VARCHAR END AS rating,
           CASE WHEN rating IS NULL THEN CASE unbounded WHEN 'high' THEN 'above every rated system'
                                                      WHEN 'low' THEN 'below every rated system' ELSE 'n/a' END
                ELSE '[' || coalesce(round(ci_low, 3)::VARCHAR, '-inf') || ', '
                     || coalesce(round(ci_high, 3)::VARCHAR, '+inf') || ']' END AS "95% interval",
           rank_low || '-' || rank_high AS rank, n_battles AS battles,
           coalesce(round(consistency, 2)::VARCHAR, 'n/a') || ' of ' || judged_pairs || ' pairs' AS consistency,
           coalesce(round(first_position_rate, 2)::VARCHAR, 'n/a') || ' of ' || decisive_verdicts || ' decisive'
               AS "first shown wins",
           forfeits || ' forfeits, ' || no_verdict || ' without a verdict' AS "left out of both"
    FROM arena_ratings WHERE benchmark = ? AND judge = ? AND lang = 'all' ORDER BY rank_low, rank_high, model
"""


JUDGE_SUMMARY = """
    SELECT 'judging: ' || kind AS "asked", judge,
           count(*) FILTER (WHERE status = 'ok' AND raw_text IS NOT NULL) AS "verdicts read",
           count(*) FILTER (WHERE status IN ('parse_failed', 'call_failed', 'skipped_budget')) AS judge_failed
    FROM judgements GROUP BY ALL
    UNION ALL
    SELECT 'arena: pairwise', judge, count(*) FILTER (WHERE status = 'ok'),
           count(*) FILTER (WHERE status IN ('parse_failed', 'call_failed', 'skipped_budget'))
    FROM battles GROUP BY ALL
    UNION ALL
    SELECT 'qa pre-screen: ' || check_name, substr(reviewer, 5), count(*) FILTER (WHERE verdict <> 'unsure'),
           count(*) FILTER (WHERE verdict = 'unsure')
    FROM qa_reviews WHERE reviewer LIKE 'llm:%' GROUP BY ALL
    ORDER BY 1, 2
"""


def judge_summary(wh: Warehouse) -> tuple[list[str], list[tuple]]:
    """Every judge's structured verdicts: how many were read, and how many could not be had (``judge_failed``)."""
    return wh.query_with_columns(JUDGE_SUMMARY)


def arena_summary(wh: Warehouse) -> tuple[list[str], list[tuple]]:
    """The demo arena's ratings over all languages, with the judge's consistency and first-position rate over its
    own verdicts (n/a where it decided none; what was left out beside them), and every battle status's count."""
    columns, rows = wh.query_with_columns(ARENA_SUMMARY, [XRAG_SAMPLE, JUDGE])
    verdicts = wh.query("SELECT status, count(*) FROM battles WHERE benchmark = ? AND judge = ? GROUP BY ALL"
                        " ORDER BY ALL", [XRAG_SAMPLE, JUDGE])
    return columns, rows + [(f"(battles: {dict(verdicts)})", *(None,) * (len(columns) - 1))]
