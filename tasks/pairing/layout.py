"""The layout of a published CLIR collection folder, shared by its writer (:mod:`tasks.pairing.folder`) and the
importer that reads one back (``babelbench import hf``, :func:`tasks.imports.clirmatrix.read_folder`).

The folder is a Hugging Face dataset (``README.md``, ``croissant.json``, Parquet under ``data/``) with three kinds
of configuration, each split one Parquet file:

- ``documents-<lang>`` (split ``documents``): every article of a document language the collection's index
  holds, one row each, with its attribution;
- ``queries-<lang>`` (split ``queries``): every query of a query language (an article title), with its
  attribution and the Jenks breaks its labels came from;
- ``qrels-<src>.<tgt>`` (splits ``train``, ``dev``, ``test1``, ``test2``, ``full``): the judgements of the
  direction ``src`` → ``tgt``, as the warehouse splits them.  ``full`` holds the queries in no base split
  (beyond the caps), judgements only; CLIRMatrix's full collection is every split's judgements without the
  padding rows.

A language code may hold a hyphen (``zh-yue``), so the direction is written with a dot, as ``clir export`` names
its files.  Ids are Wikipedia page ids (integers); a label is 0–6.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import pyarrow as pa

DOCUMENTS = "documents"
QUERIES = "queries"
QRELS = "qrels"
_CONFIG = re.compile(r"^(documents|queries)-(.+)$|^qrels-([^.]+)\.(.+)$")

#: the attribution of an article, as a documents or queries row gives it
ATTRIBUTION = (("qid", pa.string()), ("wiki", pa.string()), ("revision_id", pa.int64()), ("url", pa.string()),
               ("dump", pa.string()))
DOCUMENTS_SCHEMA = pa.schema([("doc_id", pa.int64()), ("title", pa.string()), ("text", pa.string()), *ATTRIBUTION])
QUERIES_SCHEMA = pa.schema([("query_id", pa.int64()), ("query", pa.string()), *ATTRIBUTION,
                            ("jenks_breaks", pa.list_(pa.float64()))])
QRELS_SCHEMA = pa.schema([("query_id", pa.int64()), ("doc_id", pa.int64()), ("label", pa.int8()),
                          ("is_pad", pa.bool_())])
SCHEMAS: Mapping[str, pa.Schema] = {DOCUMENTS: DOCUMENTS_SCHEMA, QUERIES: QUERIES_SCHEMA, QRELS: QRELS_SCHEMA}

_ATTRIBUTION_FIELDS = {
    "qid": "Wikidata id of the article's topic (what carries labels across languages); null where unknown.",
    "wiki": "The wiki's database name (enwiki, dewiki, ...).",
    "revision_id": "Id of the revision the text was taken from; null where the dump did not say.",
    "url": "URL of the article; null where its title is not known (an imported document whose text holds it).",
    "dump": "Date (YYYYMMDD) of the dump the text was read from; null where no ingested dump says.",
}
#: what each column of each kind of configuration means
FIELDS: Mapping[str, Mapping[str, str]] = {
    DOCUMENTS: {
        "doc_id": "Id of the document: the article's Wikipedia page id in its language's wiki.",
        "title": "Title of the article (empty where the collection it was imported from gave only the text).",
        "text": "The article's plain text, whole (an index that cuts text to a lead indexes about its first 600"
                " characters for Chinese, Japanese and Thai, 200 tokens otherwise).",
        **_ATTRIBUTION_FIELDS},
    QUERIES: {
        "query_id": "Id of the query: the page id of the article whose title it is, in the query language's wiki.",
        "query": "The query: the article's title.",
        **_ATTRIBUTION_FIELDS,
        "jenks_breaks": "The bounds of the label classes of this query's own-language BM25 hits, over their"
                        " normalised scores: the lowest score, then the highest score of each class from the lowest"
                        " class up (the Fisher-Jenks breaks where the query had at least as many distinct scores as"
                        " classes, else each distinct score). Null where the warehouse did not mine the labels.",
    },
    QRELS: {
        "query_id": "The query (query_id of queries-<src>).",
        "doc_id": "The judged document (doc_id of documents-<tgt>).",
        "label": "Relevance 0-6: 6 the query's own article in the document language, 5-1 the Jenks classes of its"
                 " BM25 hits (5 highest), 0 not relevant.",
        "is_pad": "Whether the row is padding: a random label-0 document added to fill a base query up to K"
                  " candidates (never in split full).",
    },
}
#: what one row of each kind of configuration is
RECORDS: Mapping[str, str] = {
    DOCUMENTS: "one record per document (article) of the language.",
    QUERIES: "one record per query (article title) of the language.",
    QRELS: "one record per judged (query, document) pair of the direction.",
}


def documents_config(lang: str) -> str:
    return f"{DOCUMENTS}-{lang}"


def queries_config(lang: str) -> str:
    return f"{QUERIES}-{lang}"


def qrels_config(src: str, tgt: str) -> str:
    return f"{QRELS}-{src}.{tgt}"


def parse_config(name: str) -> tuple[str, tuple[str, ...]] | None:
    """(kind, languages) of a configuration's name — ``("qrels", ("en", "de"))`` — or None for another name."""
    match = _CONFIG.match(name)
    if match is None:
        return None
    kind, lang, src, tgt = match.groups()
    return (kind, (lang,)) if kind else (QRELS, (src, tgt))
