"""Checks a published dataset folder meets whatever it holds — Croissant's records against the Parquet rows, two
publishes of one warehouse against each other — and a copy of one changed after publishing."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mlcroissant as mlc
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def plain(value: object, prefix: str) -> object:
    """A Croissant record as a plain row: field ids stripped to their names, bytes decoded, arrays as lists."""
    if isinstance(value, dict):
        return {key.removeprefix(prefix).rsplit("/", 1)[-1]: plain(member, prefix) for key, member in value.items()}
    if isinstance(value, (list, np.ndarray)):
        return [plain(member, prefix) for member in value]
    if isinstance(value, np.generic):
        return value.item()
    return value.decode("utf-8") if isinstance(value, bytes) else value


def assert_records_equal_rows(folder: Path) -> dict:
    """mlcroissant validates ``croissant.json`` and every record set's records equal its Parquet file's rows, one
    record set per data file; returns the Croissant document."""
    document = json.loads((folder / "croissant.json").read_text(encoding="utf-8"))
    dataset = mlc.Dataset(jsonld=folder / "croissant.json")  # validates, or raises
    files = {entry["@id"]: entry["contentUrl"] for entry in document["distribution"]}
    assert sorted(f"{record_set['@id']}.parquet" for record_set in document["recordSet"]) == sorted(files)
    assert sorted(files.values()) == sorted(path.relative_to(folder).as_posix()
                                            for path in folder.glob("data/*/*.parquet"))
    for record_set in document["recordSet"]:
        name = record_set["@id"]
        rows = pq.read_table(folder / files[f"{name}.parquet"]).to_pylist()
        records = [plain(record, f"{name}/") for record in dataset.records(record_set=name)]
        assert len(records) == len(rows) > 0, name
        assert records == rows, name
    return document


def assert_same_bytes(folder: Path, again: Path) -> list[Path]:
    """Two folders hold the same files with the same bytes; returns their paths, relative."""
    files = sorted(path.relative_to(folder) for path in folder.rglob("*") if path.is_file())
    assert files == sorted(path.relative_to(again) for path in again.rglob("*") if path.is_file())
    for name in files:
        assert (folder / name).read_bytes() == (again / name).read_bytes(), name
    return files


def changed_copy(folder: Path, copy: Path, data_file: str, column: str,
                 change: Callable[[list[Any]], list[Any]]) -> pa.Table:
    """``folder`` copied to ``copy`` with one column of one data file (relative path) replaced by ``change`` of its
    values; returns the file's table as it was published."""
    shutil.copytree(folder, copy)
    path = copy / data_file
    table = pq.read_table(path)
    index = table.schema.get_field_index(column)
    values = pa.array(change(table.column(column).to_pylist()), type=table.schema.field(column).type)
    pq.write_table(table.set_column(index, column, values), path)
    return table
