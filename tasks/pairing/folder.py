"""A CLIR collection as a Hugging Face dataset folder (``babelbench publish``), in the layout of
:mod:`tasks.pairing.layout`: documents and queries per language with their attribution, qrels per direction and
split, a card written from the warehouse by this package's template (``templates/card.md.j2``) and Croissant
metadata.  The core (:mod:`tasks.publish.folder`) checks the folder and swaps it in.

Every row is sorted (documents and queries by id, qrels by query, label from the highest, document), and nothing
written depends on when, so the same warehouse writes the same bytes.  A document's or query's attribution is
its article's: page id, revision, title, URL, and the wiki and dump its text was read from — for a collection
imported from a published folder, the wiki and dump that folder named for its language.
"""

from __future__ import annotations

import datetime
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
from huggingface_hub import DatasetCard

from tasks.catalog import INDEX, QRELS, RETRIEVAL
from tasks.errors import ConfigError
from tasks.index.corpus import articles_sql
from tasks.pairing.layout import (
    DOCUMENTS,
    FIELDS,
    QRELS as QRELS_KIND,
    QUERIES,
    RECORDS,
    SCHEMAS,
    documents_config,
    parse_config,
    qrels_config,
    queries_config,
)
from tasks.pairing.provenance import CollectionFacts, Run, collection_facts
from tasks.publish.card import citation, field_docs, front_matter, tags
from tasks.publish.croissant import write_metadata
from tasks.publish.folder import write_parquet
from tasks.publish.layout import CARD, LICENCE, LICENCE_URL
from tasks.publish.rows import Configuration
from tasks.publish.sources import DUMPS, article_url
from tasks.recipe import Recipe
from tasks.warehouse.db import Warehouse

TEMPLATE = Path(__file__).with_name("templates") / "card.md.j2"


def _attributed(lang: str, rows: list[tuple], fallback: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Rows ``(id, title, text, qid, revision_id, wiki, dump)`` with their URL, the wiki and dump the collection's
    import named for the language where no ingested dump does (``fallback``)."""
    return [{"id": page_id, "title": title, "text": text, "qid": qid, "revision_id": revision_id,
             "url": article_url(lang, title) if title else None, "wiki": wiki or fallback.get("wiki") or f"{lang}wiki",
             "dump": dump or fallback.get("dump")}
            for page_id, title, text, qid, revision_id, wiki, dump in rows]


def documents_table(wh: Warehouse, lang: str, fallback: Mapping[str, Any]) -> pa.Table:
    """Every article of ``lang`` (what its index holds), with its attribution."""
    rows = wh.query(
        f"SELECT a.page_id, a.title, coalesce(a.text, ''), a.qid, a.revision_id, f.wiki, f.dump_date"
        f" FROM ({articles_sql('page_id, title, text, qid, revision_id, source, lang')}) AS a"
        f" LEFT JOIN {DUMPS} AS f ON f.name = a.source AND f.lang = a.lang ORDER BY a.page_id", [lang])
    return pa.Table.from_pylist([
        {"doc_id": row["id"], **{key: row[key] for key in SCHEMAS[DOCUMENTS].names if key != "doc_id"}}
        for row in _attributed(lang, rows, fallback)], SCHEMAS[DOCUMENTS])


def queries_table(wh: Warehouse, name: str, lang: str, breaks: Mapping[int, list[float]] | None,
                  fallback: Mapping[str, Any]) -> pa.Table:
    """Every query of ``lang`` in the collection: its article's title and attribution, and its breaks (null when
    the warehouse did not mine its labels)."""
    rows = wh.query(
        f"SELECT q.query_id, d.title, NULL, d.qid, d.revision_id, f.wiki, f.dump_date"
        f" FROM (SELECT DISTINCT query_id FROM clir_qrels WHERE collection = ? AND src_lang = ?) AS q"
        f" LEFT JOIN documents AS d ON d.lang = ? AND d.page_id = q.query_id"
        f" LEFT JOIN {DUMPS} AS f ON f.name = d.source AND f.lang = d.lang ORDER BY q.query_id", [name, lang, lang])
    missing = [row[0] for row in rows if row[1] is None]
    if missing:
        raise ConfigError(f"collection {name!r}: {lang} queries {missing[:5]} have no article in the warehouse")
    return pa.Table.from_pylist([
        {"query_id": row["id"], "query": row["title"],
         **{key: row[key] for key in ("qid", "wiki", "revision_id", "url", "dump")},
         "jenks_breaks": None if breaks is None else breaks[row["id"]]}
        for row in _attributed(lang, rows, fallback)], SCHEMAS[QUERIES])


def qrels_tables(wh: Warehouse, name: str, src: str, tgt: str, splits: Sequence[str]) -> list[Configuration]:
    """The direction's judgements, one table per split it has."""
    by_split: dict[str, list[tuple]] = defaultdict(list)
    for split, *row in wh.query(
            "SELECT split, query_id, doc_id, label, is_pad FROM clir_qrels WHERE collection = ? AND src_lang = ?"
            " AND tgt_lang = ? ORDER BY query_id, label DESC, doc_id", [name, src, tgt]):
        by_split[split].append(row)
    schema = SCHEMAS[QRELS_KIND]
    return [Configuration(qrels_config(src, tgt), split, pa.table(
        [list(column) for column in zip(*by_split[split], strict=True)], schema=schema))
        for split in splits if by_split[split]]


