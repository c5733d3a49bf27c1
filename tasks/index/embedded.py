"""The embedded BM25 index: Lucene's BM25 at the config's k1 and b, in a directory on disk.

tantivy's own scoring cannot apply the config: its BM25 has k1 = 1.2 and
b = 0.75 fixed in the library (constants in ``tantivy/src/query/bm25.rs``,
also baked into its block-max postings), and its Python binding exposes no
term frequencies to rescore with. So tantivy only analyses here (the
language's tokenizer, lowercase and stemmer, in Rust, as
``tasks/index/analysis.py`` plans them), and the scores are bm25s's
(``method="lucene"``, computed here by array operations, saved in its format). Every word w of a field gets, in every document d that has it,

    idf(w) · tf / (tf + k1 · (1 − b + b · dl / avgdl)),   idf(w) = ln(1 + (N − n + 0.5) / (n + 0.5))

with N, n and avgdl counted per field over the documents that have a word
in that field: Lucene's formula and statistics, which Elasticsearch applies,
so both backends score on one scale (no classic ``(k1 + 1)`` factor). One
difference remains: Lucene stores a field's length in one byte (exact up to
40 words, rounded down by up to 11% above), bm25s keeps it exact.

These scores are precomputed when the index is built, one (word ×
document) matrix for the title and one for the body, so k1 and b are fixed
per index, as an Elasticsearch similarity is. A batch of queries is scored
by sparse products (scipy): each query's words, title words weighted by the
boost and a repeated word counted per occurrence, times each field's
matrix, summed. That is the boolean OR of every word against the boosted
title and the body that Elasticsearch's ``most_fields`` computes, and no
query is parsed as query syntax: titles such as ``C++ (language)``, ``AND``
or ``"Weird" Al`` are just words. A query costs in proportion to the
documents its words occur in; the size of the collection costs one pass per
chunk of up to ``SEARCH_CHUNK`` queries.

A build keeps every document's word ids in memory until the field is scored
(4 bytes a word; at the peak about 3 KB per document of 200 words, besides the documents
themselves; the index takes about 1 KB per such document on disk). It is
published atomically: the index is written to a fresh hidden directory
beside ``path`` and ``path`` is a symlink switched to it with one rename, so
a reader always sees a complete index, old or new. The hidden directory
carries its writer's marker until it is published, so the next build in the
same folder deletes what a killed build left half written.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import uuid
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from pathlib import Path

import bm25s
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import tantivy
from scipy.sparse import csr_array
from tqdm import tqdm

from tasks.compute import thread_budget
from tasks.errors import ConfigError
from tasks.index.analysis import WORD_PATTERN, AnalysisPlan, plan_for, prepare_document, prepare_query
from tasks.index.base import (
    MANIFEST_NAME,
    DocumentRow,
    Hit,
    IndexConfig,
    IndexInfo,
    check_k,
    checked_row,
    read_info,
    resolve_info,
)
from tasks.warehouse import writers
from tasks.warehouse.atomic import atomic_write_text

logger = logging.getLogger(__name__)
# bm25s sets its own logger to DEBUG when imported, which would print its notes through
# whatever handlers the application has; let the application's levels decide again.
logging.getLogger("bm25s").setLevel(logging.NOTSET)

TITLE, BODY = "title", "body"
FIELDS = (TITLE, BODY)
DOC_IDS_FILE = "doc_ids.npy"
# A chunk of queries is scored by one sparse product per field, whose result holds one
# entry per matching (query, document). A chunk stops at SEARCH_CHUNK queries or once its
# words' postings (a bound on those entries) pass CHUNK_POSTINGS, about 32 MB of result.
SEARCH_CHUNK = 256
CHUNK_POSTINGS = 1 << 22
# Documents analysed together by a build: Arrow splits and deduplicates their pieces of text at once.
INDEX_BLOCK = 16_384
# Opened indexes kept per process: loading one parses its vocabularies.
OPEN_INDEXES = 8
_INT32_MAX = np.iinfo(np.int32).max

_TOKENIZERS = {
    "simple": tantivy.Tokenizer.simple,
    "word_regex": lambda: tantivy.Tokenizer.regex(WORD_PATTERN),
    "whitespace": tantivy.Tokenizer.whitespace,
}


def text_analyzer(plan: AnalysisPlan) -> tantivy.TextAnalyzer:
    """The analyzer of an index: the plan's tokenizer, lowercase, then the stemmer if any."""
    builder = tantivy.TextAnalyzerBuilder(_TOKENIZERS[plan.tantivy_tokenizer]()).filter(tantivy.Filter.lowercase())
    if plan.tantivy_stemmer:
        builder = builder.filter(tantivy.Filter.stemmer(plan.tantivy_stemmer))
    return builder.build()


