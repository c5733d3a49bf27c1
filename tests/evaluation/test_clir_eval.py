"""What `clir eval` reports when a ranker finds nothing relevant (tasks.metrics.clir_eval)."""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pytest

from tasks.metrics.clir_eval import ALL, evaluate
from tasks.rankers.base import Query, Ranking
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import CLIR_QREL_SCHEMA, LAKE_TABLES, ShardWriter, cell_dir
from tests.support.warehouse_docs import add_document

# (src, tgt, query id, title, {doc id: (label, is_pad)}, what the ranker returns for the query)
QUERIES = [
    # en→de: the ranker finds the own article of query 1 and 2; query 3 gets only an unjudged document.
    ("en", "de", 1, "Berlin", {640: (6, False), 1830: (5, False)}, [640, 77]),
    ("en", "de", 2, "Paris", {900: (6, False)}, [900]),
    ("en", "de", 3, "Germany", {1830: (4, False)}, [77]),
    # ja→de, across scripts: nothing for query 11, and for query 12 only a padding document (label 0).
    ("ja", "de", 11, "ベルリン", {640: (6, False)}, []),
    ("ja", "de", 12, "パリ", {900: (6, False), 55: (0, True)}, [55]),
]


class FixedRanker:
    """Returns given doc ids per (src, tgt, query id), best first, as a ranker over the target index would."""

    name = "fixed"

    def __init__(self, returned: dict[tuple[str, str, int], list[int]]) -> None:
        self.returned = returned

    def rank(self, wh: Warehouse, src: str, tgt: str, queries: Sequence[Query], k: int) -> Ranking:
        return {query_id: [(doc, 1.0 / rank) for rank, doc in enumerate(self.returned[(src, tgt, query_id)], start=1)]
                for query_id, _ in queries}


@pytest.fixture
def warehouse(tmp_path: Path) -> Iterator[Warehouse]:
    wh = Warehouse(tmp_path / "home")
    for src, _, query_id, title, _, _ in QUERIES:
        add_document(wh, src, query_id, title, "")
    columns: dict[str, list] = {name: [] for name in CLIR_QREL_SCHEMA.names}
    for src, tgt, query_id, _, judged, _ in QUERIES:
        for doc_id, (label, is_pad) in judged.items():
            for name, value in zip(CLIR_QREL_SCHEMA.names, ("c", src, tgt, "test1", query_id, doc_id, label, is_pad),
                                   strict=True):
                columns[name].append(value)
    directory = cell_dir(wh.lake_root, "clir_qrels", "c", "test")
    writer = ShardWriter(wh.lake_root, directory, LAKE_TABLES["clir_qrels"], "test")
    writer.add_table(pa.table(columns, schema=CLIR_QREL_SCHEMA))
    wh.replace_cell("clir_qrels", "c", "test", writer.shards)
    yield wh
    wh.close()


def test_the_warning_names_each_direction_with_its_queries_that_found_nothing_relevant(
        warehouse: Warehouse, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        ranker = FixedRanker({(src, tgt, query_id): docs for src, tgt, query_id, _, _, docs in QUERIES})
        result = evaluate(warehouse, "c", ranker, ALL, "e1", n_resamples=50)
    warnings = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    # en→de: query 3 only; ja→de: query 11 (nothing retrieved) and query 12 (only its label-0 padding document).
    assert "en>de: 1 of 3 queries" in warnings[0]
    assert "ja>de: 2 of 2 queries" in warnings[0]
    assert "fixed" in warnings[0]
    # Both sides use int page ids: no hint about id types.
    assert "id type" not in warnings[0]
    ndcg = {(r["src_lang"], r["tgt_lang"]): r["value"] for r in result.metrics if r["metric"] == "ndcg@10"}
    # en→de: query 1 ranks [6, unjudged] against the ideal [6, 5]: 63 / (63 + 31/log2(3));
    # query 2 is perfect (1.0); query 3 scores 0.
    assert ndcg[("en", "de")] == pytest.approx((63 / (63 + 31 / math.log2(3)) + 1.0 + 0.0) / 3)
    assert ndcg[("ja", "de")] == 0.0


def test_no_warning_when_every_query_finds_something_relevant(warehouse: Warehouse,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    ranker = FixedRanker({(src, tgt, query_id): [doc for doc, (label, _) in judged.items() if label > 0]
                          for src, tgt, query_id, _, judged, _ in QUERIES})
    with caplog.at_level(logging.WARNING):
        evaluate(warehouse, "c", ranker, ALL, "e2", n_resamples=50)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_ndcg_without_the_own_article_leaves_out_queries_with_nothing_else_relevant(
        warehouse: Warehouse, caplog: pytest.LogCaptureFixture) -> None:
    returned = {("en", "de", 1): [77, 1830, 640], ("en", "de", 2): [900], ("en", "de", 3): [1830],
                ("ja", "de", 11): [640], ("ja", "de", 12): [55, 900]}
    with caplog.at_level(logging.INFO, logger="tasks.metrics.clir_eval"):
        result = evaluate(warehouse, "c", FixedRanker(returned), ALL, "e3", n_resamples=50)
    rows = {(r["src_lang"], r["tgt_lang"]): (r["value"], r["n_queries"]) for r in result.metrics
            if r["metric"] == "ndcg@10_no6"}
    # en→de: query 2's only relevant document is its own article (900): left out, not scored 0.
    #   query 1 without its 640: ranking [unjudged, 5] against [5]: (31/log2(3)) / 31 = 1/log2(3) = 0.63093;
    #   query 3: [4] against [4]: 1.0.  Mean over 2 queries: (0.63093 + 1) / 2 = 0.81546 (scored 0, query 2
    #   would have pulled it down to 0.54364 over 3).
    # ja→de: both queries have only their own article (12's 55 is label-0 padding): no value, no row.
    assert rows[("en", "de")] == (pytest.approx((1 / math.log2(3) + 1.0) / 2), 2)
    assert ("ja", "de") not in rows
    assert rows[(ALL, ALL)] == (pytest.approx((1 / math.log2(3) + 1.0) / 2), 1)  # one direction has a value
    assert sorted((r["src_lang"], r["tgt_lang"], r["metric"], r["n_left_out"], r["n_queries"])
                  for r in result.left_out) == [("en", "de", "ndcg@10_no6", 1, 3), ("ja", "de", "ndcg@10_no6", 2, 2)]
    assert "ndcg@10_no6: en>de 1 of 3 queries, ja>de 2 of 2 queries" in caplog.text
    # the other metrics still score every query: ndcg@10 of ja→de is a row over both queries
    assert any(r["metric"] == "ndcg@10" and (r["src_lang"], r["n_queries"]) == ("ja", 2) for r in result.metrics)
    with_self = {r["query_id"] for r in result.per_query if r["metric"] == "ndcg@10_no6"}
    assert with_self == {1, 3}
    stored = warehouse.query("SELECT src_lang, n_queries FROM eval_metrics WHERE eval_id = 'e3'"
                             " AND metric = 'ndcg@10_no6' ORDER BY ALL")
    assert stored == [("all", 1), ("en", 2)]
