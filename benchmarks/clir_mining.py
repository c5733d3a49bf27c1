"""How fast the CLIR recipe indexes a language and mines its title queries, against bm25s and Lucene.

Mining is the recipe's hot loop (CLIRMatrix step 4-5: every article title is
a query, top 100 by BM25, labels per query), run once per language and dump.
It is timed on the real code path, ``tasks.pairing.mining.mine_batch``
(search, normalise, Jenks labels, one Parquet shard per batch), inline and on
the Dask cluster the pipeline uses. The same corpus and queries then go
through two other BM25 engines, each plugged into that very ``mine_batch``
behind the index registry, so the label-and-write step is identical and the
ratios compare engines:

* ``bm25s`` (eager sparse BM25 in NumPy/Numba), the usual pure-Python choice;
* Lucene (Anserini's fat jar from the ``pyserini`` wheel, in-process through
  ``pyjnius``), what Elasticsearch and CLIRMatrix itself run on.

All three index the same pre-tokenised text (lowercase ASCII words separated
by single spaces: the embedded engine's tokenizer, Lucene's whitespace
analyzer and bm25s's regex split all cut it at the spaces), without stemming,
with BM25 k1 = 1.2, b = 0.75 (the embedded engine's fixed values) and the
title boosted ×2, so their rankings can be compared: ``overlap_at_10_vs_lucene``.

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
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import orjson

from _common import Timing, best_of, emit, per_second, say
from parse_throughput import compute_mode
from tasks import compute
from tasks.errors import ConfigError
from tasks.index import registry
from tasks.index.base import (
    MANIFEST_NAME, DocumentRow, Hit, IndexConfig, IndexInfo, check_k, checked_row, resolve_info, write_text_atomic,
)
from tasks.index.embedded import TANTIVY_B, TANTIVY_K1
from tasks.pairing.config import ClirConfig
from tasks.pairing.mining import QUERY_BATCH, QueryBatch, mine_batch
from tasks.warehouse.lake import cell_dir

BENCHMARK = "clir_mining"
LANG = "en"
OURS = "tantivy"
FINGERPRINT = "benchmark-clir-mining"
CLIR = ClirConfig()
# Stemming off and k1/b at the embedded engine's fixed values, so that every
# engine can apply the same analysis and the same BM25; truncation stays on
# (the pipeline's default), and cuts nothing because no body is longer than
# the English limit (200 words).
INDEX_CONFIG = IndexConfig(k1=TANTIVY_K1, b=TANTIVY_B, stem=False)
MINING_TARGET_QPS = 2_000.0
INDEX_TARGET_DOCS_S = 50_000.0
PEER_THREADS = 2  # what the peers may use: the two cores the targets are set for
AGREEMENT_DEPTH = 10

# -- synthetic corpus ----------------------------------------------------------------------------
# Lowercase ASCII pseudo-words of at least two letters, so that every engine's
# tokenizer (tantivy's "simple", Lucene's whitespace, bm25s's default \w\w+)
# cuts the text into exactly the same words.
_CONSONANTS = np.array(list("bcdfghklmnprstvz"))
_VOWELS = np.array(list("aeiou"))
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
    syllables = [consonant + vowel for consonant in _CONSONANTS for vowel in _VOWELS]
    words: dict[str, None] = {}
    while len(words) < size:
        counts = rng.integers(1, MAX_SYLLABLES + 1, size=size).tolist()
        picks = rng.integers(0, len(syllables), size=(size, MAX_SYLLABLES)).tolist()
        for count, row in zip(counts, picks):
            words.setdefault("".join(syllables[i] for i in row[:count]), None)
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
# as it runs the embedded backend. An opened index is kept per process (the
# embedded backend reopens its memory-mapped index per batch, which costs it
# nothing; reloading bm25s's vocabulary per batch would not be free).
PEERS = ("bm25s", "lucene")
ANSERINI_JAR = "anserini-*-fatjar.jar"
DEFAULT_JAVA_HOME = Path("/usr/lib/jvm/java-17-openjdk-amd64")
JAVA_HEAP = "3g"
LUCENE_RAM_BUFFER_MB = 512  # the embedded writer's budget (TantivyIndex.heap_bytes)
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
        return f"not installed: {', '.join(missing)} (pip install bm25s numba)" if missing else None
    if importlib.util.find_spec("jnius") is None:
        return "pyjnius is not installed (pip install pyjnius)"
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
        CmdLineParser=autoclass("org.kohsuke.args4j.CmdLineParser"),
        SimpleSearcher=autoclass("io.anserini.search.SimpleSearcher"),
        WhitespaceAnalyzer=autoclass("org.apache.lucene.analysis.core.WhitespaceAnalyzer"),
        ArrayList=autoclass("java.util.ArrayList"),
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
    write_text_atomic(path / MANIFEST_NAME, info.model_dump_json(indent=2))
    return info


class LuceneIndex:
    """Lucene 9 BM25 through Anserini: ``IndexCollection`` over JSON lines, ``SimpleSearcher.batch_search_fields``.

    Documents are indexed pre-tokenised (whitespace analyzer) with title and
    body as separate fields, by ``threads`` indexing threads (Anserini gives
    each input file to one thread, so the input is written as that many
    files). Queries are Anserini's bag of words over ``title^boost`` and
    ``contents``, whose field scores add up (``most_fields``), scored by
    ``BM25Similarity(k1, b)`` and tied by id. Anserini rounds scores to four
    decimals before its tie-break.
    """

    name = "lucene"

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
        searcher = _lucene_searcher(str(info.path / "lucene"), config.k1, config.b)
        texts, ids = self.java.ArrayList(), self.java.ArrayList()
        for position, query in enumerate(queries):
            texts.add(query)
            ids.add(str(position))
        fields = self.java.HashMap()
        fields.put("title", self.java.Float(config.title_boost))
        fields.put("contents", self.java.Float(1.0))
        found = searcher.batch_search_fields(texts, ids, k, self.threads, fields)
        return [[(int(hit.docid), float(hit.score)) for hit in found.get(str(position))] for position in range(len(queries))]

    def drop(self, index: IndexInfo | Path) -> None:
        shutil.rmtree(index.path if isinstance(index, IndexInfo) else Path(index), ignore_errors=True)


@cache
def _lucene_searcher(path: str, k1: float, b: float) -> Any:
    searcher = java().SimpleSearcher(path, java().WhitespaceAnalyzer())
    searcher.set_bm25(k1, b)
    return searcher


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
            raise ConfigError(f"the bm25s adapter repeats title terms to boost them, so title_boost must be whole, got {config.title_boost}")
        model, doc_ids = _bm25s_model(str(info.path))
        terms = [[f"title:{word}" for word in query.lower().split()] * boost + [f"body:{word}" for word in query.lower().split()]
                 for query in queries]
        term_ids = [[model.vocab_dict[term] for term in query if term in model.vocab_dict] for query in terms]
        asked = [position for position, ids in enumerate(term_ids) if ids]
        results: list[list[Hit]] = [[] for _ in queries]
        if asked:
            found = model.retrieve([term_ids[position] for position in asked], k=min(k, len(doc_ids)),
                                   n_threads=self.threads, show_progress=False)
            for position, columns, scores in zip(asked, found.documents, found.scores):
                hits = [(int(doc_ids[column]), float(score)) for column, score in zip(columns, scores) if score > 0]
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
    added = {"bm25s": f"{__name__}:Bm25sIndex", "lucene": f"{__name__}:LuceneIndex"}
    registry.BACKENDS.update(added)
    try:
        yield
    finally:
        for name in added:
            registry.BACKENDS.pop(name, None)
