"""Export a collection from the warehouse in the published CLIRMatrix formats."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from tasks.errors import ConfigError
from tasks.index.corpus import Articles
from tasks.pairing.export import QueryRecord, docs_path, qrels_path, write_docs_tsv, write_qrels_jsonl
from tasks.pairing.qrels import UNSPLIT
from tasks.warehouse.db import Warehouse


def export_collection(wh: Warehouse, collection: str, out: Path) -> dict[str, int]:
    """One JSON Lines file per direction and split, one ``doc_id<TAB>text`` file per document language.

    Splits are the base ones (train, dev, test1, test2) plus ``full`` with every query.

    As in the published CLIRMatrix collections, the base splits carry their
    padding as ordinary label-0 candidates (bi139-base: 100 candidates per
    query) and ``full`` carries the judgements alone (bi139-full is not
    padded): the format has no pad flag, so a padding row in ``full`` would read
    as a real judgement that the document is irrelevant. The warehouse keeps
    the flag (``clir_qrels.is_pad``). Returns files written → rows.
    """
    rows = wh.query(
        "SELECT q.src_lang, q.tgt_lang, q.split, q.query_id, d.title, q.doc_id, q.label, q.is_pad FROM clir_qrels q"
        " JOIN documents d ON d.lang = q.src_lang AND d.page_id = q.query_id"
        " WHERE q.collection = ? ORDER BY q.src_lang, q.tgt_lang, q.query_id, q.label DESC, q.doc_id",
        [collection])
    if not rows:
        raise ConfigError(f"collection {collection!r} has no qrels to export")
    grouped: dict[tuple[str, str, str], dict[tuple[int, str], list[tuple[str, int]]]] = defaultdict(lambda: defaultdict(list))
    for src, tgt, split, query_id, title, doc_id, label, is_pad in rows:
        if split != UNSPLIT:  # a base split: its queries with their padding
            grouped[(src, tgt, split)][(query_id, title)].append((str(doc_id), label))
        if not is_pad:  # the full collection: every query, judgements only
            grouped[(src, tgt, UNSPLIT)][(query_id, title)].append((str(doc_id), label))
    written: dict[str, int] = {}
    for (src, tgt, split), queries in grouped.items():
        path = qrels_path(out, collection, src, tgt, split)
        written[str(path)] = write_qrels_jsonl(path, (
            QueryRecord(src_id=str(query_id), src_query=title, tgt_results=tuple(results))
            for (query_id, title), results in queries.items()))
    for (lang,) in wh.query("SELECT DISTINCT tgt_lang FROM clir_qrels WHERE collection = ? ORDER BY 1", [collection]):
        path = docs_path(out, collection, lang)
        written[str(path)] = write_docs_tsv(path, (
            (str(page_id), f"{title} {text or ''}") for page_id, title, text in Articles(wh, lang, "page_id, title, text")))
    return written
