"""Where CLIR mining's time goes as the collection grows: the phases of one language's mining, per query, at each size.

``clir_mining`` times mining end to end against its peers; this says what the time is made of, so that the size at
which the embedded engine loses its lead can be explained. For each ``--docs`` size it builds the same synthetic
corpus as ``clir_mining`` (same seed, same queries), builds the embedded index, then runs the mining's batches
(``QUERY_BATCH`` title queries each) on this one thread, phase by phase, as ``mine_batch`` and the backend's search
run them:

* ``analyse`` — the queries through the index's analyzer;
* ``query`` — the rows and weights of a chunk's queries (``SEARCH_CHUNK`` queries), chunk by chunk;
* ``search`` — the compiled search over the stacked (word × document) scores of both fields: each query's sums, block
  of documents by block, and its top ``top_k`` by score then doc id, made into the hits a search returns;
* ``normalise``, ``jenks`` — the labelling of the batch's hits (``normalise_batch``, ``label_batch``);
* ``rest`` — the whole ``mine_batch`` (inline, the real code) minus the phases above: the hits made flat, the
  columns and the Parquet shard.

It also reports what drives them: the postings a query's words read in each field. Every phase is in microseconds per query. Timings are
single-threaded and best of ``--repeat``; the mining itself runs the chunks on one thread per core and the batches
on the Dask workers, which divides these costs but does not change their shares. Run:
``.venv/bin/python benchmarks/mining_phases.py --docs 100000,1000000``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import tantivy

from _common import emit, say
from clir_mining import CLIR, INDEX_CONFIG, LANG, OURS, FINGERPRINT, make_corpus
from parse_throughput import compute_mode
from tasks.index.analysis import AnalysisPlan, plan_for, prepare_query
from tasks.index.embedded import BODY, SEARCH_CHUNK, TITLE, _open, _Opened, text_analyzer
from tasks.index.registry import get_backend
from tasks.pairing.labels import label_batch, normalise_batch
from tasks.pairing.mining import QUERY_BATCH, QueryBatch, flat_hits, mine_batch
from tasks.warehouse.lake import cell_dir

BENCHMARK = "mining_phases"
PHASES = ("analyse", "query", "search", "normalise", "jenks", "rest")


def _timed(totals: dict[str, float], phase: str, work: Callable[[], object]) -> object:
    started = time.perf_counter()
    result = work()
    totals[phase] += time.perf_counter() - started
    return result


def _batch_phases(opened: _Opened, analyzer: tantivy.TextAnalyzer, plan: AnalysisPlan, ids: list[int],
                  titles: list[str]) -> tuple[dict[str, float], list[int]]:
    """One batch's phases, as the search and ``mine_batch`` run them, on this thread; and what drove them
    (postings read in the title and body fields)."""
    totals = dict.fromkeys(PHASES, 0.0)
    weights = {TITLE: INDEX_CONFIG.title_boost, BODY: 1.0}
    words = _timed(totals, "analyse", lambda: [analyzer.analyze(prepare_query(query, plan)) for query in titles])
    postings = np.diff(opened.scores.indptr)
    drivers = [sum(int(postings[row]) for w in words for row in opened.rows(w, name)) for name in (TITLE, BODY)]
    results = []
    for start in range(0, len(words), SEARCH_CHUNK):
        chunk = words[start:start + SEARCH_CHUNK]
        _timed(totals, "query", lambda: opened.query_rows(chunk, weights))
        results += _timed(totals, "search", lambda: opened.top_k(chunk, weights, CLIR.top_k))
    totals["search"] -= totals["query"]  # top_k makes the chunk's rows again
    counts, doc_ids, flat_scores = flat_hits(results)
    names = [str(query_id) for query_id in ids]
    _timed(totals, "normalise", lambda: normalise_batch(flat_scores, counts, CLIR.normalisation, names))
    _timed(totals, "jenks", lambda: label_batch(doc_ids, flat_scores, counts, np.asarray(ids, dtype=np.int64), CLIR,
                                                names))
    return totals, drivers


def profile_size(docs: int, queries: int, seed: int, repeat: int, workdir: Path) -> dict[str, float]:
    """Phase microseconds per query (each the best of ``repeat`` passes over every batch) and their drivers."""
    say(f"{docs:,} documents: corpus and index")
    corpus = make_corpus(docs, queries, seed)
    backend = get_backend(OURS)
    started = time.perf_counter()
    info = backend.build(LANG, corpus.rows(), workdir / f"index-{docs}", INDEX_CONFIG)
    index_s = time.perf_counter() - started
    opened = _open(info.path.resolve())
    plan = plan_for(LANG, INDEX_CONFIG.stem)
    analyzer = text_analyzer(plan)
    lake = workdir / "lake"
    best = dict.fromkeys(PHASES, float("inf"))
    drivers = [0, 0]
    for attempt in range(repeat):
        say(f"  pass {attempt + 1} of {repeat}")
        totals, drivers = dict.fromkeys(PHASES, 0.0), [0, 0]
        for number, start in enumerate(range(0, len(corpus.queries), QUERY_BATCH)):
            ids, titles = corpus.query_ids[start:start + QUERY_BATCH], corpus.queries[start:start + QUERY_BATCH]
            phases, found = _batch_phases(opened, analyzer, plan, ids, titles)
            batch = QueryBatch(number, LANG, OURS, str(info.path), tuple(ids), tuple(titles))
            started = time.perf_counter()
            mine_batch(batch, index_config=INDEX_CONFIG, clir=CLIR, lake_root=lake,
                       directory=cell_dir(lake, "retrieval_hits", LANG, FINGERPRINT), fingerprint=FINGERPRINT)
            phases["rest"] = max(0.0, time.perf_counter() - started - sum(phases.values()))
            totals = {phase: totals[phase] + phases[phase] for phase in PHASES}
            drivers = [a + b for a, b in zip(drivers, found)]
            shutil.rmtree(lake, ignore_errors=True)
        best = {phase: min(best[phase], totals[phase]) for phase in PHASES}
    count = len(corpus.queries)
    backend.drop(info)
    return {
        "docs": docs, "queries": count, "index_s": round(index_s, 2),
        **{f"{phase}_us": round(best[phase] / count * 1e6, 1) for phase in PHASES},
        "total_us": round(sum(best.values()) / count * 1e6, 1),
        "postings_title_per_query": round(drivers[0] / count), "postings_body_per_query": round(drivers[1] / count),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", default="100000,1000000", help="corpus sizes, comma-separated")
    parser.add_argument("--queries", type=int, default=16_000, help="title queries (as clir_mining)")
    parser.add_argument("--repeat", type=int, default=2, help="passes per size; the fastest counts, phase by phase")
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the synthetic corpus (as clir_mining)")
    args = parser.parse_args(argv)
    sizes = sorted({int(size) for size in args.docs.split(",") if size.strip()})
    if not sizes or sizes[0] < CLIR.top_k:
        parser.error(f"--docs takes sizes of at least {CLIR.top_k} documents")
    os.environ["OMP_NUM_THREADS"] = "1"  # the search's thread budget: every phase on this one thread
    metrics: dict[str, object] = {"repeat": args.repeat, "query_batch": QUERY_BATCH}
    workdir = Path(tempfile.mkdtemp(prefix="babelbench-mining-phases-"))
    try:
        with compute_mode("inline"):
            for docs in sizes:
                result = profile_size(docs, args.queries, args.seed, args.repeat, workdir)
                say("  " + ", ".join(f"{key} {value}" for key, value in result.items()))
                metrics |= {f"{docs}.{key}": value for key, value in result.items()}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    ratios = {f"{phase}_growth": round(metrics[f"{sizes[-1]}.{phase}_us"] / metrics[f"{sizes[0]}.{phase}_us"], 2)
              for phase in (*PHASES, "total") if len(sizes) > 1 and metrics[f"{sizes[0]}.{phase}_us"]}
    emit(BENCHMARK, metrics, ratios)


if __name__ == "__main__":
    main()
