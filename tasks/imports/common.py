"""What every import shares: the importers by name, the ``import`` stage, the source's digest, the check that a
line's key is not given twice, and writing a benchmark in one transaction.

An import is a stage cell keyed by the benchmark's name: its fingerprint is
the source's content (every file of a directory), the recipe and the chosen
languages, so importing the same files again is a cache hit and a changed
file replaces the benchmark.  Everything is read and checked before the one
write transaction, so a bad line leaves the warehouse as it was.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Hashable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from tasks.catalog import IMPORT
from tasks.errors import ConfigError
from tasks.plugins import Kind, register_lazy
from tasks.recipe import RECIPES
from tasks.stage import ReadFields, StageOutput, StageRef, run_stage
from tasks.warehouse.db import Warehouse
from tasks.warehouse.records import InstanceRecord, ItemRecord, insert_records, upsert_benchmark

T = TypeVar("T")


def once(seen: MutableMapping[Hashable, int], key: Hashable, number: int, path: Path, what: str) -> None:
    """Record that ``key`` is on line ``number``; an error naming both lines if it was on an earlier one (which
    line would the producer have meant?)."""
    if key in seen:
        raise ConfigError(f"{path} line {number}: {what} again (first on line {seen[key]})")
    seen[key] = number


def unique_lines(lines: Sequence[tuple[int, T]], key: Callable[[T], Hashable], path: Path,
                 what: str) -> dict[Hashable, tuple[int, T]]:
    """(line number, line) by ``key(line)``, in file order; a key given twice is an error naming both lines."""
    seen: dict[Hashable, int] = {}
    for number, line in lines:
        once(seen, key(line), number, path, f"{what} {key(line)!r}")
    return {key(line): (number, line) for number, line in lines}


class Importer(Protocol):
    """A published dataset's layout: how its files become a benchmark (or a CLIR collection)."""

    recipe: str
    default_name: str | None  # the benchmark's name when none is given (None: ``locate`` finds one)
    options: tuple[str, ...]  # the keyword options ``write`` takes besides the common ones (MIRACL: its split)

    def locate(self, source: Path, name: str | None) -> tuple[Path, str, str]:
        """(what to read, the benchmark's name, the import stage's cell) of ``source`` imported as ``name``."""
        ...

    def write(self, wh: Warehouse, source: Path, name: str, langs: list[str] | None, fp: str,
              **options: Any) -> StageOutput:
        """Read and check everything, then write the benchmark (all languages when ``langs`` is None)."""
        ...


def as_given(source: Path, name: str | None) -> tuple[Path, str, str]:
    """The source and name as given, the name as the stage cell: what a single-file layout needs."""
    if name is None:
        raise ConfigError(f"{source}: give the benchmark a name (this dataset has no default)")
    return source, name, name


@dataclass(frozen=True)
class DatasetLayout:
    """An :class:`Importer` made of a module's ``RECIPE`` and functions; ``locate`` is :func:`as_given` unless
    the name or the source needs resolving."""

    recipe: str
    write: Callable[..., StageOutput]
    default_name: str | None = None
    locate: Callable[[Path, str | None], tuple[Path, str, str]] = as_given
    options: tuple[str, ...] = ()


#: the built-in layouts, each a module of this package whose ``IMPORTER`` is loaded on first use; another package
#: adds one with an entry point in the group babelbench.importer
DATASETS = ("mkqa", "eclektic", "xrag", "miracl", "clirmatrix", "hf")
IMPORTERS: Kind[Importer] = Kind("importer", Importer, "dataset")
for _dataset in DATASETS:
    register_lazy(IMPORTERS.name, _dataset, f"tasks.imports.{_dataset}:IMPORTER")


def import_cell(dataset: str, source: Path, name: str | None) -> tuple[str, str]:
    """(name, stage cell) of importing ``source`` as ``dataset``; a missing or unreadable source is a ConfigError now."""
    _, _, name, cell = _located(dataset, source, name)
    return name, cell


