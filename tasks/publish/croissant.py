"""``croissant.json``: the folder as Croissant 1.0 metadata with its Responsible-AI fields, built with mlcroissant.

Each Parquet file is a ``FileObject`` (with its sha256); each configuration's split a ``RecordSet``
(``<configuration>/<split>``) whose fields extract the file's columns (a list of structs as a repeated field with
one sub-field per key, a list of values as a repeated field), each described as the card describes it
(:func:`write_metadata`, which any published folder uses).  For a benchmark the RAI fields say how the data was
collected (the dumps), how it was annotated (which models wrote what, and the share people reviewed), its known
biases and limitations, and that it holds no personal information beyond what public Wikipedia articles say.
mlcroissant validates the metadata it builds: a problem is an error here, not in a reader's hands.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import mlcroissant as mlc
import pyarrow as pa

from tasks.errors import BabelbenchError
from tasks.publish.card import tags
from tasks.publish.layout import CROISSANT, DOCUMENT_FIELDS, LICENCE_URL, SOURCE_FIELDS, SOURCES, data_file
from tasks.publish.provenance import Provenance
from tasks.publish.rows import Configuration

CONFORMS_TO = ["http://mlcommons.org/croissant/1.0", "http://mlcommons.org/croissant/RAI/1.0"]
PARQUET = "application/x-parquet"
_SCALARS = ((pa.types.is_string, mlc.DataType.TEXT), (pa.types.is_integer, mlc.DataType.INTEGER),
            (pa.types.is_floating, mlc.DataType.FLOAT), (pa.types.is_boolean, mlc.DataType.BOOL))


def _data_type(kind: pa.DataType, where: str) -> Any:
    for test, data_type in _SCALARS:
        if test(kind):
            return data_type
    raise BabelbenchError(f"{where}: no Croissant data type for Arrow type {kind}")


def _field(record_set: str, file_object: str, column: pa.Field, meaning: str, keys: Mapping[str, str]) -> mlc.Field:
    """A record set's field extracting ``column``; a list of structs is repeated, with one sub-field per key, and a
    list of values is repeated."""
    where = f"{record_set}/{column.name}"
    source = mlc.Source(file_object=file_object, extract=mlc.Extract(column=column.name))
    kind = column.type
    if pa.types.is_list(kind) and pa.types.is_struct(kind.value_type):
        sub_fields = [mlc.Field(
            id=f"{where}/{key.name}", name=key.name, description=keys.get(key.name, "(not described by its recipe)"),
            data_types=[_data_type(key.type, f"{where}/{key.name}")],
            source=mlc.Source(file_object=file_object, extract=mlc.Extract(column=column.name),
                              transforms=[mlc.Transform(json_path=key.name)])) for key in kind.value_type]
        return mlc.Field(id=where, name=column.name, description=meaning, repeated=True, sub_fields=sub_fields)
    if pa.types.is_list(kind):
        return mlc.Field(id=where, name=column.name, description=meaning, repeated=True,
                         data_types=[_data_type(kind.value_type, where)], source=source)
    return mlc.Field(id=where, name=column.name, description=meaning, data_types=[_data_type(kind, where)],
                     source=source)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def rai(p: Provenance) -> dict[str, Any]:
    """The Responsible-AI fields, from the warehouse's facts."""
    dumps = sorted({f"{wiki or lang} dump {dump}" for lang, wiki, dump, _ in p.dumps})
    models = [f"{m.name} ({m.backend} {m.model}): {', '.join(m.roles)}; terms: {m.terms}" for m in p.models]
    ok = sum(q["ok"] for q in p.quality)
    reviewed = sum(q["reviewed"] for q in p.quality)
    passed = sum(q["passed"] for q in p.quality)
    return {
        "data_collection": (f"Text of Wikipedia articles read from the dumps {', '.join(dumps) or '(none recorded)'}"
                            f"{'; imported from ' + p.origin[7:] if p.origin.startswith('import:') else ''}."
                            f" {p.recipe.card.summary}"),
        "data_collection_type": ["Web Scraping" if not p.origin.startswith("import:") else "Secondary Data Analysis"],
        "data_collection_timeframe": [datetime.datetime.strptime(dump, "%Y%m%d") for dump in
                                      sorted({dump for _, _, dump, _ in p.dumps})] or None,
        "data_annotation_protocol": [
            "Questions and answers written by the models listed in machine_annotation_tools, from the articles"
            " named in each row's sources" if p.models else "Questions and answers taken from the imported dataset",
            f"Quality control: {passed} of {ok} written items passed the checks; people reviewed {reviewed} of"
            f" {ok} ({100 * reviewed / ok:.1f}%)." if ok else "No quality-control record in the warehouse."],
        "machine_annotation_tools": models or None,
        "data_biases": ["Wikipedia's coverage and point of view differ between languages; questions can only ask"
                        " what the articles of each language say.",
                        "Model-written questions and translations carry the writing model's biases."],
        "data_limitations": [*(f"Language {lang} dropped: {why}" for lang, why in p.dropped),
                             *(f"Stage {stage} failed on {cell}: {message}" for stage, cell, message in p.failed_cells)]
                            or None,
        "personal_sensitive_information": [
            "No personal data beyond what public Wikipedia articles say (articles about people name them)."],
        "data_use_cases": ["Evaluating cross-lingual retrieval-augmented generation and question answering."],
    }


