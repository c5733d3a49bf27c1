"""The embedded BM25 index: tantivy (a Rust search library) in a directory on disk.

Documents are added in bulk by one writer whose threads analyse and index in
Rust, with one commit at the end. Queries are never parsed as query syntax:
each query is analysed with the index's own analyzer and turned into term
queries built in code, so titles such as ``C++ (language)``, ``AND`` or
``"Weird" Al`` are just words.

tantivy's BM25 has k1 = 1.2 and b = 0.75 fixed in the library (constants in
``tantivy/src/query/bm25.rs``; neither tantivy nor its Python binding can
change them), and its scores carry the classic ``(k1 + 1)`` factor that Lucene
dropped. ``IndexConfig.k1``/``b`` therefore do not apply here: the build logs
the difference and records the real values in ``IndexInfo``. Use the
Elasticsearch backend for the exact CLIRMatrix setting (b = 0.3).

A build is published atomically: the index is written to a fresh hidden
directory beside ``path`` and ``path`` is a symlink switched to it with one
rename, so a reader always sees a complete index, old or new.
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import tantivy
from tqdm import tqdm

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
from tasks.warehouse.atomic import atomic_write_text

logger = logging.getLogger(__name__)

TANTIVY_K1 = 1.2
TANTIVY_B = 0.75
ANALYZER_NAME = "babelbench"
DOC_ID, TITLE, BODY = "doc_id", "title", "body"
# Term frequencies without positions: BM25 needs no more, and no query here is a phrase.
INDEX_OPTION = "freq"
# Queries per task of the search thread pool: large enough that scheduling costs nothing.
SEARCH_CHUNK = 64

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


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_integer_field(DOC_ID, fast=True)
    builder.add_text_field(TITLE, tokenizer_name=ANALYZER_NAME, index_option=INDEX_OPTION)
    builder.add_text_field(BODY, tokenizer_name=ANALYZER_NAME, index_option=INDEX_OPTION)
    return builder.build()


def _check_replaceable(path: Path) -> None:
    """Only a symlink this backend published may be replaced; anything else at ``path`` is the operator's."""
    if path.exists() and not path.is_symlink():
        raise ConfigError(f"{path} exists and is not an index published by babelbench; move it away or choose another path")


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
    """The embedded backend.

    ``heap_bytes`` is the writer's memory budget, shared by its indexing
    threads; ``threads`` is how many threads index (0: tantivy's choice, one
    per core up to 8) and search (0: one per core).
    """

    name = "tantivy"

    def __init__(self, heap_bytes: int = 512_000_000, threads: int = 0) -> None:
        self.heap_bytes = heap_bytes
        self.threads = threads

    def build(self, lang: str, docs: Iterable[DocumentRow], path: Path, config: IndexConfig) -> IndexInfo:
        plan = plan_for(lang, config.stem)
        path = Path(path)
        _check_replaceable(path)
        if (config.k1, config.b) != (TANTIVY_K1, TANTIVY_B):
            logger.warning(
                "tantivy's BM25 is fixed at k1=%s, b=%s; the config's k1=%s, b=%s do not apply to the %s index",
                TANTIVY_K1, TANTIVY_B, config.k1, config.b, lang,
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        data = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}")
        data.mkdir()
        try:
            count = self._index(data, plan, docs, config, source=f"documents for the {lang} index at {path}")
            info = IndexInfo(
                backend=self.name, lang=lang, path=path, doc_count=count, config=config,
                bm25_k1=TANTIVY_K1, bm25_b=TANTIVY_B,
            )
            atomic_write_text(data / MANIFEST_NAME, info.model_dump_json(indent=2))
            _publish(data, path)
        except BaseException:
            shutil.rmtree(data, ignore_errors=True)
            raise
        logger.info("indexed %d %s documents at %s", count, lang, path)
        return info

    def _index(self, data: Path, plan: AnalysisPlan, docs: Iterable[DocumentRow], config: IndexConfig, source: str) -> int:
        index = tantivy.Index(_schema(), path=str(data))
        index.register_tokenizer(ANALYZER_NAME, text_analyzer(plan))
        writer = index.writer(heap_size=self.heap_bytes, num_threads=self.threads)
        count = 0
        try:
            for position, row in enumerate(tqdm(docs, desc=f"index {plan.lang}", unit="doc", disable=None)):
                doc_id, title, text = checked_row(row, position, source)
                title, body = prepare_document(title, text, plan, config.truncate)
                writer.add_document(tantivy.Document(doc_id=doc_id, title=title, body=body))
                count += 1
            writer.commit()
        except BaseException:
            # Stop the indexing threads before the caller deletes the directory they write to.
            writer.rollback()
            raise
        finally:
            writer.wait_merging_threads()  # joins every writer thread and releases the writer
        return count

    def search(
        self, index: IndexInfo | Path, lang: str, queries: Sequence[str], k: int, config: IndexConfig
    ) -> list[list[Hit]]:
        info = resolve_info(index, self.name, lang, config)
        check_k(k)
        plan = plan_for(lang, config.stem)
        analyzer = text_analyzer(plan)
        opened = tantivy.Index.open(str(info.path))
        opened.register_tokenizer(ANALYZER_NAME, analyzer)
        searcher = opened.searcher()
        # Analysis and query building hold the GIL, so they run here; searching releases it,
        # so the searches of a batch share one searcher across a pool of threads.
        compiled = [_bm25_query(opened.schema, words, config.title_boost) if words else None
                    for words in (analyzer.analyze(prepare_query(query, plan)) for query in queries)]

        def run(chunk: list[tantivy.Query | None]) -> list[list[Hit]]:
            return [_top_k(searcher, query, k) if query is not None else [] for query in chunk]

        chunks = [compiled[start : start + SEARCH_CHUNK] for start in range(0, len(compiled), SEARCH_CHUNK)]
        with ThreadPoolExecutor(max_workers=self.threads or os.cpu_count() or 1) as pool:
            done = tqdm(pool.map(run, chunks), total=len(chunks), desc=f"search {lang}", unit="chunk", disable=None)
            return [hits for chunk in done for hits in chunk]

    def drop(self, index: IndexInfo | Path) -> None:
        path = index.path if isinstance(index, IndexInfo) else Path(index)
        read_info(path)  # refuse to delete what is not an index
        _check_replaceable(path)
        data = path.parent / os.readlink(path)
        path.unlink()
        shutil.rmtree(data, ignore_errors=True)


