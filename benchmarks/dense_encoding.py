"""Dense encoding and search at scale: the stage against raw sentence-transformers, and bounded-memory search.

* ``stage_vs_raw.<model>.<device>.<precision>``: documents/s of the dense
  stage (:meth:`DenseRanker.document_vectors`: read the articles from the
  warehouse, truncate, encode in resumable shards, write the lake cache) ÷
  documents/s of ``SentenceTransformer.encode`` alone on the same texts, the
  same device, precision and batch size, in the same run (goal ≥ 0.9).
  Models are built locally with random weights (no hub): ``small`` is
  MiniLM-size (12 layers × 384), ``base`` 12 × 768; documents are long enough
  to fill the 256-token window, as Wikipedia articles do;
* ``docs_per_s.<model>.<device>.<precision>`` of both;
* ``search_queries_per_s`` and ``search_peak_above_vectors_mb``: exact top-100
  of ``--search-queries`` queries over ``--search-vectors`` synthetic unit
  vectors (tasks.rankers.search, blocks of queries), in a child process whose
  peak RSS (or, on CUDA, peak allocated GPU memory) less what it held before
  the search is the search's own memory (goal ≤ 2 GB);
* ``recall_at_100.<ivf|hnsw>``: the approximate FAISS indexes against exact
  search on ``--ann-vectors`` clustered synthetic vectors, with their build
  seconds and queries/s beside flat FAISS's;
* with ``--eval-docs N --eval-queries M``: a whole dense CLIR evaluation
  (tasks.metrics.clir_eval.evaluate, a 2-layer model) of M queries against N
  synthetic documents in a child process: its peak RSS, and whether every
  ranking equals a brute-force full sort by (-score, doc id).

Run: ``.venv/bin/python benchmarks/dense_encoding.py [--docs 128] [--models small,base] [--device auto]
[--search-vectors 1000000 --search-queries 10000 --search-dim 768] [--eval-docs 200000 --eval-queries 5000]``.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DO_NOT_TRACK", "1")

import numpy as np  # noqa: E402
import orjson  # noqa: E402
import pyarrow as pa  # noqa: E402

from benchmarks._common import best_of, emit, per_second, say  # noqa: E402
from tasks.dumps.records import DOCUMENT_SCHEMA  # noqa: E402
from tasks.rankers import vector_index  # noqa: E402
from tasks.rankers.dense import DenseRanker  # noqa: E402
from tasks.placement import DeviceConfig, Placement, batch_size, load_bi_encoder, resolve  # noqa: E402
from tasks.rankers.search import to_device, top_k  # noqa: E402
from tasks.stage import ReadFields, Stage, StageOutput, run_stage  # noqa: E402
from tasks.text.truncate import truncate  # noqa: E402
from tasks.warehouse.db import Warehouse  # noqa: E402
from tasks.warehouse.lake import CLIR_QREL_SCHEMA, LAKE_TABLES, ShardWriter, cell_dir  # noqa: E402

SIZES = {"small": (12, 384, 12), "base": (12, 768, 12)}  # layers, hidden size, attention heads
SEQUENCE = 256
K = 100
ROUNDING = 1e-5
"""Score difference below which two documents' order is float rounding's (float32 dot products of unit vectors)."""


def _words(rng: random.Random, count: int) -> list[str]:
    return ["".join(rng.choice("abcdefghijklmnoprstuvz") for _ in range(rng.randint(3, 9))) for _ in range(count)]


def synthetic_articles(count: int, words_per_doc: tuple[int, int], seed: int = 0) -> list[tuple[int, str, str]]:
    """(page id, title, text) of ``count`` articles drawn from a 5,000-word vocabulary."""
    rng = random.Random(seed)
    vocabulary = _words(rng, 5000)
    return [(page_id, " ".join(rng.choices(vocabulary, k=rng.randint(1, 3))).title(),
             " ".join(rng.choices(vocabulary, k=rng.randint(*words_per_doc))))
            for page_id in range(1, count + 1)]


def build_model(size: str, texts: list[str], directory: Path) -> Path:
    """A random-weight BERT bi-encoder of ``size`` (mean pooling, 256 tokens) saved as a sentence-transformers
    directory: the encoder's cost without a download."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Pooling, Transformer
    from transformers import BertConfig, BertModel

    from tests.support.tiny_models import _tokenizer

    layers, hidden, heads = SIZES[size]
    torch.manual_seed(0)
    bert = directory / size / "bert"
    tokenizer = _tokenizer(texts, bert)
    BertModel(BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                         num_attention_heads=heads, intermediate_size=4 * hidden,
                         max_position_embeddings=512)).save_pretrained(bert)
    encoder = Transformer(str(bert), max_seq_length=SEQUENCE)
    model = SentenceTransformer(modules=[encoder, Pooling(encoder.get_embedding_dimension(), "mean")], device="cpu")
    model.save(str(directory / size / "bi-encoder"))
    return directory / size / "bi-encoder"


