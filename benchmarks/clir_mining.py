"""How fast the CLIR recipe indexes a language and mines its title queries, against bm25s and Lucene.

Mining is the recipe's hot loop (CLIRMatrix steps 4-5: every article title is
a query, top 100 by BM25, labels per query), run once per language and dump.
It is timed on the real code path, ``tasks.pairing.mining.mine_batch``
(search, normalise, Jenks labels, one Parquet shard per batch), inline and on
the Dask cluster the pipeline uses. The same corpus and queries then go
through two other BM25 engines, each plugged into that very ``mine_batch``
behind the index registry, so the label-and-write step is identical and the
ratios compare engines:

* ``bm25s`` (eager sparse BM25 in NumPy/Numba), the usual pure-Python choice,
  here with its own tokenizer and its Numba top-k (ours uses bm25s's scores
  too, with tantivy's analyzers and a sparse product per batch of queries);
* Lucene, as Anserini runs it (the fat jar inside the ``pyserini`` wheel,
  in-process through ``pyjnius``): what Elasticsearch and CLIRMatrix itself
  build on. Lucene's bare top-k collector is timed too, as a floor.

All three index the same pre-tokenised text (lowercase ASCII words separated
by single spaces: the embedded engine's tokenizer, Lucene's whitespace
analyzer and bm25s's regex split all cut it at the spaces), without stemming,
with BM25 k1 = 1.2, b = 0.3 (the CLIRMatrix setting, ``IndexConfig``'s
defaults) and the title boosted ×2, so their rankings can be compared:
``overlap_at_10_vs_lucene``.

The corpus is synthetic and deterministic (``--seed``): Zipfian pseudo-words,
short titles, bodies of at most 200 words that mention their title. Run:
``.venv/bin/python benchmarks/clir_mining.py``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import cache
from itertools import islice
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import orjson
import pyarrow.csv as pacsv

from _common import Timing, best_of, emit, per_second, say
from parse_throughput import compute_mode
from tasks import compute
from tasks.errors import ConfigError
from tasks.index import registry
from tasks.index.base import (
    MANIFEST_NAME, DocumentRow, Hit, IndexConfig, IndexInfo, check_k, checked_row, resolve_info,
)
from tasks.warehouse.atomic import atomic_write_text
from tasks.pairing.config import ClirConfig
from tasks.pairing.mining import QUERY_BATCH, QueryBatch, mine_batch
from tasks.plugins import register, unregister
from tasks.warehouse.lake import cell_dir

BENCHMARK = "clir_mining"
LANG = "en"
OURS = "tantivy"
FINGERPRINT = "benchmark-clir-mining"
CLIR = ClirConfig()
# Stemming off, so that every engine can apply the same analysis, and the
# pipeline's BM25 (k1 = 1.2, b = 0.3), which every engine applies; truncation stays on
# (the pipeline's default), and cuts nothing because no body is longer than
# the English limit (200 words).
INDEX_CONFIG = IndexConfig(stem=False)
MINING_TARGET_QPS = 2_000.0
INDEX_TARGET_DOCS_S = 50_000.0
PEER_THREADS = 2  # what the peers may use: the two cores the targets are set for
AGREEMENT_DEPTH = 10

# -- synthetic corpus ----------------------------------------------------------------------------
# Lowercase ASCII pseudo-words of at least two letters, so that every engine's
# tokenizer (tantivy's "simple", Lucene's whitespace, bm25s's default \w\w+)
# cuts the text into exactly the same words.
_SYLLABLES = tuple(consonant + vowel for consonant in "bcdfghklmnprstvz" for vowel in "aeiou")
VOCABULARY = 100_000
MAX_SYLLABLES = 4
ZIPF_EXPONENT = 1.07
TITLE_MIN_RANK = 300  # titles are content words, not the commonest ones
TITLE_LENGTHS = (1, 2, 2, 2, 3, 3, 4)  # words per title, drawn uniformly from this tuple
BODY_WORDS = (150, 200)  # inclusive; never above the English truncation limit of 200 words
TITLE_MENTIONS = (1, 3)  # times the body repeats each title word, inclusive


@dataclass(frozen=True)
class Corpus:
    """One language's articles, and the title queries (a sample of them, in page-id order)."""

    page_ids: list[int]
    titles: list[str]
    bodies: list[str]
    query_ids: list[int]
    queries: list[str]

    def rows(self) -> Iterator[DocumentRow]:
        return zip(self.page_ids, self.titles, self.bodies)