class _Vocabulary(dict[str, int]):
    """Word -> column of a field's score matrix; a new word gets the next column."""

    def __missing__(self, word: str) -> int:
        column = self[word] = len(self)
        return column


@dataclass
class _Pieces:
    """A field's distinct space-separated pieces of text, each analysed once: piece -> its word ids.

    Every tokenizer an index uses (tantivy's ``simple``, the word pattern,
    ``whitespace``) ends a word at a space, and lowercasing and stemming act
    on one word at a time, so a text's words are its pieces' words, piece
    after piece. A corpus repeats its pieces (the words of a language, with
    their punctuation) millions of times; analysing each distinct piece once
    leaves the tokenizer, lowercasing and stemmer those of the plan while
    Python no longer handles every word of every document.
    """

    vocabulary: _Vocabulary = field(default_factory=_Vocabulary)
    ids: dict[str, int] = field(default_factory=dict)
    words: array = field(default_factory=lambda: array("i"))  # the word ids of piece after piece
    starts: array = field(default_factory=lambda: array("q"))
    lengths: array = field(default_factory=lambda: array("i"))

    def piece_id(self, piece: str, analyzer: tantivy.TextAnalyzer) -> int:
        """The id of ``piece``; a new piece is analysed and its words get columns."""
        known = self.ids.get(piece)
        if known is not None:
            return known
        words = analyzer.analyze(piece)
        self.starts.append(len(self.words))
        self.lengths.append(len(words))
        self.words.extend(map(self.vocabulary.__getitem__, words))
        known = self.ids[piece] = len(self.ids)
        return known

    def words_of(self, split: _SplitTexts, analyzer: tantivy.TextAnalyzer) -> tuple[np.ndarray, np.ndarray]:
        """The word ids of a block of texts, text after text, and how many words each text has."""
        distinct = split.distinct.to_pylist()
        ids = np.fromiter((self.piece_id(piece, analyzer) for piece in distinct), dtype=np.int64, count=len(distinct))
        occurrences = ids[split.pieces]
        starts = np.frombuffer(self.starts, dtype=np.int64)[occurrences]
        lengths = np.frombuffer(self.lengths, dtype=np.int32)[occurrences].astype(np.int64)
        ends = np.cumsum(lengths)
        positions = np.arange(int(ends[-1]) if len(ends) else 0) + np.repeat(starts - (ends - lengths), lengths)
        words = np.frombuffer(self.words, dtype=np.int32)[positions]
        words_per_text = np.diff(np.concatenate(([0], ends))[np.concatenate(([0], split.text_ends))])
        return words, words_per_text


@dataclass(frozen=True)
class _SplitTexts:
    """A block of texts cut at spaces: its distinct pieces, each piece occurrence as an index into them, and where
    each text's pieces end."""

    distinct: pa.Array
    pieces: np.ndarray
    text_ends: np.ndarray

    @classmethod
    def of(cls, texts: list[str]) -> _SplitTexts:
        """Split and deduplicated by Arrow (C++, without the GIL once the texts are copied), so that a thread can
        do it for one block while the build reads the next."""
        split = pc.split_pattern(pa.array(texts, pa.large_string()), " ")
        encoded = pc.dictionary_encode(pc.list_flatten(split))
        return cls(encoded.dictionary, encoded.indices.to_numpy(),
                   np.cumsum(pc.list_value_length(split).to_numpy(zero_copy_only=False)))