def add_articles(wh: Warehouse, lang: str, articles: list[tuple[int, str, str]]) -> None:
    """``articles`` as ``lang``'s documents, recorded as a computed documents stage (the dense stage keys its
    cache by that fingerprint)."""
    def write(fp: str) -> StageOutput:
        columns = {field.name: [None] * len(articles) for field in DOCUMENT_SCHEMA}
        columns |= {"lang": [lang] * len(articles), "page_id": [a[0] for a in articles],
                    "title": [a[1] for a in articles], "text": [a[2] for a in articles],
                    "namespace": [0] * len(articles), "is_redirect": [False] * len(articles),
                    "is_disambiguation": [False] * len(articles), "source": ["benchmark"] * len(articles)}
        writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "documents_raw", lang, fp), LAKE_TABLES["documents_raw"], fp)
        writer.add_table(pa.table(columns, schema=DOCUMENT_SCHEMA))
        wh.replace_cell("documents_raw", lang, fp, writer.shards)
        return StageOutput(rows=len(articles))

    run_stage(wh, Stage("documents", 2), lang, ReadFields(values={"synthetic": len(articles)}), {}, write)


def _reset_peak_rss() -> None:
    """Start the peak-RSS count afresh (Linux: ``5`` into clear_refs resets VmHWM), so the peak seen later is
    that of what follows, not of an import or a load before it."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def _peak_rss() -> int:
    """VmHWM (peak RSS since the last reset) where Linux has it, else the lifetime peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux reports kB


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


# -- encoding ------------------------------------------------------------------------------------------------

def encoding(args: argparse.Namespace, placement: Placement, work: Path) -> tuple[dict[str, Any], dict[str, float]]:
    """The stage and raw sentence-transformers on the same texts, per model size and precision."""
    metrics: dict[str, Any] = {"docs": args.docs}
    ratios: dict[str, float] = {}
    articles = synthetic_articles(args.docs, (180, 260))
    precisions = [args.precision] if args.precision != "auto" else (["fp16", "fp32"] if placement.kind == "cuda" else ["fp32"])
    home = work / "home"
    with Warehouse(home) as wh:
        add_articles(wh, "en", articles)
        texts = [f"{title}\n{truncate(text, 'en')}" for _, title, text in articles]
        for size in args.models:
            path = build_model(size, texts[:2000], work / "models")
            for precision in precisions:
                place = Placement(placement.device, precision, placement.batch_size, placement.pool)  # type: ignore[arg-type]
                model = load_bi_encoder(str(path), place)
                batch = batch_size(model, place, "bi")
                label = f"{size}.{place.kind}.{precision}"
                say(f"{label}: {args.docs} documents, batch {batch}")
                model.encode(texts[:batch], batch_size=batch)  # warm-up: kernels, allocator

                def clear_cache() -> None:
                    shutil.rmtree(wh.lake_root / "embeddings", ignore_errors=True)

                def stage() -> np.ndarray:
                    return DenseRanker(str(path), placement=place).document_vectors(wh, "en")[1]

                def raw() -> np.ndarray:
                    return model.encode(texts, batch_size=batch, normalize_embeddings=True, show_progress_bar=False)

                # alternated, so that a burst of load on a shared machine hits both sides alike
                runs = [(best_of(f"stage {label}", 1, stage, prepare=clear_cache), best_of(f"raw {label}", 1, raw))
                        for _ in range(args.repeat)]
                staged = min((s for s, _ in runs), key=lambda timing: timing.seconds)
                plain = min((r for _, r in runs), key=lambda timing: timing.seconds)
                metrics[f"docs_per_s.stage.{label}"] = round(per_second(args.docs, staged.seconds), 2)
                metrics[f"docs_per_s.raw.{label}"] = round(per_second(args.docs, plain.seconds), 2)
                metrics[f"batch.{label}"] = batch
                ratios[f"stage_vs_raw.{label}"] = round(plain.seconds / staged.seconds, 3)
                difference = np.abs(staged.result - np.asarray(plain.result, dtype=np.float32))
                metrics[f"stage_raw_max_abs_diff.{label}"] = float(difference.max())
    return metrics, ratios


