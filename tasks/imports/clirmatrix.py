"""A collection in the published CLIRMatrix layout (what ``babelbench clir export`` writes) as a CLIR collection.

``--source`` is the collection directory (``<query_lang>.<doc_lang>.<split>.jsonl`` and ``docs/<lang>.tsv``)
or its parent holding exactly one.  It becomes what a built collection has — documents cells, indexes,
``clir_qrels`` and the ``clir_collections`` row, registered last in one transaction — so ``clir eval``
treats it like a built one.  Ids must read back as themselves (decimal page ids, no leading zeros), since
a look-alike would merge two documents; a language whose corpus came from elsewhere is refused; every file
is checked before anything is written.

See ``docs/clir.md``, "Importing a published collection".
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from tasks.catalog import DOCUMENTS, INDEX
from tasks.dumps.records import DOCUMENT_SCHEMA
from tasks.errors import ConfigError, InputFormatError
from tasks.imports.common import DatasetLayout, chosen_langs
from tasks.index.base import IndexConfig
from tasks.index.corpus import build_index
from tasks.pairing.export import read_docs_tsv, read_qrels_jsonl
from tasks.stage import ReadFields, StageOutput, run_stage
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import CLIR_QREL_SCHEMA, LAKE_TABLES, ShardWriter, cell_dir

BACKEND = "tantivy"  # the embedded engine, as `clir build` uses by default

_QRELS_FILE = re.compile(r"^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.jsonl$")

RECIPE = "clirmatrix"

_PAGE_ID = re.compile(r"0|[1-9][0-9]*")
_LARGEST_ID = 2**63 - 1  # a BIGINT


def collection_dir(source: Path) -> Path:
    """The collection directory: ``source`` itself, or its only subdirectory with queries files."""
    if not source.is_dir():
        raise ConfigError(f"{source}: a CLIRMatrix collection is a directory (<q>.<d>.<split>.jsonl files and docs/)")
    if any(_QRELS_FILE.match(p.name) for p in source.iterdir()):
        return source
    inner = [d for d in source.iterdir() if d.is_dir() and any(_QRELS_FILE.match(p.name) for p in d.iterdir())]
    if len(inner) != 1:
        raise ConfigError(f"{source}: no <query_lang>.<doc_lang>.<split>.jsonl files"
                          + (f" (several collections inside: {', '.join(sorted(d.name for d in inner))};"
                             " name one)" if inner else ""))
    return inner[0]


def locate(source: Path, name: str | None) -> tuple[Path, str, str]:
    """(collection directory, collection name — the directory's by default, import stage cell)."""
    directory = collection_dir(source)
    name = name or directory.name
    return directory, name, f"clir:{name}"


def _page_id(value: str, path: Path, where: str) -> int:
    """The page id an id string stands for, if it is that page id's own decimal text (see the module notes)."""
    if not _PAGE_ID.fullmatch(value):
        raise InputFormatError(str(path), where, f"id {value!r} is not a page id (a non-negative integer in ASCII"
                                                 " digits, without leading zeros)")
    page = int(value)
    if page > _LARGEST_ID:
        raise InputFormatError(str(path), where, f"id {value!r} is beyond the largest page id the warehouse holds")
    return page


def write(wh: Warehouse, directory: Path, name: str, langs: list[str] | None, fp: str) -> StageOutput:
    """The collection's documents, indexes, qrels and row (see the module notes)."""
    files = {match.groups(): path for path in sorted(directory.iterdir())
             if (match := _QRELS_FILE.match(path.name))}
    available = sorted({lang for src, tgt, _ in files for lang in (src, tgt)})
    chosen = set(chosen_langs(available, langs, directory))
    qrels: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    titles: dict[str, dict[int, str]] = defaultdict(dict)
    texts: dict[str, dict[int, str]] = {}
    for (src, tgt, split), path in files.items():
        if src not in chosen or tgt not in chosen:
            continue
        docs_file = directory / "docs" / f"{tgt}.tsv"
        if tgt not in texts:
            texts[tgt] = _documents(docs_file)
        held = texts[tgt]
        queries: set[int] = set()
        for number, record in enumerate(read_qrels_jsonl(path), start=1):  # one record a line
            where = f"line {number}"
            query = _page_id(record.src_id, path, where)
            if query in queries:
                raise InputFormatError(str(path), where, f"query {record.src_id} appears twice in the file")
            queries.add(query)
            titles[src][query] = record.src_query
            for doc, label in record.tgt_results:
                page = _page_id(doc, path, where)
                if page not in held:
                    raise InputFormatError(str(path), where, f"judged document {doc} is not in {docs_file}")
                qrels[(src, tgt)].append((name, src, tgt, split, query, page, label, False))
    doc_langs = sorted({tgt for _, tgt in qrels})
    page_langs = sorted(set(doc_langs) | set(titles))
    _refuse_other_corpora(wh, name, page_langs)
    documents = {lang: run_stage(wh, DOCUMENTS, lang, ReadFields(values={"source": _source(name), "import": fp}), {},
                                 lambda cell_fp, lang=lang: _write_documents(wh, name, lang, titles[lang],
                                                                             texts.get(lang, {}), cell_fp))
                 for lang in page_langs}
    index = IndexConfig()
    for lang in doc_langs:
        run_stage(wh, INDEX, lang, ReadFields.of(index, *index.build_fields(), backend=BACKEND),
                  {"documents": documents[lang]}, lambda index_fp, lang=lang: build_index(wh, lang, BACKEND, index,
                                                                                         index_fp))
    changes = []
    for (src, tgt), rows in sorted(qrels.items()):
        cell = f"{name}:{src}:{tgt}"
        writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "clir_qrels", cell, fp), LAKE_TABLES["clir_qrels"],
                             fp)
        writer.add_table(pa.table(list(map(list, zip(*rows, strict=True))), schema=CLIR_QREL_SCHEMA))
        changes.append(("clir_qrels", cell, fp, writer.shards))
    config = {"source": str(directory), "fingerprint": fp, "imported": True, "backend": BACKEND}
    # the collection's languages are those of the directions it holds, not merely those chosen
    wh.replace_cells(changes, [("INSERT OR REPLACE INTO clir_collections VALUES (?, ?, ?, ?, now())",
                                [name, page_langs, False, json.dumps(config)])])
    queries = sum(len(t) for t in titles.values())
    return StageOutput(rows=sum(len(r) for r in qrels.values()),
                       message=f"{len(qrels)} directions, {queries} queries, "
                               f"{sum(len(t) for t in texts.values())} documents from {directory.name}")