def make_vocabulary(size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` distinct pseudo-words, shortest first, so that the most frequent words are the shortest (as in prose)."""
    words: dict[str, None] = {}
    while len(words) < size:
        counts = rng.integers(1, MAX_SYLLABLES + 1, size=size).tolist()
        picks = rng.integers(0, len(_SYLLABLES), size=(size, MAX_SYLLABLES)).tolist()
        for count, row in zip(counts, picks):
            words.setdefault("".join(_SYLLABLES[i] for i in row[:count]), None)
    return np.array(sorted(list(words)[:size], key=len), dtype=object)


def _zipf_ranks(rng: np.random.Generator, count: int, lowest_rank: int = 1) -> np.ndarray:
    """``count`` 0-based vocabulary ranks with Zipf-like frequencies, from the 1-based ``lowest_rank`` down.

    Inverse transform of the continuous power law x^-s on [1, V + 1), floored
    to a rank: a close, fully vectorised stand-in for the discrete Zipf law.
    """
    power = 1.0 - ZIPF_EXPONENT
    top = (VOCABULARY + 1.0) ** power - 1.0
    floor = (lowest_rank ** power - 1.0) / top
    uniform = floor + (1.0 - floor) * rng.random(count)
    return np.minimum((1.0 + uniform * top) ** (1.0 / power), VOCABULARY).astype(np.int64) - 1


def _joined(vocabulary: np.ndarray, ranks: np.ndarray, lengths: np.ndarray) -> list[str]:
    ends = np.cumsum(lengths).tolist()
    return [" ".join(vocabulary[ranks[end - length:end]]) for end, length in zip(ends, lengths.tolist())]


def make_corpus(docs: int, queries: int, seed: int) -> Corpus:
    """A deterministic English-like corpus: Zipfian words, bodies that mention their own title words."""
    rng = np.random.default_rng(seed)
    vocabulary = make_vocabulary(VOCABULARY, rng)
    lengths = rng.integers(BODY_WORDS[0], BODY_WORDS[1] + 1, size=docs)
    words = _zipf_ranks(rng, int(lengths.sum()))
    title_lengths = rng.choice(TITLE_LENGTHS, size=docs)
    title_words = _zipf_ranks(rng, int(title_lengths.sum()), TITLE_MIN_RANK)
    # Each title word replaces 1-3 body words at random places (a place drawn twice keeps one mention).
    repeats = rng.integers(TITLE_MENTIONS[0], TITLE_MENTIONS[1] + 1, size=len(title_words))
    mentions = np.repeat(title_words, repeats)
    mention_doc = np.repeat(np.repeat(np.arange(docs), title_lengths), repeats)
    starts = np.cumsum(lengths) - lengths
    words[starts[mention_doc] + (rng.random(len(mentions)) * lengths[mention_doc]).astype(np.int64)] = mentions
    titles = _joined(vocabulary, title_words, title_lengths)
    bodies = _joined(vocabulary, words, lengths)
    page_ids = list(range(1, docs + 1))
    chosen = np.sort(rng.choice(docs, size=min(queries, docs), replace=False)).tolist()
    return Corpus(page_ids, titles, bodies, [page_ids[i] for i in chosen], [titles[i] for i in chosen])


# -- peers behind the index registry -------------------------------------------------------------
# Both implement tasks.index.base.SearchIndex, so mine_batch runs them exactly
# as it runs the embedded backend. An opened index is kept per process, as
# the embedded backend keeps its own (reloading a vocabulary per batch would
# not be free).
PEERS = ("bm25s", "lucene")
# "required" (as `make bench` sets it): a peer that cannot run fails the benchmark instead of
# leaving its ratios out, so a comparison is never silently missing from a full run.
PEERS_ENV = "BABELBENCH_BENCH_PEERS"
ANSERINI_JAR = "anserini-*-fatjar.jar"
DEFAULT_JAVA_HOME = Path("/usr/lib/jvm/java-17-openjdk-amd64")
JAVA_HEAP = "3g"
LUCENE_RAM_BUFFER_MB = 512  # Lucene's indexing buffer, shared by its indexing threads
LUCENE_ID_DIGITS = 9  # zero-padded ids, so Lucene's tie-break (id as text) orders like ours (id as number)


def anserini_jar() -> Path | None:
    """The Anserini fat jar shipped inside the installed ``pyserini`` wheel (found without importing pyserini)."""
    spec = importlib.util.find_spec("pyserini")
    if spec is None or spec.origin is None:
        return None
    jars = sorted((Path(spec.origin).parent / "resources" / "jars").glob(ANSERINI_JAR))
    return jars[-1] if jars else None


def peer_problem(name: str) -> str | None:
    """Why the peer ``name`` cannot run here, or None when it can."""
    if name == "bm25s":
        missing = [module for module in ("bm25s", "numba") if importlib.util.find_spec(module) is None]
        return f"not installed: {', '.join(missing)} (pip install -e '.[bench]')" if missing else None
    if importlib.util.find_spec("jnius") is None:
        return "pyjnius is not installed (pip install -e '.[bench]')"
    if anserini_jar() is None:
        return "no Anserini jar: install the pyserini wheel without its dependencies (pip install --no-deps pyserini==0.22.1)"
    if not os.environ.get("JAVA_HOME") and not DEFAULT_JAVA_HOME.is_dir() and shutil.which("java") is None:
        return "no Java runtime (Java 11+ needed; set JAVA_HOME)"
    return None


@cache
def java() -> SimpleNamespace:
    """Start the JVM (once per process: pyjnius cannot restart it) with the Anserini jar.

    Anserini logs at debug level to Java's standard output, which is this
    process's stdout, reserved for the JSON line: Java's output is sent to
    stderr (before logging starts, so its console appender picks that up) and
    only warnings are kept.
    """
    if not os.environ.get("JAVA_HOME") and DEFAULT_JAVA_HOME.is_dir():
        os.environ["JAVA_HOME"] = str(DEFAULT_JAVA_HOME)
    import jnius_config

    # One logging context for the whole JVM: called through JNI, log4j cannot
    # tell which class asks, and would otherwise set the level of another context.
    jnius_config.add_options(
        f"-Xmx{JAVA_HEAP}", "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.BasicContextSelector")
    jnius_config.set_classpath(str(anserini_jar()))
    from jnius import autoclass

    system = autoclass("java.lang.System")
    system.setOut(system.err)
    autoclass("org.apache.logging.log4j.core.config.Configurator").setRootLevel(
        autoclass("org.apache.logging.log4j.Level").WARN)
    return SimpleNamespace(
        IndexArgs=autoclass("io.anserini.index.IndexCollection$Args"),
        IndexCollection=autoclass("io.anserini.index.IndexCollection"),
        SearchArgs=autoclass("io.anserini.search.SearchCollection$Args"),
        SearchCollection=autoclass("io.anserini.search.SearchCollection"),
        CmdLineParser=autoclass("org.kohsuke.args4j.CmdLineParser"),
        BagOfWordsQueryGenerator=autoclass("io.anserini.search.query.BagOfWordsQueryGenerator"),
        WhitespaceAnalyzer=autoclass("org.apache.lucene.analysis.core.WhitespaceAnalyzer"),
        DirectoryReader=autoclass("org.apache.lucene.index.DirectoryReader"),
        FSDirectory=autoclass("org.apache.lucene.store.FSDirectory"),
        IndexSearcher=autoclass("org.apache.lucene.search.IndexSearcher"),
        BM25Similarity=autoclass("org.apache.lucene.search.similarities.BM25Similarity"),
        File=autoclass("java.io.File"),
        HashMap=autoclass("java.util.HashMap"),
        Float=autoclass("java.lang.Float"),
    )


def _fresh(path: Path) -> Path:
    """Peers write into a new directory; an existing one is an earlier run's and is the caller's to remove."""
    path = Path(path)
    if path.exists():
        raise ConfigError(f"{path} exists; benchmark indexes are built into fresh directories")
    path.mkdir(parents=True)
    return path


def _publish_info(backend: str, lang: str, path: Path, count: int, config: IndexConfig) -> IndexInfo:
    info = IndexInfo(backend=backend, lang=lang, path=path, doc_count=count, config=config,
                     bm25_k1=config.k1, bm25_b=config.b)
    atomic_write_text(path / MANIFEST_NAME, info.model_dump_json(indent=2))
    return info


class LuceneIndex:
    """Lucene 9 BM25 through Anserini: ``IndexCollection`` to index, ``SearchCollection`` to run queries.

    Documents are indexed pre-tokenised (whitespace analyzer) with title and
    body as separate fields, by ``threads`` indexing threads (Anserini gives
    each input file to one thread, so the input is written as that many JSON
    lines files). A batch of queries is one Anserini run on ``threads``
    threads, written as a TREC run file and read back: the hits cross from
    Java in one file instead of one JNI call per hit. Queries are Anserini's
    bag of words over ``title^boost`` and ``contents``, whose field scores
    add up (``most_fields``), scored by ``BM25Similarity(k1, b)``, with ties
    broken by id. Anserini rounds scores to four decimals before that
    tie-break, and reads each hit's id from Lucene's stored fields.
    """

    name = "lucene"
    RUN_COLUMNS = ("query", "q0", "doc_id", "rank", "score", "tag")

    def __init__(self, threads: int = PEER_THREADS) -> None:
        self.threads = threads
        self.java = java()

    def build(self, lang: str, docs: Iterable[DocumentRow], path: Path, config: IndexConfig) -> IndexInfo:
        path = _fresh(path)
        source = path / "input"
        source.mkdir()
        files = [open(source / f"part-{i}.jsonl", "wb") for i in range(self.threads)]
        count = 0
        try:
            for position, row in enumerate(docs):
                doc_id, title, text = checked_row(row, position, f"documents for the {lang} Lucene index")
                record = {"id": f"{doc_id:0{LUCENE_ID_DIGITS}d}", "title": title, "contents": text}
                files[position % self.threads].write(orjson.dumps(record) + b"\n")
                count += 1
        finally:
            for handle in files:
                handle.close()
        args = self.java.IndexArgs()
        self.java.CmdLineParser(args).parseArgument(
            "-collection", "JsonCollection", "-input", str(source), "-index", str(path / "lucene"),
            "-threads", str(self.threads), "-memorybuffer", str(LUCENE_RAM_BUFFER_MB),
            "-pretokenized", "-fields", "title", "-quiet",
        )
        indexed = self.java.IndexCollection(args).run().indexed.get()
        shutil.rmtree(source)
        if indexed != count:
            raise RuntimeError(f"Lucene indexed {indexed} of {count} documents at {path}")
        return _publish_info(self.name, lang, path, count, config)

    def search(self, index: IndexInfo | Path, lang: str, queries: Sequence[str], k: int, config: IndexConfig) -> list[list[Hit]]:
        info = resolve_info(index, self.name, lang, config)
        check_k(k)
        with tempfile.TemporaryDirectory(prefix="babelbench-lucene-run-") as tmp:
            topics, run = Path(tmp) / "topics.tsv", Path(tmp) / "run.trec"
            # Titles hold no tabs or line breaks, the topic file's separators.
            topics.write_text("".join(f"{position}\t{query}\n" for position, query in enumerate(queries)), encoding="utf-8")
            args = self.java.SearchArgs()
            self.java.CmdLineParser(args).parseArgument(
                "-index", str(info.path / "lucene"), "-topics", str(topics), "-topicreader", "TsvInt",
                "-output", str(run), "-hits", str(k), "-parallelism", str(self.threads), "-pretokenized",
                "-bm25", "-bm25.k1", str(config.k1), "-bm25.b", str(config.b),
                "-fields", f"title={config.title_boost}", "contents=1.0",
            )
            searcher = self.java.SearchCollection(args)
            try:
                searcher.runTopics()
            finally:
                searcher.close()
            table = pacsv.read_csv(run, read_options=pacsv.ReadOptions(column_names=self.RUN_COLUMNS),
                                   parse_options=pacsv.ParseOptions(delimiter=" "))
        return _grouped_hits(table["query"].to_numpy(), table["doc_id"].to_numpy(), table["score"].to_numpy(), len(queries))

    def drop(self, index: IndexInfo | Path) -> None:
        shutil.rmtree(index.path if isinstance(index, IndexInfo) else Path(index), ignore_errors=True)


def _grouped_hits(query: np.ndarray, doc_id: np.ndarray, score: np.ndarray, queries: int) -> list[list[Hit]]:
    """Hits listed query by query (in rank order within each query) as one list per query position."""
    order = np.argsort(query, kind="stable")
    bounds = np.searchsorted(query[order], np.arange(queries + 1))
    doc_ids, scores = doc_id[order].tolist(), score[order].astype(np.float64).tolist()
    return [list(zip(doc_ids[start:end], scores[start:end])) for start, end in zip(bounds[:-1], bounds[1:])]


def lucene_collect(index: IndexInfo, queries: Sequence[str], k: int, config: IndexConfig) -> int:
    """Lucene's own top-``k`` collection for each query, on one thread, hits left in Java.

    The same query objects as the Anserini run (its bag-of-words generator
    over the boosted fields), but ``IndexSearcher.search(query, k)``: Lucene's
    default collector, which skips documents that cannot enter the top k, and
    no tie-break, id lookup or run file. A floor for what any Lucene-based
    miner pays per query; returns the number of queries run.
    """
    jvm = java()
    reader = jvm.DirectoryReader.open(jvm.FSDirectory.open(jvm.File(str(index.path / "lucene")).toPath()))
    try:
        searcher = jvm.IndexSearcher(reader, signature="(Lorg/apache/lucene/index/IndexReader;)V")
        searcher.setSimilarity(jvm.BM25Similarity(config.k1, config.b))
        generator, analyzer, fields = jvm.BagOfWordsQueryGenerator(), jvm.WhitespaceAnalyzer(), jvm.HashMap()
        fields.put("title", jvm.Float(config.title_boost))
        fields.put("contents", jvm.Float(1.0))
        for query in queries:
            searcher.search(generator.buildQuery(fields, analyzer, query), k)
    finally:
        reader.close()
    return len(queries)


class Bm25sIndex:
    """bm25s with its Numba backend, two fields made into one index.

    bm25s scores one text field. Title and body are therefore indexed as two
    bm25s models (each with its own document lengths and idf, as in Lucene),
    and their precomputed score matrices are stacked into one model whose
    vocabulary is ``title:<word>`` and ``body:<word>``. A query lists each of
    its words ``title_boost`` times as a title term and once as a body term,
    and bm25s's own retrieval adds the scores up: exactly the boosted
    ``most_fields`` sum of the other engines. Ties at the cut are broken as
    bm25s's top-k selection leaves them.
    """

    name = "bm25s"
    MODEL_DIR = "bm25s"
    IDS_FILE = "doc_ids.npy"

    def __init__(self, threads: int = PEER_THREADS) -> None:
        self.threads = threads

    def build(self, lang: str, docs: Iterable[DocumentRow], path: Path, config: IndexConfig) -> IndexInfo:
        import bm25s

        path = _fresh(path)
        rows = [checked_row(row, position, f"documents for the {lang} bm25s index") for position, row in enumerate(docs)]
        fields = {}
        for field, column in (("title", 1), ("body", 2)):
            tokens = bm25s.tokenize([row[column] for row in rows], stopwords=None, show_progress=False)
            model = bm25s.BM25(k1=config.k1, b=config.b, method="lucene")
            model.index(tokens, create_empty_token=False, show_progress=False)
            fields[field] = model
        stacked = self._stack(bm25s.BM25(k1=config.k1, b=config.b, method="lucene", backend="numba"), fields)
        stacked.save(path / self.MODEL_DIR, show_progress=False)
        np.save(path / self.IDS_FILE, np.array([row[0] for row in rows], dtype=np.int64))
        return _publish_info(self.name, lang, path, len(rows), config)

    @staticmethod
    def _stack(target: Any, fields: dict[str, Any]) -> Any:
        data, indices, indptr, vocabulary = [], [], [np.zeros(1, dtype=np.int64)], {}
        for field, model in fields.items():
            offset_terms, offset_postings = len(vocabulary), int(indptr[-1][-1])
            data.append(model.scores["data"])
            indices.append(model.scores["indices"])
            indptr.append(model.scores["indptr"][1:].astype(np.int64) + offset_postings)
            vocabulary.update({f"{field}:{word}": offset_terms + column for word, column in model.vocab_dict.items()})
        target.scores = {"data": np.concatenate(data), "indices": np.concatenate(indices),
                         "indptr": np.concatenate(indptr), "num_docs": fields["title"].scores["num_docs"]}
        target.vocab_dict = vocabulary
        target.unique_token_ids_set = set(vocabulary.values())
        target.nonoccurrence_array = None
        return target

    def search(self, index: IndexInfo | Path, lang: str, queries: Sequence[str], k: int, config: IndexConfig) -> list[list[Hit]]:
        info = resolve_info(index, self.name, lang, config)
        check_k(k)
        boost = int(config.title_boost)
        if boost != config.title_boost:
            raise ConfigError(
                f"the bm25s adapter repeats title terms to boost them, so title_boost must be whole, got {config.title_boost}")
        model, doc_ids = _bm25s_model(str(info.path))
        term_ids = []
        for query in queries:
            words = query.lower().split()
            terms = [f"title:{word}" for word in words] * boost + [f"body:{word}" for word in words]
            term_ids.append([model.vocab_dict[term] for term in terms if term in model.vocab_dict])
        asked = [position for position, ids in enumerate(term_ids) if ids]
        results: list[list[Hit]] = [[] for _ in queries]
        if asked:
            found = model.retrieve([term_ids[position] for position in asked], k=min(k, len(doc_ids)),
                                   n_threads=self.threads, show_progress=False)
            for position, columns, scores in zip(asked, found.documents, found.scores):
                matched = scores > 0  # bm25s fills a short top k with documents that match no word
                hits = zip(doc_ids[columns[matched]].tolist(), scores[matched].astype(np.float64).tolist())
                results[position] = sorted(hits, key=lambda hit: (-hit[1], hit[0]))
        return results

    def drop(self, index: IndexInfo | Path) -> None:
        shutil.rmtree(index.path if isinstance(index, IndexInfo) else Path(index), ignore_errors=True)


@cache
def _bm25s_model(path: str) -> tuple[Any, np.ndarray]:
    import bm25s

    return bm25s.BM25.load(Path(path) / Bm25sIndex.MODEL_DIR, mmap=True), np.load(Path(path) / Bm25sIndex.IDS_FILE)


@contextmanager
def peers_registered() -> Iterator[None]:
    """Make the peers reachable by name through ``get_backend`` (in this process only), as mine_batch looks them up."""
    added = {"bm25s": Bm25sIndex, "lucene": LuceneIndex}
    for name, backend in added.items():
        register(registry.INDEX_BACKENDS.name, name)(backend)
    try:
        yield
    finally:
        for name in added:
            unregister(registry.INDEX_BACKENDS.name, name)


# -- what is timed -------------------------------------------------------------------------------
WARMUP_QUERIES = 200  # untimed, before each engine's first timed search: JIT compilers (JVM, Numba) and page cache
WARMUP_BATCHES = 4  # as many as tasks.compute's local cluster has workers at most
# untimed, before each engine's first timed build: the first build in a process pays its imports and compilers
# (Arrow's kernels, the JVM's JIT, Numba), not a cost per document
WARMUP_DOCS = 2_000


@dataclass(frozen=True)
class Rate:
    """One variant's best wall-clock time over a known number of documents or queries."""

    seconds: float
    items: int

    @property
    def per_s(self) -> float:
        return per_second(self.items, self.seconds)


def timed(label: str, repeat: int, items: int, unit: str, run: Callable[[], Any], *,
          prepare: Callable[[], None] | None = None) -> tuple[Rate, Timing[Any]]:
    """Best-of-``repeat`` rate of ``run`` over ``items`` documents or queries."""
    timing = best_of(label, repeat, run, prepare=prepare)
    rate = Rate(timing.seconds, items)
    say(f"  {label}: best {timing.seconds:.2f} s = {rate.per_s:,.0f} {unit}/s")
    return rate, timing


def emptied(folder: Path) -> Callable[[], None]:
    """Untimed set-up: an empty ``folder`` (the previous run's index or shards removed)."""
    def reset() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    return reset


def build(label: str, backend: Any, corpus: Corpus, folder: Path, config: IndexConfig, repeat: int) -> tuple[Rate, IndexInfo]:
    """Index the corpus ``repeat`` times into a fresh folder, after an untimed build of its first documents; the last
    index stays for searching."""
    backend.drop(backend.build(LANG, islice(corpus.rows(), WARMUP_DOCS), folder / "warm-up", config))
    rate, timing = timed(f"{label} index", repeat, len(corpus.page_ids), "docs",
                         lambda: backend.build(LANG, corpus.rows(), folder / "index", config), prepare=emptied(folder))
    return rate, timing.result


def search(label: str, backend: Any, info: IndexInfo, corpus: Corpus, repeat: int) -> tuple[Rate, list[list[Hit]]]:
    """Retrieval only: every query's top k in one ``search`` call, after an untimed warm-up."""
    backend.search(info.path, LANG, corpus.queries[:WARMUP_QUERIES], CLIR.top_k, INDEX_CONFIG)
    rate, timing = timed(f"{label} search", repeat, len(corpus.queries), "queries",
                         lambda: backend.search(info.path, LANG, corpus.queries, CLIR.top_k, INDEX_CONFIG))
    return rate, timing.result


def query_batches(corpus: Corpus, backend: str, index: Path) -> list[QueryBatch]:
    """The title queries cut into the batches ``mine_language`` hands to workers."""
    return [
        QueryBatch(start // QUERY_BATCH, LANG, backend, str(index), tuple(corpus.query_ids[start:start + QUERY_BATCH]),
                   tuple(corpus.queries[start:start + QUERY_BATCH]))
        for start in range(0, len(corpus.queries), QUERY_BATCH)
    ]


def mine(batches: Sequence[QueryBatch], lake_root: Path) -> int:
    """What ``mine_language`` does between reading the titles and registering shards; returns the hit rows written."""
    directory = cell_dir(lake_root, "retrieval_hits", LANG, FINGERPRINT)
    shard_lists = compute.map_parallel(mine_batch, batches, index_config=INDEX_CONFIG, clir=CLIR, lake_root=lake_root,
                                       directory=directory, fingerprint=FINGERPRINT)
    return sum(shard.rows for shards in shard_lists for shard in shards)


def warm_up_batches(batches: Sequence[QueryBatch]) -> list[QueryBatch]:
    """A few tiny batches, enough to give every worker one: imports and first-call costs are paid before timing."""
    first, size = batches[0], max(1, WARMUP_QUERIES // WARMUP_BATCHES)
    return [replace(first, index=part, page_ids=first.page_ids[part * size:(part + 1) * size],
                    titles=first.titles[part * size:(part + 1) * size]) for part in range(WARMUP_BATCHES)]


def bench_mining(label: str, batches: Sequence[QueryBatch], lake_root: Path, queries: int, repeat: int) -> tuple[Rate, int]:
    mine(warm_up_batches(batches), lake_root)
    rate, timing = timed(f"{label} mining", repeat, queries, "queries", lambda: mine(batches, lake_root),
                         prepare=emptied(lake_root))
    return rate, timing.result


def overlap_at(depth: int, ours: Sequence[list[Hit]], reference: Sequence[list[Hit]]) -> float | None:
    """Mean share of each query's top ``depth`` documents that both rankings hold (1.0: the same sets)."""
    shares = []
    for mine_hits, their_hits in zip(ours, reference, strict=True):
        a, b = {doc for doc, _ in mine_hits[:depth]}, {doc for doc, _ in their_hits[:depth]}
        size = max(len(a), len(b))
        shares.append(len(a & b) / size if size else 1.0)
    return round(float(np.mean(shares)), 4) if shares else None


# -- the run -------------------------------------------------------------------------------------
@dataclass
class Results:
    """Rates by variant name, and the other numbers of the JSON line."""

    rates: dict[str, Rate]
    metrics: dict[str, Any]
    hits: dict[str, list[list[Hit]]]


def bench_ours(corpus: Corpus, workdir: Path, repeat: int, results: Results) -> None:
    backend = registry.get_backend(OURS)
    say(f"{OURS}: index, search, mine")
    results.rates["index"], info = build(f"{OURS}", backend, corpus, workdir / "indexes" / OURS, INDEX_CONFIG, repeat)
    untruncated = INDEX_CONFIG.model_copy(update={"truncate": False})
    results.rates["index_no_truncate"], plain = build(f"{OURS} (truncation off)", backend, corpus,
                                                      workdir / "indexes" / f"{OURS}-no-truncate", untruncated, repeat)
    backend.drop(plain)
    results.rates["search_inline"], results.hits[OURS] = search(f"{OURS} (in-process)", backend, info, corpus, repeat)
    batches = query_batches(corpus, OURS, info.path)
    lake_root = workdir / "lake"
    with compute_mode("inline"):
        results.rates["mining_inline"], rows = bench_mining(f"{OURS} inline", batches, lake_root, len(corpus.queries), repeat)
    with compute_mode("dask"):
        started = time.perf_counter()
        compute.map_parallel(abs, [0])  # start the shared cluster outside the timing: a flow pays this once
        results.metrics["dask_startup_s"] = round(time.perf_counter() - started, 3)
        say(f"  dask local cluster ready in {results.metrics['dask_startup_s']:.1f} s")
        try:
            results.rates["mining"], _ = bench_mining(f"{OURS} dask", batches, lake_root, len(corpus.queries), repeat)
        finally:
            compute.shutdown()  # frees two worker processes' memory before the peers run
    results.metrics["mining_rows"] = rows
    shutil.rmtree(lake_root, ignore_errors=True)


def bench_peer(name: str, corpus: Corpus, workdir: Path, repeat: int, results: Results) -> None:
    problem = peer_problem(name)
    if problem:
        say(f"{name}: skipped, {problem}")
        return
    say(f"{name}: index, search, mine ({PEER_THREADS} threads)")
    with peers_registered():
        backend = registry.get_backend(name)
        results.rates[f"{name}_index"], info = build(name, backend, corpus, workdir / "indexes" / name, INDEX_CONFIG, repeat)
        results.rates[f"{name}_search"], results.hits[name] = search(name, backend, info, corpus, repeat)
        if name == "lucene":
            results.rates["lucene_collect_only"], _ = timed(
                "lucene collector only (1 thread)", repeat, len(corpus.queries), "queries",
                lambda: lucene_collect(info, corpus.queries, CLIR.top_k, INDEX_CONFIG))
        lake_root = workdir / "lake"
        with compute_mode("inline"):
            results.rates[f"{name}_mining"], _ = bench_mining(name, query_batches(corpus, name, info.path), lake_root,
                                                              len(corpus.queries), repeat)
        shutil.rmtree(lake_root, ignore_errors=True)
        backend.drop(info)


# Each rate's key in the JSON line (the best time is "<prefix>_s", the rate "<prefix>_<unit>") and its label.
RATE_NAMES: dict[str, tuple[str, str, str]] = {
    "index": ("index", "docs_per_s", f"{OURS} index (truncation on)"),
    "index_no_truncate": ("index_no_truncate", "docs_per_s", f"{OURS} index (truncation off)"),
    "search_inline": ("search_inline", "qps", f"{OURS} search, in-process"),
    "mining_inline": ("mining_inline", "qps", f"{OURS} mine_batch, inline"),
    "mining": ("mining", "qps", f"{OURS} mine_batch, Dask"),
    "lucene_index": ("lucene_index", "docs_per_s", f"lucene index ({PEER_THREADS} threads)"),
    "lucene_search": ("lucene_search", "qps", f"lucene search ({PEER_THREADS} threads)"),
    "lucene_collect_only": ("lucene_collect_only", "qps", "lucene collector only, 1 thread"),
    "lucene_mining": ("lucene_mining", "qps", "lucene mine_batch, inline"),
    "bm25s_index": ("bm25s_index", "docs_per_s", "bm25s index"),
    "bm25s_search": ("bm25s_search", "qps", f"bm25s search ({PEER_THREADS} threads)"),
    "bm25s_mining": ("bm25s_mining", "qps", "bm25s mine_batch, inline"),
}


def ratio(rates: dict[str, Rate], numerator: str, denominator: str) -> float | None:
    if numerator not in rates or denominator not in rates:
        return None
    return round(rates[numerator].per_s / rates[denominator].per_s, 4)


def summarise(results: Results) -> tuple[dict[str, Any], dict[str, float | None]]:
    rates = results.rates
    metrics = dict(results.metrics)
    for key, rate in rates.items():
        prefix, unit, _ = RATE_NAMES[key]
        metrics[f"{prefix}_s"] = round(rate.seconds, 3)
        metrics[f"{prefix}_{unit}"] = round(rate.per_s, 1)
    metrics["mining_target_qps"] = MINING_TARGET_QPS
    metrics["index_target_docs_per_s"] = INDEX_TARGET_DOCS_S
    metrics["mining_target_met"] = rates["mining"].per_s >= MINING_TARGET_QPS
    metrics["index_target_met"] = rates["index"].per_s >= INDEX_TARGET_DOCS_S
    metrics["mining_comparison"] = "mine_batch end to end (search top-k, normalise, Jenks labels, Parquet shard) for every engine"
    lucene_hits = results.hits.get("lucene")
    overlap = overlap_at(AGREEMENT_DEPTH, results.hits[OURS], lucene_hits) if lucene_hits else None
    if lucene_hits:
        metrics["overlap_at_100_vs_lucene"] = overlap_at(CLIR.top_k, results.hits[OURS], lucene_hits)
        if "bm25s" in results.hits:
            metrics["bm25s_overlap_at_10_vs_lucene"] = overlap_at(AGREEMENT_DEPTH, results.hits["bm25s"], lucene_hits)
    ratios = {
        "vs_lucene": ratio(rates, "mining", "lucene_mining"),
        "vs_bm25s": ratio(rates, "mining", "bm25s_mining"),
        "inline_vs_lucene": ratio(rates, "mining_inline", "lucene_mining"),
        "inline_vs_bm25s": ratio(rates, "mining_inline", "bm25s_mining"),
        "search_vs_lucene": ratio(rates, "search_inline", "lucene_search"),
        "search_vs_bm25s": ratio(rates, "search_inline", "bm25s_search"),
        "search_vs_lucene_collector": ratio(rates, "search_inline", "lucene_collect_only"),
        "index_vs_lucene": ratio(rates, "index", "lucene_index"),
        "index_vs_bm25s": ratio(rates, "index", "bm25s_index"),
        "index_no_truncate_vs_lucene": ratio(rates, "index_no_truncate", "lucene_index"),
        "mining_dask_vs_inline": ratio(rates, "mining", "mining_inline"),
        "overlap_at_10_vs_lucene": overlap,
    }
    return metrics, ratios


def print_table(results: Results) -> None:
    say("")
    say(f"{'variant':<36} {'best s':>8} {'rate':>14}")
    for key, (_, unit, label) in RATE_NAMES.items():
        if key in results.rates:
            rate = results.rates[key]
            say(f"{label:<36} {rate.seconds:>8.2f} {rate.per_s:>9,.0f} {'docs/s' if unit == 'docs_per_s' else 'q/s'}")
    for key, target, unit in (("mining", MINING_TARGET_QPS, "queries/s"), ("index", INDEX_TARGET_DOCS_S, "documents/s")):
        achieved = results.rates[key].per_s
        verdict = "met" if achieved >= target else "MISSED"
        say(f"target {key} >= {target:,.0f} {unit} on 2 cores: {achieved:,.0f} -> {verdict}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=100_000, help="documents in the synthetic corpus")
    parser.add_argument("--queries", type=int, default=16_000, help="title queries (a sample of the documents' titles)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per variant; the fastest counts")
    parser.add_argument("--seed", type=int, default=20240601, help="seed of the synthetic corpus")
    args = parser.parse_args(argv)
    if args.docs < CLIR.top_k or args.queries < 1 or args.repeat < 1:
        parser.error(f"--docs must be at least {CLIR.top_k} (the top k), --queries and --repeat at least 1")

    if os.environ.get(PEERS_ENV) == "required":  # checked first: a run takes minutes before the peers' turn
        problems = [f"{name}: {problem}" for name in PEERS if (problem := peer_problem(name))]
        if problems:
            raise SystemExit(f"peers required ({PEERS_ENV}=required) but cannot run: " + "; ".join(problems))
    started = time.perf_counter()
    say(f"corpus: {args.docs:,} documents, {args.queries:,} title queries (seed {args.seed}) ...")
    corpus = make_corpus(args.docs, args.queries, args.seed)
    corpus_s = time.perf_counter() - started
    say(f"  made in {corpus_s:.1f} s")
    results = Results(rates={}, hits={}, metrics={
        "docs": args.docs, "queries": len(corpus.queries), "repeat": args.repeat, "seed": args.seed,
        "cpu_count": os.cpu_count(), "top_k": CLIR.top_k, "query_batch": QUERY_BATCH, "peer_threads": PEER_THREADS,
        "bm25_k1": INDEX_CONFIG.k1, "bm25_b": INDEX_CONFIG.b, "title_boost": INDEX_CONFIG.title_boost,
        "corpus_s": round(corpus_s, 1),
    })
    with tempfile.TemporaryDirectory(prefix="babelbench-clir-") as tmp:
        workdir = Path(tmp)
        bench_ours(corpus, workdir, args.repeat, results)
        for name in PEERS:
            bench_peer(name, corpus, workdir, args.repeat, results)
    metrics, ratios = summarise(results)
    metrics["total_s"] = round(time.perf_counter() - started, 1)
    print_table(results)
    say(f"done in {metrics['total_s']:.0f} s; ratios: " + ", ".join(f"{k} = {v}" for k, v in ratios.items()))
    emit(BENCHMARK, metrics, ratios)


if __name__ == "__main__":
    main()