# -- search --------------------------------------------------------------------------------------------------

def synthetic_vectors(count: int, dim: int, seed: int, clusters: int = 0) -> np.ndarray:
    """Unit vectors, drawn 10,000 rows at a time so that drawing them needs little more than they take;
    with ``clusters``, around that many centres (embeddings of real text cluster by topic)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((clusters, dim), dtype=np.float32) if clusters else None
    out = np.empty((count, dim), dtype=np.float32)
    for start in range(0, count, 10_000):
        block = rng.standard_normal((min(10_000, count - start), dim), dtype=np.float32)
        if centres is not None:
            block = centres[rng.integers(0, clusters, len(block))] + 0.6 * block
        out[start : start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def search_child(args: argparse.Namespace) -> dict[str, Any]:
    """In this (child) process: exact top-100 of the queries over the vectors, with its time and memory."""
    placement = resolve(DeviceConfig(device=args.device, precision=args.precision))
    vectors = synthetic_vectors(args.search_vectors, args.search_dim, seed=1)
    queries = synthetic_vectors(args.search_queries, args.search_dim, seed=2)
    ids = np.arange(len(vectors), dtype=np.int64)
    target = to_device(vectors, placement.device)
    result: dict[str, Any] = {"device": placement.device, "precision": placement.precision,
                              "vectors_mb": round(vectors.nbytes / 2**20, 1)}
    if placement.kind == "cuda":
        import torch

        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    before_rss = _rss()
    _reset_peak_rss()
    start = time.perf_counter()
    hits = top_k(queries, target, ids, K)
    result["seconds"] = round(time.perf_counter() - start, 3)
    result["peak_above_vectors_mb"] = round((_peak_rss() - before_rss) / 2**20, 1)
    if placement.kind == "cuda":
        result["gpu_peak_above_vectors_mb"] = round((torch.cuda.max_memory_allocated() - before) / 2**20, 1)
    result["queries"] = len(hits)
    return result


def search(args: argparse.Namespace) -> dict[str, Any]:
    """The search in a child process (its peak RSS is the search's alone, not this process's models')."""
    found = _child(args, "--search-child")
    say(f"search: {args.search_queries} queries × {args.search_vectors} vectors of {args.search_dim}: "
        f"{found['seconds']} s, {found.get('gpu_peak_above_vectors_mb', found['peak_above_vectors_mb'])} MB above "
        f"the {found['vectors_mb']} MB of vectors")
    return {"search_vectors": args.search_vectors, "search_queries": args.search_queries, "search_dim": args.search_dim,
            "search_queries_per_s": round(per_second(args.search_queries, found["seconds"]), 1),
            "search_vectors_mb": found["vectors_mb"], "search_peak_above_vectors_mb": found["peak_above_vectors_mb"],
            **({"search_gpu_peak_above_vectors_mb": found["gpu_peak_above_vectors_mb"]}
               if "gpu_peak_above_vectors_mb" in found else {})}


def approximate(args: argparse.Namespace) -> dict[str, Any]:
    """Flat, IVF and HNSW FAISS indexes on clustered vectors: build time, queries/s, recall@100 against exact."""
    vectors = synthetic_vectors(args.ann_vectors, args.search_dim, seed=3, clusters=max(1, args.ann_vectors // 100))
    queries = vectors[: args.ann_queries] + 0.1 * synthetic_vectors(args.ann_queries, args.search_dim, seed=4)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    ids = np.arange(len(vectors), dtype=np.int64)
    exact = top_k(queries, vectors, ids, K)
    metrics: dict[str, Any] = {"ann_vectors": args.ann_vectors, "ann_queries": args.ann_queries}
    for kind in ("flat", "ivf", "hnsw"):
        start = time.perf_counter()
        index = vector_index.build(kind, vectors)
        built = time.perf_counter() - start
        start = time.perf_counter()
        found = vector_index.search(index, kind, queries, vectors, ids, K)
        searched = time.perf_counter() - start
        recall = vector_index.recall_at(found, exact, K)
        say(f"{kind}: built in {built:.1f} s, {per_second(len(queries), searched):.0f} queries/s, recall@100 {recall:.4f}")
        metrics |= {f"build_s.{kind}": round(built, 2), f"queries_per_s.{kind}": round(per_second(len(queries), searched), 1),
                    f"recall_at_100.{kind}": round(recall, 4)}
    return metrics


# -- a whole evaluation --------------------------------------------------------------------------------------

def synthetic_collection(wh: Warehouse, n_docs: int, n_queries: int, name: str = "bench") -> tuple[
        list[tuple[int, str, str]], list[tuple[int, str, str]]]:
    """A CLIR collection ``name`` (en > de): ``n_docs`` German articles, and ``n_queries`` English "articles"
    each titled like one of them, which is its one relevant document (label 6). Returns (documents, queries)."""
    docs = synthetic_articles(n_docs, (20, 60), seed=5)
    targets = sorted(random.Random(6).sample(range(len(docs)), n_queries))
    queries = [(10_000_000 + i, docs[i][1], "") for i in targets]
    add_articles(wh, "de", docs)
    add_articles(wh, "en", queries)
    columns = {"collection": [name] * n_queries, "src_lang": ["en"] * n_queries, "tgt_lang": ["de"] * n_queries,
               "split": ["test1"] * n_queries, "query_id": [q[0] for q in queries],
               "doc_id": [docs[i][0] for i in targets], "label": [6] * n_queries, "is_pad": [False] * n_queries}
    writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "clir_qrels", name, name), LAKE_TABLES["clir_qrels"], name)
    writer.add_table(pa.table(columns, schema=CLIR_QREL_SCHEMA))
    wh.replace_cell("clir_qrels", name, name, writer.shards)
    return docs, queries


def eval_child(args: argparse.Namespace) -> dict[str, Any]:
    """A dense evaluation of ``eval_queries`` titles against ``eval_docs`` documents, then the brute-force check."""
    from tasks.metrics.clir_eval import ALL, evaluate
    from tests.support.tiny_models import build_bi_encoder

    work = Path(tempfile.mkdtemp(prefix="dense-eval-"))
    try:
        with Warehouse(work / "home") as wh:
            docs, queries = synthetic_collection(wh, args.eval_docs, args.eval_queries)
            model = build_bi_encoder([f"{t} {x}" for _, t, x in docs[:3000]], work)
            ranker = DenseRanker(str(model), placement=resolve(DeviceConfig(device=args.device, precision=args.precision)))
            before = _rss()
            _reset_peak_rss()
            start = time.perf_counter()
            result = evaluate(wh, "bench", ranker, ALL, "bench-eval", k=K, n_resamples=100)
            seconds = time.perf_counter() - start
            peak = _peak_rss()
            ndcg = next(r["value"] for r in result.metrics if r["metric"] == "ndcg@10" and r["src_lang"] == "en")
            ranked: dict[int, list[int]] = {}
            for query_id, doc_id in wh.query("SELECT query_id, doc_id FROM rankings WHERE eval_id = 'bench-eval'"
                                             " ORDER BY query_id, rank"):
                ranked.setdefault(query_id, []).append(doc_id)
            ids, vectors = ranker.document_vectors(wh, "de")
            query_vectors = ranker.encode([title for _, title, _ in queries])
        # brute force: each query's full score row (one matrix product per 256 queries, as the search before
        # blocks did for all of them), fully sorted by (-score, doc id). A BLAS that rounded a row differently
        # in another product shape could swap two documents closer than ROUNDING: such a ranking is counted
        # apart, as equal within rounding
        position = {int(page_id): row for row, page_id in enumerate(ids)}
        exact = within_rounding = 0
        worst = 0.0
        for start in range(0, len(queries), 256):
            for (query_id, _, _), row in zip(queries[start : start + 256], query_vectors[start : start + 256] @ vectors.T,
                                             strict=True):
                expected = ids[np.lexsort((ids, -row))[:K]]
                got = np.array([position[d] for d in ranked.get(query_id, [])], dtype=np.int64)
                if np.array_equal(ids[got], expected):
                    exact += 1
                    continue
                gap = float(np.abs(row[got] - row[[position[int(d)] for d in expected]]).max()) if len(got) == K else 1.0
                worst = max(worst, gap)
                within_rounding += gap <= ROUNDING
        return {"eval_docs": args.eval_docs, "eval_queries": args.eval_queries, "eval_seconds": round(seconds, 1),
                "eval_peak_rss_mb": round(peak / 2**20, 1), "eval_peak_above_start_mb": round((peak - before) / 2**20, 1),
                "eval_ndcg10": round(ndcg, 4), "eval_rankings_equal_brute_force": exact,
                "eval_rankings_equal_within_rounding": within_rounding,
                "eval_rankings_different": args.eval_queries - exact - within_rounding,
                "eval_max_score_gap_of_a_swap": worst}
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _child(args: argparse.Namespace, flag: str) -> dict[str, Any]:
    command = [sys.executable, __file__, flag] + [f"--{k.replace('_', '-')}={v}" for k, v in vars(args).items()
                                                  if k not in ("models", "search_child", "eval_child")]
    done = subprocess.run(command, stdout=subprocess.PIPE, check=True)
    return orjson.loads(done.stdout.splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", type=int, default=None, help="Documents encoded (default: 128 on a CPU, 4096 on a GPU).")
    parser.add_argument("--models", default="small,base", help="Model sizes: small (12 × 384), base (12 × 768).")
    parser.add_argument("--device", default=os.environ.get("BABELBENCH_DEVICE", "auto"))
    parser.add_argument("--precision", default="auto", help="auto: fp16 and fp32 on CUDA, fp32 elsewhere.")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--search-vectors", type=int, default=1_000_000)
    parser.add_argument("--search-queries", type=int, default=10_000)
    parser.add_argument("--search-dim", type=int, default=768)
    parser.add_argument("--ann-vectors", type=int, default=50_000)
    parser.add_argument("--ann-queries", type=int, default=1000)
    parser.add_argument("--eval-docs", type=int, default=0, help="Documents of the whole-evaluation check (0: skip).")
    parser.add_argument("--eval-queries", type=int, default=5000)
    parser.add_argument("--search-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--eval-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.search_child or args.eval_child:
        child: Callable[[argparse.Namespace], dict[str, Any]] = search_child if args.search_child else eval_child
        print(orjson.dumps(child(args)).decode())
        return
    args.models = [m for m in args.models.split(",") if m]
    placement = resolve(DeviceConfig(device=args.device, precision="fp32" if args.precision == "auto" else args.precision))
    if args.docs is None:
        args.docs = 4096 if placement.kind == "cuda" else 128
    say(f"device {placement.device}; models {args.models}")
    metrics: dict[str, Any] = {"device": placement.device}
    ratios: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="dense-encoding-") as work:
        if args.docs and args.models:
            found, ratios = encoding(args, placement, Path(work))
            metrics |= found
    if args.search_vectors and args.search_queries:
        metrics |= search(args)
    if args.ann_vectors:
        metrics |= approximate(args)
    if args.eval_docs:
        found = _child(args, "--eval-child")
        say(f"evaluation: {found}")
        metrics |= found
    emit("dense_encoding", metrics, ratios)


if __name__ == "__main__":
    main()