def _located(dataset: str, source: Path, name: str | None) -> tuple[Importer, Path, str, str]:
    """The layout, and where it reads ``source``, under which name and stage cell (the layout's default name when
    none is given)."""
    importer = IMPORTERS.get(dataset)
    if not source.exists():
        raise ConfigError(f"{source}: no such file or directory")
    return importer, *importer.locate(source, name or importer.default_name)


def import_dataset(wh: Warehouse, dataset: str, source: Path, name: str | None, langs: Sequence[str] | None, *,
                   force: bool = False, run_id: str | None = None, **options: Any) -> StageRef:
    """Import ``source`` in ``dataset``'s published layout (an :class:`Importer`) as benchmark (or collection)
    ``name``.

    The layout's ``write`` reads, checks and writes everything; it runs as the import stage's cell, unless the same
    source was imported with the same recipe, languages and options already.
    """
    importer, source, name, cell = _located(dataset, source, name)
    read = ReadFields(values={"recipe": importer.recipe, "source": source_digest(source),
                              "langs": sorted(langs) if langs else None, **options})
    chosen = list(langs) if langs else None
    return run_stage(wh, IMPORT, cell, read, {}, lambda fp: importer.write(wh, source, name, chosen, fp, **options),
                     force=force, run_id=run_id)


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def source_digest(source: Path) -> str:
    """sha256 of a file, or of a directory's files (relative paths and contents, in sorted order)."""
    if source.is_file():
        return file_digest(source)
    if not source.is_dir():
        raise ConfigError(f"{source}: no such file or directory")
    digest = hashlib.sha256()
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        digest.update(f"{path.relative_to(source)}\0{file_digest(path)}\0".encode())
    return digest.hexdigest()


def write_benchmark(wh: Warehouse, name: str, recipe: str, source: Path, fp: str,
                    instances: Sequence[InstanceRecord], items: Sequence[ItemRecord] = (),
                    terms: Mapping[str, str] | None = None) -> list[str]:
    """Replace benchmark ``name`` by these instances (and items, for recipes whose metrics read them — XRAG's
    question types, ECLEKTIC's source context), written by column name in one transaction; return its languages.
    The recipe must be registered (:mod:`tasks.recipe`).

    The benchmark's languages are those its instances are in, never merely those chosen: a chosen language the
    source gave no instance in is no language of the benchmark (an evaluation would look for it in vain).
    ``terms``: the source dataset's licence and citation, kept in the benchmark's config for the card a publish
    writes.
    """
    RECIPES.require(recipe)
    config = json.dumps({"source": str(source), "fingerprint": fp, **(terms or {})})
    with wh.transaction() as cur:
        cur.execute("DELETE FROM instances WHERE benchmark = ?", [name])
        cur.execute("DELETE FROM qa_items WHERE benchmark = ?", [name])
        insert_records(cur, "instances", instances)
        insert_records(cur, "qa_items", items)
        langs = [lang for (lang,) in cur.execute("SELECT DISTINCT lang FROM instances WHERE benchmark = ? ORDER BY 1",
                                                 [name]).fetchall()]
        upsert_benchmark(cur, name, recipe, langs, f"import:{source.name}", config)
    return langs


def langs_text(created: Sequence[str], chosen: Sequence[str]) -> str:
    """The languages an import created, for its message, naming the chosen ones it created nothing in."""
    missing = sorted(set(chosen) - set(created))
    return (", ".join(created) or "no language") + (f" (nothing in {', '.join(missing)})" if missing else "")


def chosen_langs(available: Sequence[str], wanted: Sequence[str] | None, source: Path,
                 why: str = "the source has no data in it") -> list[str]:
    """The languages to import: ``wanted`` (each must be available, else ``why`` it is not) or all available ones."""
    if not wanted:
        return sorted(available)
    missing = sorted(set(wanted) - set(available))
    if missing:
        raise ConfigError(f"{source}: {', '.join(missing)} cannot be imported ({why});"
                          f" available: {', '.join(sorted(available)) or 'none'}")
    return sorted(set(wanted))
