"""The layout of a published benchmark folder, shared by the writer (:mod:`tasks.publish.folder`) and the importer
that reads one back (``babelbench import hf``, :mod:`tasks.imports.hf`).

A folder is a Hugging Face dataset: ``README.md`` (the card, with its YAML front matter), ``croissant.json`` and
one Parquet file per configuration and split under ``data/``.  A row is one instance: the columns of
:data:`COLUMNS` that are not null in every row of the benchmark, its source articles (``sources``) and its
``content_hash``.  Documents are a list of structs; the JSON columns of a recipe's own shape (a hint, gold
answers, ``extra``) are JSON text, so one schema holds every recipe's.

The content hash is what a round trip keeps: the instance's published columns as canonical JSON (keys sorted, a
null member the same as an absent one, JSON text read as its value), so an instance read back into another home
hashes alike however its JSON was spelled.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

CARD = "README.md"
CROISSANT = "croissant.json"
DATA = "data"
#: the split of a question-answering benchmark: every instance is for evaluation
TEST_SPLIT = "test"
LICENCE = "cc-by-sa-4.0"
LICENCE_URL = "https://creativecommons.org/licenses/by-sa/4.0/"

#: the instance columns a folder may hold, in order (a column null in every row is left out)
COLUMNS = ("instance_id", "item_id", "recipe", "setting", "lang", "question", "answer", "source_lang", "qtype",
           "documents", "prompt_hint", "judge_context", "gold", "extra", "seed")
#: the columns that are the item's (the question as written), not the instance's
ITEM_COLUMNS = ("qtype",)
#: columns whose value is JSON of the recipe's own shape: published as JSON text
JSON_COLUMNS = ("prompt_hint", "gold", "extra")
SOURCES = "sources"
HASH = "content_hash"

#: what each core column means; a recipe's card adds or overrides (``Card.fields``)
FIELDS: Mapping[str, str] = {
    "instance_id": "Id of the instance, unique in the benchmark: one question in one setting and language.",
    "item_id": "Id of the question; the instances of one item ask it in other settings or languages.",
    "recipe": "The babelbench recipe (benchmark protocol) the instance follows.",
    "setting": "The evaluation setting: what the model is shown (e.g. closed book, or retrieved documents).",
    "lang": "BCP-47 code of the question's language, and of the expected answer.",
    "question": "The question the model is asked.",
    "answer": "The reference answer.",
    "source_lang": "BCP-47 code of the language the question was first written in (translated from it otherwise).",
    "qtype": "The kind of question, as its recipe names kinds (e.g. comparison, multihop); null when it has none.",
    "documents": "The documents the model is shown, in the order shown (empty when closed book).",
    "prompt_hint": "JSON: a hint the prompt gives besides the question, in the recipe's shape; null when none.",
    "judge_context": "Text a judge reads beside the answer (not shown to the model); null when none.",
    "gold": "JSON: gold answers in the recipe's shape, when it scores against them rather than with a judge.",
    "extra": "JSON: the recipe's own data about the instance.",
    "seed": "Seed of the random choices made in assembling the instance (document order, distractors).",
    SOURCES: "Where the text shown comes from: one entry per document, naming its article and dump.",
    HASH: "sha256 of the instance's other columns as canonical JSON (sources aside): the same instance hashes alike"
          " wherever it is read back.",
}
#: what each key of a document means (a document holds those its recipe gives)
DOCUMENT_FIELDS: Mapping[str, str] = {
    "doc_id": "Id of the document in the dataset it was imported from.",
    "lang": "BCP-47 code of the document's language.",
    "page_id": "Wikipedia page id of the article.",
    "title": "Title of the article.",
    "text": "The text shown (cleaned of markup, possibly cut).",
    "role": "support (needed to answer) or distractor.",
    "date": "When the article first appeared, as far as the ingested dumps tell (ISO date).",
    "url": "URL of the article, where the source gave one.",
}
#: what each key of a source means
SOURCE_FIELDS: Mapping[str, str] = {
    "wiki": "The wiki's database name (enwiki, dewiki, ...).",
    "lang": "BCP-47 code of the article's language.",
    "page_id": "Page id of the article.",
    "revision_id": "Id of the revision the text was taken from; null where the dump did not say.",
    "title": "Title of the article.",
    "url": "URL of the article.",
    "dump": "Date (YYYYMMDD) of the dump the text was read from; null where the benchmark's source did not say.",
}


def config_name(values: tuple[str, ...]) -> str:
    """A configuration's name from the values of its recipe's ``config_by`` columns (``multilingual_retrieval-de``)."""
    return "-".join(values)


def data_file(config: str, split: str) -> str:
    """Where a configuration's split lies in the folder, as the hub names single-shard files."""
    return f"{DATA}/{config}/{split}-00000-of-00001.parquet"


def _canonical(value: Any) -> Any:
    """``value`` with every null member of an object dropped, recursively."""
    if isinstance(value, dict):
        return {key: _canonical(member) for key, member in value.items() if member is not None}
    if isinstance(value, list):
        return [_canonical(member) for member in value]
    return value


def content_hash(row: Mapping[str, Any]) -> str:
    """The content hash of an instance (see the module notes): ``row`` holds its columns, JSON ones as text or
    values."""
    content = {}
    for column in COLUMNS:
        value = row.get(column)
        if isinstance(value, str) and (column in JSON_COLUMNS or column == "documents"):
            value = json.loads(value)
        content[column] = _canonical(value)
    text = json.dumps(_canonical(content), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
