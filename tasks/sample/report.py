"""What the demo prints of a home: the QA benchmarks' statuses, the headline leaderboard, every judge's readable
and failed verdicts, the arena's ratings, the corpus and its collections."""

from __future__ import annotations

from tasks.warehouse.db import Warehouse

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


WINDOW_SUMMARY = """
    WITH cells AS (
        SELECT benchmark, model, lang, metric, replace(subset, 'window:', '') AS side,
               coalesce(round(value, 1)::VARCHAR, 'n/a') || coalesce(' [' || round(ci_low, 1) || ', '
                   || round(ci_high, 1) || ']', '') || ' (n=' || n || ')' AS cell
        FROM leaderboard WHERE starts_with(subset, 'window:') AND setting = 'closed_book' AND list_contains(?, benchmark))
    SELECT benchmark, model, lang, any_value(metric) FILTER (WHERE side <> 'before-after') AS metric,
           any_value(cell) FILTER (WHERE side = 'before_cutoff') AS before_cutoff,
           any_value(cell) FILTER (WHERE side = 'after_cutoff') AS after_cutoff,
           any_value(cell) FILTER (WHERE side = 'unknown') AS unknown,
           any_value(cell) FILTER (WHERE side = 'before-after') AS "gap: before - after"
    FROM cells GROUP BY benchmark, model, lang ORDER BY benchmark, model, lang
"""


def window_summary(wh: Warehouse, benchmarks: list[str]) -> tuple[list[str], list[tuple]]:
    """The closed-book leaderboard of ``benchmarks`` split by knowledge cutoff, one row per model: each window's
    headline (ECLEKTIC's over its pairs, XRAG's over its English questions, the only closed-book ones) with its
    interval and n, and the contamination gap."""
    return wh.query_with_columns(WINDOW_SUMMARY, [benchmarks])


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
    FROM arena_ratings WHERE benchmark = ? AND judge = ? AND lang = 'all' AND subset = 'all'
    ORDER BY rank_low, rank_high, model
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


def arena_summary(wh: Warehouse, benchmark: str, judge: str) -> tuple[list[str], list[tuple]]:
    """The demo arena's ratings over all languages, with the judge's consistency and first-position rate over its
    own verdicts (n/a where it decided none; what was left out beside them), and every battle status's count."""
    columns, rows = wh.query_with_columns(ARENA_SUMMARY, [benchmark, judge])
    verdicts = wh.query("SELECT status, count(*) FROM battles WHERE benchmark = ? AND judge = ? GROUP BY ALL"
                        " ORDER BY ALL", [benchmark, judge])
    return columns, rows + [(f"(battles: {dict(verdicts)})", *(None,) * (len(columns) - 1))]


def corpus_summary(wh: Warehouse) -> tuple[list[str], list[tuple]]:
    """The corpus the demo built, per language (the ``corpus_summary`` view)."""
    return wh.query_with_columns("SELECT * FROM corpus_summary")


def collection_summary(wh: Warehouse, prefix: str) -> list[tuple]:
    """Per CLIR collection whose name starts with ``prefix``: its directions, queries and judgements."""
    return wh.query("SELECT collection, count(DISTINCT src_lang || tgt_lang), count(DISTINCT src_lang || query_id),"
                    " count(*) FROM clir_qrels WHERE collection LIKE ? GROUP BY ALL ORDER BY 1", [f"{prefix}%"])