@dataclass
class _FieldWords:
    """One field's words while a build reads the documents: word ids, document after document.

    Only documents with a word in the field are listed (``rows`` holds their
    positions in the index, ``lengths`` their word counts), so that N and the
    mean length are Lucene's (its ``docCount`` counts the documents that have
    the field). Words are kept as 4-byte ids in one flat array, not as a list
    per document: the scores are then computed by a few array operations
    over the whole field instead of Python loops per document.
    """

    pieces: _Pieces = field(default_factory=_Pieces)
    words: array = field(default_factory=lambda: array("i"))
    lengths: array = field(default_factory=lambda: array("i"))
    rows: array = field(default_factory=lambda: array("i"))

    @property
    def vocabulary(self) -> _Vocabulary:
        return self.pieces.vocabulary

    def add_texts(self, first_row: int, texts: _SplitTexts, analyzer: tantivy.TextAnalyzer) -> None:
        """Add the field's texts of the documents at ``first_row``, ``first_row + 1``, ... (what a build does)."""
        words, lengths = self.pieces.words_of(texts, analyzer)
        self._append(np.arange(first_row, first_row + len(lengths)), lengths, words)

    def add(self, row: int, words: list[str]) -> None:
        """Add one document's words, already analysed (how the scoring is checked against bm25s's own indexing)."""
        ids = np.fromiter(map(self.vocabulary.__getitem__, words), dtype=np.int32, count=len(words))
        self._append(np.array([row]), np.array([len(words)]), ids)

    def _append(self, rows: np.ndarray, lengths: np.ndarray, words: np.ndarray) -> None:
        listed = np.flatnonzero(lengths)
        self.rows.frombytes(rows[listed].astype(np.int32).tobytes())
        self.lengths.frombytes(lengths[listed].astype(np.int32).tobytes())
        self.words.frombytes(words.astype(np.int32).tobytes())

    def scores(self, doc_count: int, config: IndexConfig) -> csr_array:
        """The (word × document) BM25 matrix, bit for bit what ``bm25s.BM25(method="lucene").index`` computes.

        Term frequencies come from one sparse construction (scipy sums the
        repeated (word, document) pairs, and keeps each word's documents in
        index order because the words arrive document after document). The
        arithmetic then follows bm25s's, operation for operation and in the
        same precisions: idf by ``math.log`` in float64 rounded to float32,
        the length norm and the tf component in float64, their product
        rounded to float32.
        """
        words = np.frombuffer(self.words, dtype=np.int32)
        lengths = np.frombuffer(self.lengths, dtype=np.int32)
        rows = np.frombuffer(self.rows, dtype=np.int32)
        ones = np.ones(len(words), dtype=np.float32)
        tf = csr_array((ones, (words, np.repeat(rows, lengths))), shape=(len(self.vocabulary), doc_count))
        listed = len(lengths)
        frequencies, frequency_of_word = np.unique(np.diff(tf.indptr), return_inverse=True)
        idf = np.array([math.log(1 + (listed - df + 0.5) / (df + 0.5)) for df in frequencies.tolist()],
                       dtype=np.float32)[frequency_of_word]
        length_of = np.zeros(doc_count, dtype=np.float64)
        length_of[rows] = lengths
        norm = config.k1 * ((1 - config.b) + config.b * length_of / lengths.mean())
        counts = tf.data.astype(np.float64)
        component = counts / (norm[tf.indices] + counts)
        tf.data = (np.repeat(idf, np.diff(tf.indptr)) * component).astype(np.float32)
        return tf

    def save(self, directory: Path, doc_count: int, config: IndexConfig) -> None:
        """Score the field at the config's k1/b and save it in bm25s's format; a field without words saves nothing."""
        if not self.lengths:
            return
        matrix = self.scores(doc_count, config)
        model = bm25s.BM25(k1=config.k1, b=config.b, method="lucene")
        model.scores = {"data": matrix.data, "indices": matrix.indices, "indptr": matrix.indptr, "num_docs": doc_count}
        model.vocab_dict = dict(self.vocabulary)
        model.nonoccurrence_array = None
        model.save(directory, show_progress=False)


