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
from tests.warehouse_docs import add_document

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
