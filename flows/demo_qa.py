"""The demo's QA half: a small ECLEKTIC-style and XRAG-style benchmark written, then answered, by the local model.

Kept small on purpose — the local model is a 270M-parameter base model at
about 40 tokens/s on two cores — so every status (parse, pre-screen, gate)
shows up in a few minutes.  Its answers are weak; the point is the machinery,
and the statuses say honestly what came out.
"""

from __future__ import annotations

from pathlib import Path

from flows.arena import ArenaParams, arena_flow
from flows.evaluate import EvaluateParams, evaluate_flow
from flows.qa import InstancesParams, QaBuildParams, TranslateParams, instances_flow, qa_build_flow, translate_flow
from flows.report import ReportParams, report_flow
from tasks.arena.battles import ArenaConfig
from tasks.imports.common import import_dataset
from tasks.instances.build import InstanceConfig
from tasks.qa.xrag_config import XragConfig
from tasks.warehouse.db import Warehouse

GENERATOR = "local"
#: The systems the demo evaluates: the local model, the baseline that always abstains (MKQA's floor) and the one
#: that copies the likeliest sentence of the shown passages.
SYSTEMS = [GENERATOR, "abstain", "extractive"]
#: The demo's arena: a few XRAG instances per language, judged by the local model — the only model offline, so
#: it also judges its own answers (never allowed by default), with a short explanation so the demo stays quick.
ARENA = ArenaConfig(queries_per_lang=2, judge_own_system=True, max_tokens=48)
MKQA_SAMPLE = Path(__file__).resolve().parents[1] / "tasks" / "sample" / "mkqa_sample.jsonl"
# ECLEKTIC: every sample language; the items are translated into English only (each translation is two calls).
ECLEKTIC_TARGETS = ["en"]
# XRAG: English pivot with German; one pair per kind and one question type.
XRAG_LANGS = ["en", "de"]
XRAG = XragConfig(max_pairs=1, question_types=("comparison",), questions_per_type=1)


def run_qa_demo(home: Path, langs: list[str]) -> list[dict]:
    """Build, translate and assemble both benchmarks, then evaluate the local model and the two baselines on
    them (judged by the local model) and on a bundled sample in MKQA's format; run a small arena on XRAG and
    write its report.

    The pre-screen is advisory (``qc_policy: human``).  The local model is its own judge only because it is
    the one model the demo has offline: a judge should be a stronger model than the ones it judges.
    """
    rows: list[dict] = []
    rows += qa_build_flow(QaBuildParams(recipe="eclektic", langs=langs, generator=GENERATOR, home=str(home)))
    rows += qa_build_flow(QaBuildParams(recipe="xrag", langs=XRAG_LANGS, generator=GENERATOR, xrag=XRAG, home=str(home)))
    policy = InstanceConfig(qc_policy="human")
    for benchmark, targets in (("eclektic", ECLEKTIC_TARGETS), ("xrag", XRAG_LANGS[1:])):
        rows += translate_flow(TranslateParams(benchmark=benchmark, to=targets, translator=GENERATOR,
                                               qc_policy=policy.qc_policy, home=str(home)))
        rows += instances_flow(InstancesParams(benchmark=benchmark, instances=policy, home=str(home)))
        rows += evaluate_flow(EvaluateParams(benchmark=benchmark, models=SYSTEMS, judges=[GENERATOR], home=str(home)))
    with Warehouse(home) as wh:  # eight questions about the sample's world, in MKQA's published layout
        import_dataset(wh, "mkqa", MKQA_SAMPLE, "mkqa-sample", None)
    rows += evaluate_flow(EvaluateParams(benchmark="mkqa-sample", models=SYSTEMS, judges=[], home=str(home)))
    rows += arena_flow(ArenaParams(benchmark="xrag", models=SYSTEMS, judge=GENERATOR, arena=ARENA, bootstrap=100,
                                   home=str(home)))
    report_flow(ReportParams(benchmark="xrag", out=str(home / "report.html"), home=str(home)))
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
    SELECT benchmark, setting, model, metric, round(value, 3) AS value,
           '[' || round(ci_low, 3) || ', ' || round(ci_high, 3) || ']' AS "95% interval", n
    FROM leaderboard WHERE lang = 'all' AND subset = 'all'
      AND metric IN ('overall_success', 'transfer', 'source_accuracy', 'source_question_accuracy', 'accuracy', 'f1')
    ORDER BY ALL
"""


def leaderboard_summary(wh: Warehouse) -> tuple[list[str], list[tuple]]:
    """The demo's leaderboard: each benchmark's headline metrics pooled over languages."""
    return wh.query_with_columns(LEADERBOARD)


ARENA_SUMMARY = """
    SELECT model, round(rating, 3) AS rating, '[' || round(ci_low, 3) || ', ' || round(ci_high, 3) || ']' AS "95% interval",
           rank_low || '-' || rank_high AS rank, n_battles AS battles, round(consistency, 2) AS consistency,
           round(first_position_rate, 2) AS "first shown wins"
    FROM arena_ratings WHERE benchmark = 'xrag' AND lang = 'all' ORDER BY rating DESC
"""


def arena_summary(wh: Warehouse) -> tuple[list[str], list[tuple]]:
    """The demo arena's ratings over all languages, and how many of the judge's verdicts could be read."""
    columns, rows = wh.query_with_columns(ARENA_SUMMARY)
    verdicts = wh.query("SELECT status, count(*) FROM battles WHERE benchmark = 'xrag' GROUP BY ALL ORDER BY ALL")
    return columns, rows + [(f"(battles: {dict(verdicts)})", None, None, None, None, None, None)]