@dataclass(frozen=True)
class _Field:
    """A saved field: its vocabulary, its scores as a (word × document) matrix, and each word's document count."""

    vocabulary: dict[str, int]
    scores: csr_array
    postings: np.ndarray

    @classmethod
    def load(cls, directory: Path, doc_count: int) -> _Field:
        model = bm25s.BM25.load(directory, mmap=True)
        data, indices, indptr = model.scores["data"], model.scores["indices"], model.scores["indptr"]
        # 32-bit offsets when they fit: scipy would otherwise widen (copy) the indices for every product.
        indptr = np.asarray(indptr, dtype=np.int32 if indptr[-1] <= _INT32_MAX else np.int64)
        scores = csr_array((data, indices, indptr), shape=(len(indptr) - 1, doc_count))
        return cls(model.vocab_dict, scores, np.diff(indptr))

    def query_matrix(self, queries: Sequence[list[str]], weight: float) -> csr_array:
        """One row per query holding ``weight`` at each of its words' columns (repeats add up; unknown words drop out)."""
        columns = [[self.vocabulary[word] for word in words if word in self.vocabulary] for words in queries]
        indptr = np.cumsum([0, *map(len, columns)], dtype=np.int32)
        indices = np.fromiter(chain.from_iterable(columns), dtype=np.int32, count=int(indptr[-1]))
        weights = np.full(len(indices), weight, dtype=np.float32)
        return csr_array((weights, indices, indptr), shape=(len(columns), self.scores.shape[0]))

    def cost(self, words: list[str]) -> int:
        """How many (document, word) scores a product reads for ``words``: a bound on the documents it matches."""
        return sum(int(self.postings[self.vocabulary[word]]) for word in words if word in self.vocabulary)


@dataclass(frozen=True)
class _Opened:
    """An index as searches read it: the doc_id of each position and the fields that have words."""

    doc_ids: np.ndarray
    fields: dict[str, _Field]

    def cost(self, words: list[str]) -> int:
        return sum(part.cost(words) for part in self.fields.values())

    def top_k(self, queries: Sequence[list[str]], weights: dict[str, float], k: int) -> list[list[Hit]]:
        """Each query's top ``k``: the fields' products summed into one (query × document) score matrix."""
        products = [part.query_matrix(queries, weights[name]) @ part.scores for name, part in self.fields.items()]
        if not products:
            return [[] for _ in queries]
        scores = products[0]
        for product in products[1:]:
            scores = scores + product
        return _top_k(scores, self.doc_ids, k)


def _top_k(scores: csr_array, doc_ids: np.ndarray, k: int) -> list[list[Hit]]:
    """The top ``k`` of each row by score, ties by doc_id: every document tied with the k-th is ordered before the cut.

    Only the k-th score of each row longer than ``k`` is found row by row (a
    partition); keeping what reaches it and ordering the kept hits by row,
    score and doc_id are one pass each over the whole chunk, rather than a
    dozen small array calls per query.
    """
    starts, lengths = scores.indptr[:-1].tolist(), np.diff(scores.indptr)
    kth = np.full(len(lengths), -np.inf, dtype=scores.data.dtype)
    for row in np.flatnonzero(lengths > k).tolist():
        values = scores.data[starts[row]:starts[row] + int(lengths[row])]
        kth[row] = np.partition(values, len(values) - k)[len(values) - k]
    kept = np.flatnonzero(scores.data >= np.repeat(kth, lengths))
    rows = np.searchsorted(scores.indptr, kept, side="right") - 1
    values, ids = scores.data[kept], doc_ids[scores.indices[kept]]
    order = np.lexsort((ids, -values, rows))
    counts = np.bincount(rows, minlength=len(lengths))
    top = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts) < k
    order = order[top]
    hits = list(zip(ids[order].tolist(), values[order].tolist(), strict=True))
    bounds = np.cumsum(np.minimum(counts, k)).tolist()
    return [hits[start:end] for start, end in zip([0, *bounds[:-1]], bounds, strict=True)]