def write_metadata(folder: Path, name: str, *, description: str, citation: str, licence_url: str,
                   repo: str | None, published: str, langs: Sequence[str], keywords: Sequence[str],
                   configurations: Sequence[Configuration], fields: Callable[[Configuration], Mapping[str, str]],
                   keys: Mapping[str, Mapping[str, str]], records: Callable[[Configuration], str],
                   rai: Mapping[str, Any]) -> mlc.Metadata:
    """Build, validate and write ``croissant.json`` for the Parquet files already in ``folder``; returns it.

    ``fields(c)``: what each column of configuration ``c`` means; ``keys``: per list-of-structs column, what each
    key means; ``records(c)``: what one record of ``c`` is; ``published``: the day it was last written
    (YYYY-MM-DD); ``rai``: the Responsible-AI properties (mlcroissant's names).
    """
    distribution, record_sets = [], []
    for c in configurations:
        path = data_file(c.name, c.split)
        file_object, record_set = f"{c.name}/{c.split}.parquet", f"{c.name}/{c.split}"
        distribution.append(mlc.FileObject(id=file_object, name=file_object, content_url=path,
                                           encoding_formats=[PARQUET], sha256=_sha256(folder / path)))
        meanings = fields(c)
        record_sets.append(mlc.RecordSet(
            id=record_set, name=record_set, description=f"Configuration {c.name}, split {c.split}: {records(c)}",
            fields=[_field(record_set, file_object, column, meanings.get(column.name, "(not described by its recipe)"),
                           keys.get(column.name, {})) for column in c.table.schema]))
    metadata = mlc.Metadata(
        name=name, description=description, conforms_to=CONFORMS_TO, cite_as=citation, license=[licence_url],
        url=f"https://huggingface.co/datasets/{repo}" if repo else None,
        date_published=datetime.datetime.strptime(published, "%Y-%m-%d"), in_language=sorted(langs),
        keywords=list(keywords), distribution=distribution, record_sets=record_sets, **rai)
    problems = metadata.issues.errors
    if problems:
        raise BabelbenchError(f"{folder}: the Croissant metadata does not validate: {'; '.join(sorted(problems))}")
    text = json.dumps(metadata.to_json(), indent=2, ensure_ascii=False, default=str) + "\n"
    (folder / CROISSANT).write_text(text, encoding="utf-8")
    return metadata


def write_croissant(folder: Path, p: Provenance, configurations: Sequence[Configuration], fields: Mapping[str, str],
                    citation: str, licence_url: str | None, repo: str | None) -> mlc.Metadata:
    """A benchmark's ``croissant.json`` (one record per instance; ``fields``: what each column means)."""
    return write_metadata(
        folder, p.benchmark, description=p.recipe.card.summary, citation=citation,
        licence_url=licence_url or LICENCE_URL, repo=repo, published=p.updated, langs=p.langs,
        keywords=tags(p.recipe), configurations=configurations, fields=lambda _: fields,
        keys={SOURCES: SOURCE_FIELDS, "documents": {**DOCUMENT_FIELDS, **p.recipe.card.fields}},
        records=lambda _: "one record per instance.", rai=rai(p))