def _refuse_other_corpora(wh: Warehouse, name: str, langs: list[str]) -> None:
    """Documents of these languages must come from this import alone (see the module notes)."""
    for lang in langs:
        others = wh.query("SELECT DISTINCT source FROM documents_raw WHERE lang = ? AND source != ? LIMIT 1",
                          [lang, _source(name)])
        if others:
            raise ConfigError(f"the warehouse already has {lang} documents (from {others[0][0]}); import collection"
                              f" {name!r} into another home (--home) so the two document sets do not mix")


def _source(name: str) -> str:
    return f"clirmatrix:{name}"


def _documents(path: Path) -> dict[int, str]:
    if not path.is_file():
        raise ConfigError(f"{path}: missing (every document language needs docs/<lang>.tsv)")
    texts: dict[int, str] = {}
    for number, (doc_id, text) in enumerate(read_docs_tsv(path), 1):
        page = _page_id(doc_id, path, f"line {number}")
        if page in texts:
            raise InputFormatError(str(path), f"line {number}", f"document {doc_id} appears twice")
        texts[page] = text
    return texts


def _write_documents(wh: Warehouse, name: str, lang: str, titles: dict[int, str], texts: dict[int, str],
                     fp: str) -> StageOutput:
    """One language's documents cell: every document with its text, every query page with its title."""
    pages = sorted(set(titles) | set(texts))
    columns = {"lang": [lang] * len(pages), "page_id": pages, "title": [titles.get(p, "") for p in pages],
               "text": [texts.get(p, "") for p in pages], "qid": [None] * len(pages), "namespace": [0] * len(pages),
               "is_redirect": [False] * len(pages), "redirect_target": [None] * len(pages),
               "is_disambiguation": [False] * len(pages), "timestamp": [None] * len(pages),
               "source": [_source(name)] * len(pages), "revision_id": [None] * len(pages)}
    writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "documents_raw", lang, fp), LAKE_TABLES["documents_raw"],
                         fp)
    writer.add_table(pa.table(columns, schema=DOCUMENT_SCHEMA))
    wh.replace_cell("documents_raw", lang, fp, writer.shards)
    return StageOutput(rows=len(pages), message=f"{len(texts)} documents, {len(titles)} query pages")


IMPORTER = DatasetLayout(RECIPE, write, locate=locate)