@lru_cache(maxsize=OPEN_INDEXES)
def _open(data: Path) -> _Opened:
    """The index in the directory ``data``, memory-mapped, kept per process (loading parses the vocabularies).

    ``data`` is the directory a build created, never reused, so a rebuilt
    index is never served from the cache.
    """
    doc_ids_file = data / DOC_IDS_FILE
    if not doc_ids_file.is_file():
        raise ConfigError(
            f"index at {data} has no BM25 score matrices (built by an earlier babelbench with tantivy's own "
            "fixed BM25); rebuild it"
        )
    doc_ids = np.asarray(np.load(doc_ids_file, mmap_mode="r"))  # a plain array: a memmap's indexing costs µs per call
    fields = {name: _Field.load(data / name, len(doc_ids)) for name in FIELDS if (data / name).is_dir()}
    return _Opened(doc_ids, fields)


def _chunks(costs: Sequence[int]) -> Iterator[range]:
    """Consecutive queries, at most SEARCH_CHUNK and CHUNK_POSTINGS together (a heavier query goes alone)."""
    start = total = 0
    for position, cost in enumerate(costs):
        if position > start and (position - start == SEARCH_CHUNK or total + cost > CHUNK_POSTINGS):
            yield range(start, position)
            start, total = position, 0
        total += cost
    if start < len(costs):
        yield range(start, len(costs))


def _check_replaceable(path: Path) -> None:
    """Only a symlink this backend published may be replaced; anything else at ``path`` is the operator's."""
    if path.exists() and not path.is_symlink():
        raise ConfigError(f"{path} exists and is not an index published by babelbench; move it away or choose another path")


def _remove_abandoned(folder: Path) -> None:
    """Delete the build folders in ``folder`` that no published index points at and nobody will finish: those of
    builds killed before publishing (their writer died; see :mod:`tasks.warehouse.writers`)."""
    published = {entry.resolve() for entry in folder.iterdir() if entry.is_symlink()}
    for entry in folder.iterdir():
        if entry.name.startswith(".") and entry.is_dir() and not entry.is_symlink() and entry.resolve() not in published:
            if writers.abandoned(entry):
                logger.info("removing %s, an index build that never finished", entry)
                shutil.rmtree(entry, ignore_errors=True)


def _publish(data: Path, path: Path) -> None:
    """Point ``path`` at ``data`` with one atomic rename, then delete the index it pointed at before."""
    previous = path.parent / os.readlink(path) if path.is_symlink() else None
    link = data.with_name(f"{data.name}.link")
    os.symlink(data.name, link)  # relative: the parent folder can move
    try:
        os.replace(link, path)
    except BaseException:
        link.unlink()
        raise
    if previous is not None:
        shutil.rmtree(previous, ignore_errors=True)


