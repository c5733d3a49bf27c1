"""Evaluate a ranker on a CLIR collection: rankings, per-query scores, metrics with bootstrap intervals.

Everything an evaluation reports is written to the warehouse (``rankings``,
``eval_metrics``) so any number can be recomputed with SQL.  A metric that is
undefined for some queries (``ndcg@10_no6`` for a query whose only relevant
document is its own article) averages over the others: its ``n_queries`` is
smaller than the direction's, the difference is kept as ``left_out`` and
reported, and a direction where no query has it gets no row for it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field

import pyarrow as pa

from tasks.errors import ConfigError
from tasks.metrics.bootstrap import bootstrap_ci
from tasks.metrics.ranking import METRICS, evaluate_run, queries_without_relevant_hits
from tasks.rankers.base import Ranker
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import LAKE_TABLES, RANKING_SCHEMA, ShardWriter, cell_dir

log = logging.getLogger(__name__)
ALL = "all"  # the src/tgt value of the mean over directions


@dataclass
class EvalResult:
    eval_id: str
    metrics: list[dict] = field(default_factory=list)  # rows of eval_metrics
    per_query: list[dict] = field(default_factory=list)  # direction, query, metric → score
    left_out: list[dict] = field(default_factory=list)  # direction, metric → queries where it is undefined


def _qrels(wh: Warehouse, collection: str, src: str, tgt: str, split: str) -> dict[int, dict[int, int]]:
    where = "" if split == ALL else " AND split = ?"
    qrels: dict[int, dict[int, int]] = defaultdict(dict)
    for query_id, doc_id, label in wh.query(
            "SELECT query_id, doc_id, label FROM clir_qrels WHERE collection = ? AND src_lang = ? AND tgt_lang = ?" + where,
            [collection, src, tgt] + ([] if split == ALL else [split])):
        qrels[query_id][doc_id] = label
    return qrels


def evaluate(wh: Warehouse, collection: str, ranker: Ranker, split: str, eval_id: str, *, k: int = 100,
             n_resamples: int = 1000) -> EvalResult:
    """Rank every judged query of every direction and score it; write rankings and eval_metrics."""
    directions = wh.query("SELECT DISTINCT src_lang, tgt_lang FROM clir_qrels WHERE collection = ? ORDER BY ALL", [collection])
    if not directions:
        raise ConfigError(f"collection {collection!r} has no qrels; run `babelbench clir build --name {collection}` first")
    result = EvalResult(eval_id)
    writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "rankings", eval_id, eval_id), LAKE_TABLES["rankings"], eval_id)
    per_direction_means: dict[str, list[float]] = defaultdict(list)
    nothing_found: list[str] = []  # "src>tgt: n of m queries", for directions with queries that found nothing relevant
    for src, tgt in directions:
        qrels = _qrels(wh, collection, src, tgt, split)
        if not qrels:
            log.info("%s>%s: no queries in split %s", src, tgt, split)
            continue
        titles = dict(wh.query("SELECT page_id, title FROM documents WHERE lang = ? AND page_id IN (SELECT unnest(?))",
                               [src, sorted(qrels)]))
        queries = [(query_id, titles[query_id]) for query_id in sorted(qrels) if query_id in titles]
        ranking = ranker.rank(wh, src, tgt, queries, k)
        columns: dict[str, list] = {name: [] for name in RANKING_SCHEMA.names}
        for query_id, hits in ranking.items():
            for rank, (doc_id, score) in enumerate(hits, start=1):
                for name, value in zip(RANKING_SCHEMA.names, (eval_id, src, tgt, query_id, doc_id, rank, score), strict=True):
                    columns[name].append(value)
        writer.add_table(pa.table(columns, schema=RANKING_SCHEMA))
        run = {q: [d for d, _ in hits] for q, hits in ranking.items()}
        scores = evaluate_run(run, qrels)
        missed = len(queries_without_relevant_hits(run, qrels))
        if missed:
            nothing_found.append(f"{src}>{tgt}: {missed} of {len(qrels)} queries")
        for metric in METRICS:
            defined = [q for q in sorted(qrels) if q in scores[metric]]
            if len(defined) < len(qrels):
                result.left_out.append({"src_lang": src, "tgt_lang": tgt, "metric": metric,
                                        "n_left_out": len(qrels) - len(defined), "n_queries": len(qrels)})
            if not defined:
                continue
            values = [scores[metric][q] for q in defined]
            mean, low, high = bootstrap_ci(values, n_resamples=n_resamples)
            result.metrics.append({"eval_id": eval_id, "src_lang": src, "tgt_lang": tgt, "metric": metric,
                                   "value": mean, "ci_low": low, "ci_high": high, "n_queries": len(values)})
            per_direction_means[metric].append(mean)
            result.per_query += [{"src_lang": src, "tgt_lang": tgt, "query_id": q, "metric": metric, "value": v}
                                 for q, v in zip(defined, values, strict=True)]
    if not per_direction_means:
        raise ConfigError(f"collection {collection!r} has no queries in split {split!r}")
    if result.left_out:
        log.info("left out where the metric is undefined (no relevant document besides the query's own article for"
                 " ndcg@10_no6): %s", left_out_summary(result))
    if nothing_found:
        log.warning("%s retrieved no relevant (judged, label > 0) document in its top %d for some queries, which"
                    " score 0: %s. A lexical ranker does that where query and document languages share no terms"
                    " (e.g. across scripts).", ranker.name, k, "; ".join(nothing_found))
    for metric, means in per_direction_means.items():
        mean, low, high = bootstrap_ci(means, n_resamples=n_resamples)  # directions as the unit of the average
        result.metrics.append({"eval_id": eval_id, "src_lang": ALL, "tgt_lang": ALL, "metric": metric,
                               "value": mean, "ci_low": low, "ci_high": high, "n_queries": len(means)})
    writer.flush()
    wh.replace_cell("rankings", eval_id, eval_id, writer.shards)
    with wh.transaction() as cur:
        cur.execute("DELETE FROM eval_metrics WHERE eval_id = ?", [eval_id])
        cur.executemany("INSERT INTO eval_metrics VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [list(row.values()) for row in result.metrics])
    return result


def left_out_summary(result: EvalResult) -> str:
    """"ndcg@10_no6: en>de 2 of 3 queries; ja>de 2 of 2 queries" — the queries each metric left out."""
    by_metric: dict[str, list[str]] = defaultdict(list)
    for row in result.left_out:
        by_metric[row["metric"]].append(f"{row['src_lang']}>{row['tgt_lang']} {row['n_left_out']} of"
                                        f" {row['n_queries']} queries")
    return "; ".join(f"{metric}: {', '.join(directions)}" for metric, directions in by_metric.items())
