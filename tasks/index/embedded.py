"""The embedded BM25 index: Lucene's BM25 at the config's k1 and b, in a directory on disk.

tantivy only analyses (its own BM25 has k1 and b fixed); the scores are bm25s's ``method="lucene"``,
precomputed per field at build time (so k1 and b are fixed per index) and saved as one (word × document)
matrix whose rows are the title's words, then the body's. A query sums the rows of its words in both fields —
the ``most_fields`` OR of Elasticsearch, with no query syntax — and keeps its top k, compiled
(:mod:`tasks.index.top_hits`). A build is published by switching the ``path`` symlink to a fresh hidden directory in
one rename, so a reader always sees a complete index.

See ``docs/models-and-backends.md``, "The embedded index".
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import threading
import uuid
from array import array
from collections import deque
from collections.abc import Iterable, Iterator, Sequence, Sized
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import tantivy
from scipy.sparse import csr_array
from tqdm import tqdm

from tasks.compute import release_freed_memory, thread_budget
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
from tasks.index.top_hits import top_hits
from tasks.progress import Progress
from tasks.text.truncate_block import truncated
from tasks.warehouse import writers
from tasks.warehouse.atomic import atomic_write_text

logger = logging.getLogger(__name__)

TITLE, BODY = "title", "body"
FIELDS = (TITLE, BODY)
DOC_IDS_FILE = "doc_ids.npy"
#: the stacked score matrix: ``scores.data``, ``scores.indices``, ``scores.indptr``, raw arrays described by LAYOUT_FILE
SCORES_FILE = "scores"
LAYOUT_FILE = "layout.json"
VOCABULARY_SUFFIX = ".vocabulary.json"
#: 2: one stacked score matrix (1: a bm25s model per field)
INDEX_FORMAT = 2
# Queries a search thread takes at a time (a batch of titles is cut into chunks for the search's threads).
SEARCH_CHUNK = 256
# Documents whose scores a search adds up at once: their sums and marks (12 bytes each, 1.5 MB) stay in a core's cache.
DOCUMENT_BLOCK = 1 << 17
# Documents analysed together by a build: Arrow splits and deduplicates their pieces of text at once.
INDEX_BLOCK = 16_384
# Blocks a build's pool splits while the next one is read: enough to keep the pool's threads busy.
BLOCKS_IN_FLIGHT = 2
# Entries of a field's counts scored together: their float64 temporaries fit a core's cache.
SCORE_SLICE = 1 << 16
# Entries of a field's counts whose document lengths are summed together (their float64 weights: 128 MB).
LENGTH_SLICE = 1 << 24
# Opened indexes kept per process: loading one parses its vocabularies.
OPEN_INDEXES = 8
_INT32_MAX = np.iinfo(np.int32).max
# One build at a time in a process: a build already spreads over every core (its pool), so a second one at once
# (a flow indexing two languages) gains no speed but holds a second corpus's word counts (3 GB at 1M articles).
_BUILDING = threading.Lock()

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

    def piece_ids(self, pieces: list[str], analyzer: tantivy.TextAnalyzer) -> np.ndarray:
        """The ids of the distinct ``pieces`` (a block's dictionary); a new piece is analysed and its words get
        columns."""
        ids = list(map(self.ids.get, pieces))
        for position in [position for position, known in enumerate(ids) if known is None]:
            words = analyzer.analyze(pieces[position])
            self.starts.append(len(self.words))
            self.lengths.append(len(words))
            self.words.extend(map(self.vocabulary.__getitem__, words))
            ids[position] = self.ids[pieces[position]] = len(self.ids)
        return np.array(ids, dtype=np.int64)

    def expansion(self, ids: np.ndarray) -> csr_array:
        """A (piece × word) matrix of the pieces ``ids``: how often each word occurs in each piece."""
        lengths = np.frombuffer(self.lengths, dtype=np.int32)[ids].astype(np.int64)
        indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)  # a block's pieces have few words
        starts = np.frombuffer(self.starts, dtype=np.int64)[ids]
        positions = np.repeat(starts - indptr[:-1], lengths) + np.arange(indptr[-1])
        words = np.frombuffer(self.words, dtype=np.int32)[positions]
        return csr_array((np.ones(len(words), dtype=np.float32), words, indptr), shape=(len(ids), len(self.vocabulary)))

    def counts_of(self, split: _SplitTexts, analyzer: tantivy.TextAnalyzer, pool: Executor) -> Future[csr_array]:
        """A block of texts as a (text × word) matrix of word counts, computed on ``pool``.

        The block's (text × distinct piece) occurrences, as Arrow cut them, times each distinct piece's words: one
        sparse product in C++ (without the GIL) does per word occurrence what would otherwise be several array
        passes, and sums a text's repeated words as it goes. Word order is lost, which BM25 never reads. The
        pieces get their ids here, in order, since the ids depend on the blocks before.
        """
        ids = self.piece_ids(split.distinct.to_pylist(), analyzer)
        occurrences = csr_array((np.ones(len(split.pieces), dtype=np.float32), split.pieces, split.offsets),
                                shape=(len(split.offsets) - 1, len(ids)))
        return pool.submit(occurrences.__matmul__, self.expansion(ids))


@dataclass(frozen=True)
class _SplitTexts:
    """A block of texts cut at spaces: its distinct pieces, each piece occurrence as an index into them, and where
    each text's pieces start and end (``offsets``, one more than there are texts)."""

    distinct: pa.Array
    pieces: np.ndarray
    offsets: np.ndarray

    @classmethod
    def of(cls, texts: pa.Array) -> _SplitTexts:
        """Split and deduplicated by Arrow (C++, without the GIL), so that a thread can do it for one block while
        the build reads the next."""
        split = pc.split_pattern(texts, " ")
        encoded = pc.dictionary_encode(pc.list_flatten(split))
        return cls(encoded.dictionary, encoded.indices.to_numpy(), split.offsets.to_numpy())


def _split_block(titles: list[str], bodies: list[str], plan: AnalysisPlan, truncate_body: bool) -> dict[str, _SplitTexts]:
    """A block of documents prepared as the engine indexes them (``prepare_document``) and cut at spaces, field by
    field (on the pool).

    Text the engine segments itself is cut to the length rule a block at a time
    (:func:`tasks.text.truncate_block.truncated`: compiled, without the GIL where it can tell nothing is to be cut),
    so the pool's threads prepare blocks side by side; text segmented in Python goes document by document.
    """
    if plan.presegment:
        prepared = [prepare_document(title, text, plan, truncate_body) for title, text in zip(titles, bodies,
                                                                                                   strict=True)]
        titles, bodies = [title for title, _ in prepared], [body for _, body in prepared]
    body = pa.array(bodies, pa.large_string())
    if truncate_body and not plan.presegment:
        body = truncated(body, plan.lang)
    return {TITLE: _SplitTexts.of(pa.array(titles, pa.large_string())), BODY: _SplitTexts.of(body)}


@dataclass
class _FieldWords:
    """One field's words while a build reads the documents: a (document × word) count matrix per block.

    Only documents with a word in the field count for N and the mean length,
    as in Lucene (its ``docCount`` counts the documents that have the field).
    The blocks keep 8 bytes per distinct (document, word); the scores are
    computed by a few array operations over the whole field instead of Python
    loops per document.
    """

    pieces: _Pieces = field(default_factory=_Pieces)
    blocks: list[Future[csr_array]] = field(default_factory=list)

    @property
    def vocabulary(self) -> _Vocabulary:
        return self.pieces.vocabulary

    def add_texts(self, texts: _SplitTexts, analyzer: tantivy.TextAnalyzer, pool: Executor) -> None:
        """Add the field's texts of the next documents (what a build does); their counts are computed on ``pool``."""
        self.blocks.append(self.pieces.counts_of(texts, analyzer, pool))

    def term_frequencies(self) -> csr_array:
        """The (word × document) counts, each word's documents in index order.

        Written straight into the final arrays, a block at a time, each block dropped once its entries are placed:
        stacking the blocks and transposing the stack held two or three copies of the counts at once (a gigabyte
        each at a million documents). Blocks are put in word order (scipy's compiled transpose, which keeps a
        word's documents in the block's index order) and written on the process's threads, a few at once: each
        block's place in every word's row is known from the blocks before it, so they write disjoint entries.
        """
        blocks = [block.result() for block in self.blocks]
        self.blocks.clear()
        words = len(self.vocabulary)
        documents = sum(block.shape[0] for block in blocks)
        per_word = np.zeros(words, dtype=np.int64)
        for block in blocks:
            per_word += np.bincount(block.indices, minlength=words)
        indptr = np.concatenate(([0], np.cumsum(per_word)))
        nnz = int(indptr[-1])
        index_type = np.int32 if max(nnz, words, documents) <= _INT32_MAX else np.int64  # what a search expects
        data, indices = np.empty(nnz, dtype=np.float32), np.empty(nnz, dtype=index_type)
        placed = indptr[:-1].copy()  # where each word's next document goes

        def transposed(block: csr_array) -> csr_array:
            return block.T.tocsr()

        def place(by_word: csr_array, starts: np.ndarray, first_document: int) -> None:
            at = np.repeat(starts - by_word.indptr[:-1], np.diff(by_word.indptr)) + np.arange(by_word.nnz)
            data[at] = by_word.data
            indices[at] = np.add(by_word.indices, first_document, dtype=index_type)

        first_document = 0
        with ThreadPoolExecutor(max_workers=thread_budget()) as pool:
            in_flight: deque[Future[csr_array]] = deque()
            placing: deque[Future[None]] = deque()
            blocks.reverse()
            while blocks or in_flight:
                while blocks and len(in_flight) < BLOCKS_IN_FLIGHT:
                    in_flight.append(pool.submit(transposed, blocks.pop()))
                by_word = in_flight.popleft().result()
                known = by_word.shape[0]  # a block has the columns of the words known when it was read
                starts = placed[:known].copy()
                placed[:known] += np.diff(by_word.indptr)
                placing.append(pool.submit(place, by_word, starts, first_document))
                first_document += by_word.shape[1]
                del by_word
                while len(placing) > BLOCKS_IN_FLIGHT:
                    placing.popleft().result()
            for placed_block in placing:
                placed_block.result()
        return csr_array((data, indices, indptr.astype(index_type)), shape=(words, documents))

    def scores(self, config: IndexConfig) -> csr_array:
        """The (word × document) BM25 matrix, bit for bit what ``bm25s.BM25(method="lucene").index`` computes.

        The arithmetic follows bm25s's, operation for operation and in the
        same precisions: idf by ``math.log`` in float64 rounded to float32,
        the length norm and the tf component in float64, their product
        rounded to float32.
        """
        tf = self.term_frequencies()
        length_of = _document_lengths(tf)
        listed = int(np.count_nonzero(length_of))
        frequencies, frequency_of_word = np.unique(np.diff(tf.indptr), return_inverse=True)
        idf = np.array([math.log(1 + (listed - df + 0.5) / (df + 0.5)) for df in frequencies.tolist()],
                       dtype=np.float32)[frequency_of_word]
        norm = config.k1 * ((1 - config.b) + config.b * length_of / (length_of.sum() / listed))
        _bm25_terms(tf, idf, norm)
        return tf


def _document_lengths(tf: csr_array) -> np.ndarray:
    """Each document's count of words (float64), summed ``LENGTH_SLICE`` entries at a time: one ``bincount`` over
    every entry would convert all counts to float64 and all indices to 64 bits at once (2 GB at a million
    documents). The sums are of whole numbers, exact in any order."""
    lengths = np.zeros(tf.shape[1], dtype=np.float64)
    for start in range(0, tf.nnz, LENGTH_SLICE):
        lengths += np.bincount(tf.indices[start:start + LENGTH_SLICE], weights=tf.data[start:start + LENGTH_SLICE],
                               minlength=tf.shape[1])
    return lengths


def _bm25_terms(tf: csr_array, idf: np.ndarray, norm: np.ndarray) -> None:
    """``idf[word] · tf / (norm[doc] + tf)`` in place of every entry of the (word × document) counts, in float32.

    Computed in float64 as bm25s does, slice after slice of ``SCORE_SLICE`` entries on the process's threads:
    each slice's temporaries stay in the cache, and NumPy releases the GIL for the arithmetic. In place, as a
    slice's counts are read before its scores are written: a second array would be half a gigabyte at a million
    documents.
    """
    word_ends = tf.indptr[1:]

    def score(start: int) -> None:
        end = min(start + SCORE_SLICE, tf.nnz)
        first, last = np.searchsorted(word_ends, [start, end - 1], side="right").tolist()
        per_word = np.minimum(word_ends[first:last + 1], end) - np.maximum(tf.indptr[first:last + 1], start)
        counts = tf.data[start:end].astype(np.float64)
        norms = norm[tf.indices[start:end]]
        norms += counts
        counts /= norms
        counts *= np.repeat(idf[first:last + 1], per_word)
        tf.data[start:end] = counts

    with ThreadPoolExecutor(max_workers=thread_budget()) as pool:
        list(pool.map(score, range(0, tf.nnz, SCORE_SLICE)))


class _ScoreFiles:
    """A build's score matrix on disk, written field after field: each field's rows follow the previous field's.

    The arrays are raw files that a search maps into memory (``layout.json`` gives their types and the rows of
    each field); each field's vocabulary is a JSON file of word -> row within the field. Stacking the fields
    lets one sparse product score both and sum them: adding a product per field cost more than the products at a
    million documents (``benchmarks/mining_phases.py``).
    """

    def __init__(self, data: Path, doc_count: int) -> None:
        self.data, self.doc_count = data, doc_count
        self.fields: dict[str, list[int]] = {}
        self.rows = self.nnz = 0
        self.index_type = np.int32 if doc_count <= _INT32_MAX else np.int64

    def add(self, name: str, vocabulary: dict[str, int], scores: csr_array) -> None:
        """Append one field's (word × document) scores and save its vocabulary."""
        with (self.data / f"{name}{VOCABULARY_SUFFIX}").open("wb") as out:
            out.write(orjson.dumps(vocabulary))
        for suffix, values in (("data", scores.data.astype(np.float32, copy=False)),
                               ("indices", scores.indices.astype(self.index_type, copy=False)),
                               ("indptr", scores.indptr[:-1].astype(np.int64) + self.nnz)):
            with (self.data / f"{SCORES_FILE}.{suffix}").open("ab") as out:
                values.tofile(out)
        self.fields[name] = [self.rows, self.rows + scores.shape[0]]
        self.rows += scores.shape[0]
        self.nnz += scores.nnz

    def close(self) -> None:
        """Write the end of the last row and the layout (the matrix is complete once the layout exists)."""
        with (self.data / f"{SCORES_FILE}.indptr").open("ab") as out:
            np.array([self.nnz], dtype=np.int64).tofile(out)
        atomic_write_text(self.data / LAYOUT_FILE, json.dumps({
            "format": INDEX_FORMAT, "rows": self.rows, "nnz": self.nnz, "documents": self.doc_count,
            "index_type": np.dtype(self.index_type).name, "fields": self.fields}))


@dataclass(frozen=True)
class _Opened:
    """An index as searches read it: the doc_id of each position, and the stacked scores with each field's rows."""

    doc_ids: np.ndarray
    scores: csr_array
    vocabularies: dict[str, dict[str, int]]
    first_rows: dict[str, int]

    def rows(self, words: list[str], name: str) -> list[int]:
        """The rows of ``words`` in field ``name`` (unknown words drop out)."""
        vocabulary, first = self.vocabularies.get(name, {}), self.first_rows.get(name, 0)
        return [first + vocabulary[word] for word in words if word in vocabulary]

    def query_rows(self, queries: Sequence[list[str]], weights: dict[str, float]) -> tuple[np.ndarray, np.ndarray,
                                                                                           np.ndarray]:
        """Each query's rows and their field's weight (repeats add up), flat: where each query starts, the rows and
        the weights."""
        rows: list[list[int]] = []
        values: list[list[float]] = []
        for words in queries:
            found = {name: self.rows(words, name) for name in self.vocabularies}
            rows.append([row for name in self.vocabularies for row in found[name]])
            values.append([weights[name] for name in self.vocabularies for _ in found[name]])
        starts = np.cumsum([0, *map(len, rows)], dtype=np.int64)
        count = int(starts[-1])
        return (starts, np.fromiter(chain.from_iterable(rows), dtype=np.int64, count=count),
                np.fromiter(chain.from_iterable(values), dtype=np.float32, count=count))

    def top_k(self, queries: Sequence[list[str]], weights: dict[str, float], k: int) -> list[list[Hit]]:
        """Each query's top ``k`` by its summed title and body scores, ties by doc_id (:mod:`tasks.index.top_hits`)."""
        ids, scores = np.empty((len(queries), k), dtype=np.int64), np.empty((len(queries), k), dtype=np.float32)
        counts = np.empty(len(queries), dtype=np.int64)
        top_hits(self.scores.indptr, self.scores.indices, self.scores.data, *self.query_rows(queries, weights),
                 self.doc_ids, k, DOCUMENT_BLOCK, ids, scores, counts)
        kept = np.arange(k) < counts[:, None]
        hits = list(zip(ids[kept].tolist(), scores[kept].tolist(), strict=True))
        bounds = np.cumsum(counts).tolist()
        return [hits[start:end] for start, end in zip([0, *bounds[:-1]], bounds, strict=True)]


@lru_cache(maxsize=OPEN_INDEXES)
def _open(data: Path) -> _Opened:
    """The index in the directory ``data``, memory-mapped, kept per process (loading parses the vocabularies).

    ``data`` is the directory a build created, never reused, so a rebuilt
    index is never served from the cache.
    """
    doc_ids_file, layout_file = data / DOC_IDS_FILE, data / LAYOUT_FILE
    if not doc_ids_file.is_file():
        raise ConfigError(
            f"index at {data} has no BM25 score matrices (built by an earlier babelbench with tantivy's own "
            "fixed BM25); rebuild it"
        )
    if not layout_file.is_file():
        raise ConfigError(f"index at {data} keeps a bm25s model per field (built by an earlier babelbench); rebuild"
                          " it: a CLIR build or QA build rebuilds it by itself")
    layout = json.loads(layout_file.read_text())
    doc_ids = np.asarray(np.load(doc_ids_file, mmap_mode="r"))  # a plain array: a memmap's indexing costs µs per call
    rows, nnz = layout["rows"], layout["nnz"]

    def mapped(suffix: str, dtype: str | type, count: int) -> np.ndarray:
        return np.memmap(data / f"{SCORES_FILE}.{suffix}", dtype=dtype, mode="r", shape=(count,)) if count else \
            np.zeros(0, dtype=dtype)

    indptr = mapped("indptr", np.int64, rows + 1) if rows else np.zeros(1, dtype=np.int64)
    # 32-bit offsets when they fit: a csr_array keeps one index type, and wider offsets would widen (copy) the indices.
    indptr = np.asarray(indptr, dtype=np.int32 if nnz <= _INT32_MAX else np.int64)
    indices = mapped("indices", layout["index_type"], nnz)
    scores = csr_array((mapped("data", np.float32, nnz), indices.astype(indptr.dtype, copy=False), indptr),
                       shape=(rows, len(doc_ids)))
    vocabularies = {name: orjson.loads((data / f"{name}{VOCABULARY_SUFFIX}").read_bytes()) for name in layout["fields"]}
    first_rows = {name: start for name, (start, _) in layout["fields"].items()}
    return _Opened(doc_ids, scores, vocabularies, first_rows)


@contextmanager
def _one_build(lang: str) -> Iterator[None]:
    """Hold :data:`_BUILDING` for ``lang``'s build, saying so in the log when it has to wait for another."""
    if not _BUILDING.acquire(blocking=False):
        logger.info("the %s index waits for the build running in this process (one at a time: each uses every core)",
                    lang)
        _BUILDING.acquire()
    try:
        yield
    finally:
        _BUILDING.release()


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

    ``threads`` is how many threads search (0: the process's thread budget, one per core outside Dask workers).
    A build reads the documents on one thread while a pool cuts blocks of texts to the length rule
    (``_split_block``), splits them into pieces (Arrow) and counts their words (scipy),
    mostly without the GIL; each distinct piece is analysed once (tantivy, Rust) on the reading thread, and the
    scores are computed by array operations on the pool (NumPy).
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
            with _one_build(lang):
                count = self._index(data, plan, docs, config, source=f"documents for the {lang} index at {path}")
                release_freed_memory()
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
        # Blocks the pool is preparing and splitting. The next blocks are read meanwhile; pieces get their ids block
        # after block, in document order, and the pool counts each block's words.
        pending: deque[Future[dict[str, _SplitTexts]]] = deque()

        def analyse(pool: ThreadPoolExecutor, in_flight: int) -> None:
            if texts[BODY]:
                pending.append(pool.submit(_split_block, texts[TITLE], texts[BODY], plan, config.truncate))
                progress.advance(len(texts[BODY]))
                texts.update({name: [] for name in FIELDS})
            while len(pending) > in_flight:
                for name, split in pending.popleft().result().items():
                    fields[name].add_texts(split, analyzer, pool)

        total = len(docs) if isinstance(docs, Sized) else None
        with ThreadPoolExecutor(max_workers=max(2, thread_budget())) as pool, \
                Progress(f"index {plan.lang}", total, "doc") as progress:
            for position, row in enumerate(docs):
                doc_id, title, text = checked_row(row, position, source)
                texts[TITLE].append(title)
                texts[BODY].append(text)
                doc_ids.append(doc_id)
                if len(texts[BODY]) == INDEX_BLOCK:
                    analyse(pool, in_flight=BLOCKS_IN_FLIGHT)
            analyse(pool, in_flight=0)
        scores = _ScoreFiles(data, len(doc_ids))
        for name, words in fields.items():
            if words.vocabulary:  # a field without words adds no rows
                scores.add(name, dict(words.vocabulary), words.scores(config))
        scores.close()
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
        # Analysis holds the GIL, so it runs here; the compiled search releases it, so the
        # chunks of a batch run on a pool of threads.
        words = [analyzer.analyze(prepare_query(query, plan)) for query in queries]
        weights = {TITLE: config.title_boost, BODY: 1.0}
        chunks = [range(start, min(start + SEARCH_CHUNK, len(words))) for start in range(0, len(words), SEARCH_CHUNK)]

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