class TantivyIndex:
    """The embedded backend (named for the analyzers it shares with tantivy; bm25s scores).

    ``threads`` is how many threads search (0: the process's thread budget, one per core outside Dask workers). A build reads
    the documents on one thread while another splits the previous block of
    texts into pieces (Arrow); each distinct piece is analysed once (tantivy,
    Rust) and the words are counted and scored by array operations (NumPy/scipy).
    """

    name = "tantivy"

    def __init__(self, threads: int = 0) -> None:
        self.threads = threads

    def build(self, lang: str, docs: Iterable[DocumentRow], path: Path, config: IndexConfig) -> IndexInfo:
        plan = plan_for(lang, config.stem)
        path = Path(path)
        _check_replaceable(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(path.parent)
        data = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}")
        writers.claim(data)
        try:
            count = self._index(data, plan, docs, config, source=f"documents for the {lang} index at {path}")
            info = IndexInfo(
                backend=self.name, lang=lang, path=path, doc_count=count, config=config,
                bm25_k1=config.k1, bm25_b=config.b,
            )
            atomic_write_text(data / MANIFEST_NAME, info.model_dump_json(indent=2))
            writers.release(data)
            _publish(data, path)
        except BaseException:
            shutil.rmtree(data, ignore_errors=True)
            raise
        logger.info("indexed %d %s documents at %s (BM25 k1=%s, b=%s)", count, lang, path, config.k1, config.b)
        return info

    def _index(self, data: Path, plan: AnalysisPlan, docs: Iterable[DocumentRow], config: IndexConfig, source: str) -> int:
        analyzer = text_analyzer(plan)
        fields = {name: _FieldWords() for name in FIELDS}
        doc_ids = array("q")
        texts: dict[str, list[str]] = {name: [] for name in FIELDS}
        # Blocks whose texts a thread is splitting: (first row, the split of each field). The next block is read
        # meanwhile; pieces get their ids block after block, in document order.
        pending: deque[tuple[int, dict[str, Future[_SplitTexts]]]] = deque()

        def analyse(pool: ThreadPoolExecutor, in_flight: int) -> None:
            if texts[BODY]:
                pending.append((len(doc_ids) - len(texts[BODY]),
                                {name: pool.submit(_SplitTexts.of, texts[name]) for name in FIELDS}))
                texts.update({name: [] for name in FIELDS})
            while len(pending) > in_flight:
                first_row, splits = pending.popleft()
                for name, split in splits.items():
                    fields[name].add_texts(first_row, split.result(), analyzer)

        with ThreadPoolExecutor(max_workers=1) as pool:
            for position, row in enumerate(tqdm(docs, desc=f"index {plan.lang}", unit="doc", disable=None)):
                doc_id, title, text = checked_row(row, position, source)
                title, body = prepare_document(title, text, plan, config.truncate)
                texts[TITLE].append(title)
                texts[BODY].append(body)
                doc_ids.append(doc_id)
                if len(texts[BODY]) == INDEX_BLOCK:
                    analyse(pool, in_flight=1)
            analyse(pool, in_flight=0)
        for name, words in fields.items():
            words.save(data / name, len(doc_ids), config)
        np.save(data / DOC_IDS_FILE, np.asarray(doc_ids, dtype=np.int64))
        return len(doc_ids)

    def search(
        self, index: IndexInfo | Path, lang: str, queries: Sequence[str], k: int, config: IndexConfig
    ) -> list[list[Hit]]:
        info = resolve_info(index, self.name, lang, config)
        check_k(k)
        plan = plan_for(lang, config.stem)
        analyzer = text_analyzer(plan)
        opened = _open(info.path.resolve())
        # Analysis holds the GIL, so it runs here; scipy's products release it, so the
        # chunks of a batch run on a pool of threads.
        words = [analyzer.analyze(prepare_query(query, plan)) for query in queries]
        weights = {TITLE: config.title_boost, BODY: 1.0}
        chunks = list(_chunks([opened.cost(query) for query in words]))

        def run(chunk: range) -> list[list[Hit]]:
            return opened.top_k([words[position] for position in chunk], weights, k)

        with ThreadPoolExecutor(max_workers=self.threads or thread_budget()) as pool:
            done = tqdm(pool.map(run, chunks), total=len(chunks), desc=f"search {lang}", unit="chunk", disable=None)
            return [hits for chunk in done for hits in chunk]

    def drop(self, index: IndexInfo | Path) -> None:
        path = index.path if isinstance(index, IndexInfo) else Path(index)
        read_info(path)  # refuse to delete what is not an index
        _check_replaceable(path)
        data = path.parent / os.readlink(path)
        path.unlink()
        shutil.rmtree(data, ignore_errors=True)