def configurations(wh: Warehouse, facts: CollectionFacts) -> list[Configuration]:
    """Documents per document language, queries per query language, qrels per direction and split."""
    attribution = facts.imported.get("attribution", {})
    parts = [Configuration(documents_config(lang), DOCUMENTS, documents_table(wh, lang, attribution.get(lang, {})))
             for lang in facts.doc_langs]
    parts += [Configuration(queries_config(lang), QUERIES,
                            queries_table(wh, facts.name, lang, facts.breaks.get(lang), attribution.get(lang, {})))
              for lang in facts.query_langs]
    for src, tgt in facts.directions:
        parts += qrels_tables(wh, facts.name, src, tgt, facts.splits)
    return parts


def kind(configuration: Configuration) -> str:
    """documents, queries or qrels."""
    parsed = parse_config(configuration.name)
    assert parsed is not None  # every configuration is named by the layout
    return parsed[0]


def dumps(parts: Sequence[Configuration]) -> list[tuple[str, str, str, int, int]]:
    """(language, wiki, dump, documents, queries) of the published rows."""
    counted: Counter[tuple[str, str, str, str]] = Counter()
    for part in parts:
        parsed = parse_config(part.name)
        if parsed is not None and parsed[0] != QRELS_KIND:
            for wiki, dump in zip(part.table["wiki"].to_pylist(), part.table["dump"].to_pylist(), strict=True):
                counted[(parsed[1][0], wiki or "", dump or "not known", parsed[0])] += 1
    keys = sorted({key[:3] for key in counted})
    return [(lang, wiki, dump, counted[(lang, wiki, dump, DOCUMENTS)], counted[(lang, wiki, dump, QUERIES)])
            for lang, wiki, dump in keys]


