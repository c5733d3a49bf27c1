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
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tasks.catalog import DOCUMENTS, INDEX
from tasks.dumps.records import DOCUMENT_SCHEMA
from tasks.errors import ConfigError, InputFormatError
from tasks.imports.common import DatasetLayout, chosen_langs, file_digest
from tasks.imports.hf import config_files, terms
from tasks.index.base import IndexConfig
from tasks.index.corpus import build_index
from tasks.pairing.config import SELF_LABEL
from tasks.pairing.export import read_docs_tsv, read_qrels_jsonl
from tasks.pairing.layout import DOCUMENTS as DOCUMENTS_KIND
from tasks.pairing.layout import QRELS as QRELS_KIND
from tasks.pairing.layout import QUERIES as QUERIES_KIND
from tasks.pairing.layout import SCHEMAS, parse_config
from tasks.publish.layout import CARD, CROISSANT
from tasks.stage import ReadFields, StageOutput, run_stage
from tasks.warehouse.db import Warehouse, upsert
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
    pages: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    texts: dict[str, dict[int, str]] = {}
    for (src, tgt, split), path in files.items():
        if src not in chosen or tgt not in chosen:
            continue
        docs_file = directory / "docs" / f"{tgt}.tsv"
        if tgt not in texts:
            texts[tgt] = _documents(docs_file)
            for page, text in texts[tgt].items():
                pages[tgt].setdefault(page, {})["text"] = text
        held = texts[tgt]
        queries: set[int] = set()
        for number, record in enumerate(read_qrels_jsonl(path), start=1):  # one record a line
            where = f"line {number}"
            query = _page_id(record.src_id, path, where)
            if query in queries:
                raise InputFormatError(str(path), where, f"query {record.src_id} appears twice in the file")
            queries.add(query)
            pages[src].setdefault(query, {})["title"] = record.src_query
            for doc, label in record.tgt_results:
                page = _page_id(doc, path, where)
                if page not in held:
                    raise InputFormatError(str(path), where, f"judged document {doc} is not in {docs_file}")
                qrels[(src, tgt)].append((name, src, tgt, split, query, page, label, False))
    config = {"source": str(directory), "fingerprint": fp, "imported": True, "backend": BACKEND}
    return store(wh, name, pages, qrels, config, f"from {directory.name}")


def store(wh: Warehouse, name: str, pages: Mapping[str, Mapping[int, Mapping[str, Any]]],
          qrels: Mapping[tuple[str, str], list[tuple]], config: Mapping[str, Any], origin: str) -> StageOutput:
    """Write an imported collection: each language's pages (``title``, ``text``, ``qid``, ``revision_id``, each
    optional) as its documents cell, each document language's index, the qrels cells and the collection's row
    (``config``), the last two in one transaction."""
    doc_langs = sorted({tgt for _, tgt in qrels})
    page_langs = sorted(set(doc_langs) | {src for src, _ in qrels})
    fp = config["fingerprint"]
    _refuse_other_corpora(wh, name, page_langs)
    documents = {lang: run_stage(wh, DOCUMENTS, lang, ReadFields(values={"source": _source(name), "import": fp}), {},
                                 lambda cell_fp, lang=lang: _write_documents(wh, name, lang, pages[lang], cell_fp))
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
    # the collection's languages are those of the directions it holds, not merely those chosen
    wh.replace_cells(changes, lambda cur: upsert(cur, "clir_collections", [[name, page_langs, False, json.dumps(config)]],
                                                 then="now()"))
    queries = len({(src, row[4]) for (src, _), rows in qrels.items() for row in rows})
    documents_count = sum(1 for lang in doc_langs for page in pages[lang].values() if "text" in page)
    return StageOutput(rows=sum(len(r) for r in qrels.values()),
                       message=f"{len(qrels)} directions, {queries} queries, {documents_count} documents {origin}")


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


def _write_documents(wh: Warehouse, name: str, lang: str, pages: Mapping[int, Mapping[str, Any]],
                     fp: str) -> StageOutput:
    """One language's documents cell: every document with its text, every query page with its title."""
    ids = sorted(pages)
    n = len(ids)
    columns = {"lang": [lang] * n, "page_id": ids, "title": [pages[p].get("title", "") for p in ids],
               "text": [pages[p].get("text", "") for p in ids], "qid": [pages[p].get("qid") for p in ids],
               "namespace": [0] * n, "is_redirect": [False] * n, "redirect_target": [None] * n,
               "is_disambiguation": [False] * n, "timestamp": [None] * n, "source": [_source(name)] * n,
               "revision_id": [pages[p].get("revision_id") for p in ids]}
    writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "documents_raw", lang, fp), LAKE_TABLES["documents_raw"],
                         fp)
    writer.add_table(pa.table(columns, schema=DOCUMENT_SCHEMA))
    wh.replace_cell("documents_raw", lang, fp, writer.shards)
    texts = sum(1 for page in pages.values() if "text" in page)
    return StageOutput(rows=n, message=f"{texts} documents, {n - texts} query pages without a document")