def _bm25_query(schema: tantivy.Schema, words: list[str], title_boost: float) -> tantivy.Query:
    """Every word against the boosted title and the body; scores add up (Elasticsearch's ``most_fields``).

    A repeated word counts once per occurrence, as in a Lucene match query (whose
    duplicate clauses add up).
    """
    should = tantivy.Occur.Should

    def field_query(field: str) -> tantivy.Query:
        terms = [(should, tantivy.Query.term_query(schema, field, word, index_option=INDEX_OPTION)) for word in words]
        return tantivy.Query.boolean_query(terms)

    title = tantivy.Query.boost_query(field_query(TITLE), title_boost)
    return tantivy.Query.boolean_query([(should, title), (should, field_query(BODY))])


def _top_k(searcher: tantivy.Searcher, query: tantivy.Query, k: int) -> list[Hit]:
    """The top ``k`` by score, ties by doc_id.

    tantivy breaks ties by its internal address, not by doc_id, so documents
    tied with the k-th score may be left out arbitrarily. Fetch one more than
    needed; while the extra hit still ties with the k-th, fetch twice as many,
    until every document tied at the cut is in hand, then order and cut.
    """
    limit = k + 1
    while True:
        hits = searcher.search(query, limit, count=False).hits
        if len(hits) < limit or hits[-1][0] < hits[k - 1][0]:
            break
        limit *= 2
    doc_ids = searcher.fast_field_values(DOC_ID, [address for _, address in hits])
    ranked = sorted(zip(doc_ids, (score for score, _ in hits), strict=True), key=lambda hit: (-hit[1], hit[0]))
    return [(int(doc_id), float(score)) for doc_id, score in ranked[:k]]
