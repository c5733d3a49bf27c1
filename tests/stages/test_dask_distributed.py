"""The Dask-parallel stages on a distributed cluster (a scheduler and two worker processes, reached through
``DASK_SCHEDULER_ADDRESS`` like an existing cluster) leave exactly what the same stages leave run inline.

The parallel work of babelbench is what goes through :func:`tasks.compute.map_parallel`: parsing a multistream XML
dump in byte ranges (corpus ingest), searching and labelling title queries in batches (CLIR mining) and the
deterministic features in chunks. Embeddings (the dense ranker, the model features) run in the flow process, where
their model is loaded once, so they have no distributed path to compare. The units are made small here so that
every stage is split into several tasks, and the test checks that the tasks did run on both workers.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from pathlib import Path

import pytest

from flows.clir import ClirBuildParams, clir_build_flow
from flows.corpus import CorpusParams, corpus_flow
from flows.features import FeaturesParams, features_flow
from tasks import compute
from tasks.inference.language import response_language
from tasks.pairing.config import ClirConfig
from tasks.sample.mirror import build_sample_mirror
from tasks.warehouse.db import Warehouse
from tests.evaluation.test_features import DOCS, _instance, _response
from tests.support.home_snapshot import lake_files, lake_problems, table_snapshot

pytestmark = pytest.mark.slow
LANGS = ["en", "de"]
#: the functions map_parallel runs, per stage
PARALLEL = {"parse_unit": "corpus ingest", "mine_batch": "CLIR mining", "_compute_chunk": "features"}


def _responses(home: Path) -> None:
    """A MIRAGE-like benchmark with a few systems' answers, for the features stage."""
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('b', 'mirage', ['en', 'zh'], 'g', '{}', now())")
        _instance(cur, "i1", "en", "", DOCS)
        _instance(cur, "i2", "zh", "长江是中国最长的河流", DOCS)
        _instance(cur, "i3", "en", "The bridge opened in 1891.", DOCS)
        _response(cur, "i1", "sys", "en", "The river rises in the hills north of the old town [x][d2, d2][d1].")
        _response(cur, "i1", "ref", "en", "The river rises in the hills north of the old town [d1].")
        _response(cur, "i1", "mute", "en", "I don't know.")
        _response(cur, "i2", "sys", "zh", "长江是最长的河流")
        _response(cur, "i2", "ref", "zh", "", status="call_failed")
        _response(cur, "i3", "sys", "en", "It opened in 1891 [d1].")
        _response(cur, "i3", "ref", "en", "The bridge was opened in 1891 [d2].")
        _response(cur, "i3", "mute", "en", "No idea.")


def _run_stages(home: Path, source: str) -> None:
    corpus_flow(CorpusParams(langs=LANGS, source=source, kind="xml", home=str(home), progress=False))
    clir_build_flow(ClirBuildParams(name="t", langs=LANGS, clir=ClirConfig(top_k=20, min_documents=10), home=str(home)))
    _responses(home)
    features_flow(FeaturesParams(benchmark="b", reference_model="ref", home=str(home)))


def test_parallel_stages_on_a_distributed_cluster_match_the_inline_run(
        prefect_api: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cluster: object) -> None:
    from distributed import Client, get_task_stream

    # several tasks per stage: a few page streams per parse unit, a few queries per batch, two responses per chunk
    monkeypatch.setattr("tasks.dumps.ingest.CHUNK_BYTES", 4000)
    monkeypatch.setattr("tasks.pairing.mining.QUERY_BATCH", 7)
    monkeypatch.setattr("tasks.features.compute.CHUNK", 2)
    # the responses' language columns are computed once for both homes: lingua's probabilities for one text vary in
    # their last bits from call to call, and they are inputs of the features cells (their fingerprints cover them)
    monkeypatch.setattr("tests.evaluation.test_features.response_language", functools.cache(response_language))
    source = build_sample_mirror(tmp_path / "mirror").root.as_uri()
    inline, distributed = tmp_path / "inline", tmp_path / "distributed"

    monkeypatch.setenv("BABELBENCH_COMPUTE", "inline")
    _run_stages(inline, source)

    monkeypatch.setenv("BABELBENCH_COMPUTE", "dask")
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)  # type: ignore[attr-defined]
    compute.shutdown()  # no client of an earlier test: the next map_parallel connects to this address
    try:
        with Client(cluster.scheduler_address) as watcher, get_task_stream(client=watcher) as stream:  # type: ignore[attr-defined]
            _run_stages(distributed, source)
            ran = stream.data
        assert compute._cluster is None  # it used the given cluster rather than starting its own
    finally:
        compute.shutdown()

    workers: dict[str, set[str]] = defaultdict(set)
    for task in ran:
        name = task["key"][0] if isinstance(task["key"], tuple) else task["key"]
        workers[next((f for f in PARALLEL if str(name).startswith(f)), "other")].add(task["worker"])
    assert {PARALLEL[f]: len(workers[f]) >= 1 for f in PARALLEL} == {stage: True for stage in PARALLEL.values()}
    assert len(set().union(*workers.values())) == 2  # both worker processes took part

    assert lake_problems(inline) == [] and lake_problems(distributed) == []
    assert lake_files(distributed) == lake_files(inline)
    tables, expected = table_snapshot(distributed), table_snapshot(inline)
    assert {t: v for t, v in tables.items() if v != expected.get(t)} == {}
    with Warehouse(distributed, read_only=True) as wh:
        counts = dict(wh.query("SELECT table_name, count(*) FROM lake_shards GROUP BY ALL"))
        features = wh.scalar("SELECT count(DISTINCT feature) FROM features WHERE benchmark = 'b'")
    assert counts["documents_raw"] > len(LANGS) and counts["retrieval_hits"] > len(LANGS)  # split into several units
    assert features > 1