def _config_rows(runs: Sequence[Run], keys: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    """(language, the run's settings among ``keys``) of each run, by language."""
    return [(run.cell, {key: run.config.get(key) for key in keys}) for run in sorted(runs, key=lambda r: r.cell)]


def _distinct(configs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each settings dict once, in order (the cells of one build read the same)."""
    unique: dict[str, dict[str, Any]] = {}
    for config in configs:
        unique.setdefault(repr(sorted(config.items())), config)
    return list(unique.values())


def render_card(facts: CollectionFacts, recipe: Recipe, parts: Sequence[Configuration], repo: str | None) -> str:
    """The whole ``README.md``."""
    data = front_matter(facts.name, facts.imported.get("licence") or LICENCE, [*facts.query_langs, *facts.doc_langs],
                        recipe.card.task_categories, tags(recipe), parts)
    first: dict[str, Configuration] = {}
    for part in parts:
        first.setdefault(kind(part), part)
    qrels = [run.config for run in facts.of_stage(QRELS.name)]
    card = DatasetCard.from_template(
        data, template_path=str(TEMPLATE), f=facts, repo=repo, summary=recipe.card.summary,
        recipe_title=recipe.card.title, configurations=parts,
        fields={k: field_docs(part, dict(FIELDS[k])) for k, part in first.items()},
        example={k: part.name for k, part in first.items()},
        first_split={k: part.split for k, part in first.items()},
        dumps=dumps(parts), multi=any("langs" in config for config in qrels),
        index=_config_rows(facts.of_stage(INDEX.name), ("backend", "k1", "b", "truncate", "stem")),
        mining=_distinct([run.config for run in facts.of_stage(RETRIEVAL.name)]),
        mining_langs=sorted(run.cell for run in facts.of_stage(RETRIEVAL.name)),
        splits=_distinct([{key: value for key, value in config.items() if key != "langs"} for config in qrels]),
        unattributed=unattributed(parts), citation=citation(facts.name, recipe.card.title, facts.updated, repo),
        recipe_citation=recipe.card.citation, number=_number, yes_no=lambda value: "yes" if value else "no")
    return str(card)


def unattributed(parts: Sequence[Configuration]) -> int:
    """Documents and queries that no dump names."""
    return sum(part.table["dump"].null_count for part in parts if kind(part) != QRELS_KIND)


def rai(facts: CollectionFacts, parts: Sequence[Configuration], recipe: Recipe) -> dict[str, Any]:
    """The Croissant Responsible-AI fields."""
    dates = sorted({dump for _, _, dump, _, _ in dumps(parts) if dump.isdigit()})
    tools = [f"{config.get('backend')} BM25 index of {lang} (k1 = {config.get('k1')}, b = {config.get('b')})"
             for lang, config in _config_rows(facts.of_stage(INDEX.name), ("backend", "k1", "b"))]
    return {
        "data_collection": (f"Wikipedia articles read from the dumps"
                            f" {', '.join(sorted({f'{w} {d}' for _, w, d, _, _ in dumps(parts)}))}; every article"
                            f" title is a query. {recipe.card.summary}"
                            + (f" Imported from {facts.imported.get('source')}." if facts.imported else "")),
        "data_collection_type": ["Secondary Data Analysis" if facts.imported else "Web Scraping"],
        "data_collection_timeframe": [datetime.datetime.strptime(d, "%Y%m%d") for d in dates] or None,
        "data_annotation_protocol": [
            "Labels are computed, not judged by people: a query's BM25 hits in its own language are normalised,"
            " split into Fisher-Jenks classes labelled 1-5, its own article labelled 6, and the labels carried to"
            " the other languages' articles of the same Wikidata topic."],
        "machine_annotation_tools": [*tools, "jenkspy (Fisher-Jenks natural breaks)"] if tools else None,
        "data_biases": ["BM25 labels reward words shared with the title: a relevant article that words it"
                        " differently gets a low label or none.",
                        "Wikipedia's coverage differs between languages; only topics with articles in both languages"
                        " of a direction are judged in it."],
        "data_limitations": [*(f"Qrels cell {cell} failed: {message}" for cell, message in facts.failed),
                             "No label was checked by a person."],
        "personal_sensitive_information": [
            "No personal data beyond what public Wikipedia articles say (articles about people name them)."],
        "data_use_cases": ["Evaluating and training cross-lingual retrieval: rank the documents of one language for"
                           " a query in another (NDCG@10 with exponential gain)."],
    }


def write(wh: Warehouse, name: str, folder: Path, repo: str | None, recipe: Recipe) -> tuple[list[Configuration], int]:
    """Collection ``name``'s Parquet files, card and Croissant metadata in ``folder`` (see the module notes)."""
    facts = collection_facts(wh, name)
    parts = configurations(wh, facts)
    write_parquet(folder, parts)
    (folder / CARD).write_text(render_card(facts, recipe, parts, repo), encoding="utf-8")
    write_metadata(
        folder, name, description=recipe.card.summary,
        citation=citation(name, recipe.card.title, facts.updated, repo),
        licence_url=facts.imported.get("licence_url") or LICENCE_URL, repo=repo, published=facts.updated,
        langs=sorted({*facts.query_langs, *facts.doc_langs}), keywords=tags(recipe),
        configurations=parts, fields=lambda c: FIELDS[kind(c)], keys={}, records=lambda c: RECORDS[kind(c)],
        rai=rai(facts, parts, recipe))
    return parts, unattributed(parts)


def _number(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"

