"""What every import shares: the ``import`` stage, the source's digest, the check that a line's key is not given
twice, and writing a benchmark in one transaction.

An import is a stage cell keyed by the benchmark's name: its fingerprint is
the source's content (every file of a directory), the recipe and the chosen
languages, so importing the same files again is a cache hit and a changed
file replaces the benchmark.  Everything is read and checked before the one
write transaction, so a bad line leaves the warehouse as it was.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable, Hashable, MutableMapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from tasks.catalog import IMPORT
from tasks.errors import ConfigError
from tasks.stage import ReadFields, StageRef, run_stage
from tasks.warehouse.db import Warehouse

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


DATASETS = ("mkqa", "eclektic", "xrag", "miracl", "clirmatrix")


def import_dataset(wh: Warehouse, dataset: str, source: Path, name: str | None, langs: Sequence[str] | None, *,
                   force: bool = False, run_id: str | None = None, **options: Any) -> StageRef:
    """Import ``source`` in ``dataset``'s published layout as benchmark (or collection) ``name``.

    Each layout is a module of this package with its ``RECIPE``, a ``write(wh, source, name, langs, fingerprint,
    **options)`` that reads, checks and writes everything, and optionally ``locate(source, name)`` → (source, name,
    stage cell) when the name or source needs resolving.  The write runs as the import stage's cell, unless the same
    source was imported with the same recipe, languages and options already.
    """
    if dataset not in DATASETS:
        raise ConfigError(f"unknown dataset {dataset!r}; choose one of {', '.join(DATASETS)}")
    if not source.exists():
        raise ConfigError(f"{source}: no such file or directory")
    module = importlib.import_module(f"tasks.imports.{dataset}")
    source, name, cell = module.locate(source, name) if hasattr(module, "locate") else (source, name, name)
    read = ReadFields(values={"recipe": module.RECIPE, "source": source_digest(source),
                              "langs": sorted(langs) if langs else None, **options})
    chosen = list(langs) if langs else None
    return run_stage(wh, IMPORT, cell, read, {}, lambda fp: module.write(wh, source, name, chosen, fp, **options),
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
                    instances: Sequence[Sequence[Any]], items: Sequence[Sequence[Any]] = ()) -> list[str]:
    """Replace benchmark ``name`` by these ``instances`` rows (and ``qa_items`` rows, for recipes whose
    metrics read them — XRAG's question types, ECLEKTIC's source context), in one transaction; return its
    languages.

    The benchmark's languages are those its instances are in, never merely those chosen: a chosen language the
    source gave no instance in is no language of the benchmark (an evaluation would look for it in vain).
    """
    config = json.dumps({"source": str(source), "fingerprint": fp})
    with wh.transaction() as cur:
        cur.execute("DELETE FROM instances WHERE benchmark = ?", [name])
        cur.execute("DELETE FROM qa_items WHERE benchmark = ?", [name])
        if instances:
            cur.executemany(f"INSERT INTO instances VALUES ({', '.join('?' * len(instances[0]))})", instances)
        if items:
            cur.executemany(f"INSERT INTO qa_items VALUES ({', '.join('?' * len(items[0]))})", items)
        langs = [lang for (lang,) in cur.execute("SELECT DISTINCT lang FROM instances WHERE benchmark = ? ORDER BY 1",
                                                 [name]).fetchall()]
        cur.execute("INSERT OR REPLACE INTO qa_benchmarks VALUES (?, ?, ?, ?, ?, now())",
                    [name, recipe, langs, f"import:{source.name}", config])
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