def _sha256s(folder: Path) -> dict[str, str]:
    """The sha256 ``croissant.json`` gives each data file, by its path in the folder (none without the file)."""
    path = folder / CROISSANT
    if not path.is_file():
        return {}
    document = json.loads(path.read_text(encoding="utf-8"))
    return {entry["contentUrl"]: entry["sha256"] for entry in document.get("distribution", [])
            if entry.get("contentUrl") and entry.get("sha256")}


def _table(folder: Path, path: Path, kind: str, sha256: Mapping[str, str]) -> list[dict[str, Any]]:
    """The rows of one data file, after checking its sha256 and that it has its kind's columns."""
    relative = path.relative_to(folder).as_posix()
    if relative in sha256 and file_digest(path) != sha256[relative]:
        raise ConfigError(f"{path}: its sha256 is not the one {CROISSANT} gives: the file was changed since it was"
                          " published")
    try:
        table = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow's errors for a cut or foreign file vary
        raise ConfigError(f"{path}: not a readable Parquet file ({exc})") from exc
    missing = [column for column in SCHEMAS[kind].names if column not in table.column_names]
    if missing:
        raise ConfigError(f"{path}: a {kind} file without the column(s) {', '.join(missing)}")
    return table.select(SCHEMAS[kind].names).to_pylist()


def read_folder(wh: Warehouse, folder: Path, name: str, langs: list[str] | None, fp: str) -> StageOutput:
    """A collection folder ``babelbench publish`` wrote (:mod:`tasks.pairing.layout`) as an imported collection:
    its documents with their titles, Wikidata ids and revisions, its queries' titles, its qrels with their splits
    and padding flags, and — kept in the collection's row for a later publish — the folder's licence and citation
    and each language's wiki and dump where its rows name one.  Each data file is checked against the sha256
    ``croissant.json`` gives it, each judgement against the folder's queries and documents, before anything is
    written."""
    files: dict[str, list[tuple[tuple[str, ...], str, Path]]] = defaultdict(list)
    for config, split, path in config_files(folder):
        parsed = parse_config(config or "")
        if parsed is None:
            raise ConfigError(f"{folder / CARD}: configuration {config!r} is not documents-<lang>, queries-<lang> or"
                              " qrels-<src>.<tgt>")
        files[parsed[0]].append((parsed[1], split, path))
    available = sorted({lang for entries in files.values() for langs_of, _, _ in entries for lang in langs_of})
    chosen = set(chosen_langs(available, langs, folder))
    sha256 = _sha256s(folder)
    pages: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    attribution: dict[str, set[tuple[str, str]]] = defaultdict(set)
    for kind, id_column, title_column in ((DOCUMENTS_KIND, "doc_id", "title"), (QUERIES_KIND, "query_id", "query")):
        for (lang,), _, path in files[kind]:
            if lang not in chosen:
                continue
            for number, row in enumerate(_table(folder, path, kind, sha256), start=1):
                page = pages[lang].setdefault(row[id_column], {})
                if kind in page:
                    raise ConfigError(f"{path} row {number}: {id_column} {row[id_column]} again")
                page.update({kind: True, "title": row[title_column], "qid": row["qid"],
                             "revision_id": row["revision_id"], **({"text": row["text"]} if kind == DOCUMENTS_KIND
                                                                   else {})})
                if row["dump"]:
                    attribution[lang].add((row["wiki"], row["dump"]))
    qrels: dict[tuple[str, str], list[tuple]] = defaultdict(list)
    for (src, tgt), split, path in files[QRELS_KIND]:
        if src not in chosen or tgt not in chosen:
            continue
        for number, row in enumerate(_table(folder, path, QRELS_KIND, sha256), start=1):
            if QUERIES_KIND not in pages[src].get(row["query_id"], {}):
                raise ConfigError(f"{path} row {number}: query {row['query_id']} is not in queries-{src}")
            if DOCUMENTS_KIND not in pages[tgt].get(row["doc_id"], {}):
                raise ConfigError(f"{path} row {number}: document {row['doc_id']} is not in documents-{tgt}")
            if not 0 <= row["label"] <= SELF_LABEL:
                raise ConfigError(f"{path} row {number}: label {row['label']} is not 0-{SELF_LABEL}")
            qrels[(src, tgt)].append((name, src, tgt, split, row["query_id"], row["doc_id"], row["label"],
                                      bool(row["is_pad"])))
    if not qrels:
        raise ConfigError(f"{folder}: no qrels of the chosen languages {', '.join(sorted(chosen))}")
    config = {"source": str(folder), "fingerprint": fp, "imported": True, "backend": BACKEND, **terms(folder),
              "attribution": {lang: {"wiki": wiki, "dump": dump}
                              for lang, named in sorted(attribution.items()) if len(named) == 1
                              for wiki, dump in named}}
    return store(wh, name, {lang: {page_id: {key: value for key, value in page.items()
                                             if key not in (DOCUMENTS_KIND, QUERIES_KIND)}
                                   for page_id, page in held.items()} for lang, held in pages.items()},
                 qrels, config, f"from the published folder {folder.name}")


IMPORTER = DatasetLayout(RECIPE, write, locate=locate)
