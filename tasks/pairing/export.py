"""The published CLIRMatrix file formats, so tools written for CLIRMatrix read our collections.

Layout under an output directory ``out``::

    out/<collection>/<query_lang>.<doc_lang>.<split>.jsonl   queries + judgements of one direction and split
    out/<collection>/docs/<lang>.tsv                         the documents of one language

``<collection>`` names the collection (e.g. ``bi-base``, ``bi-full``,
``multi``); the file ``en.de.test1.jsonl`` of collection ``bi-base`` is what
ir_datasets calls ``clirmatrix/de/bi139-base/en/test1`` (document language
first), and the language pair reads in query direction like CLIRMatrix's own
file names. Each JSON line is
``{"src_id": "<page id>", "src_query": "<title>", "tgt_results": [["<doc id>", <label>], ...]}``
with ids as strings and labels as ints 0-6; each TSV line is
``doc_id<TAB>text``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from tasks.errors import InputFormatError
from tasks.pairing.config import SELF_LABEL
from tasks.warehouse.atomic import atomic_text

#: Characters that some TSV readers take as a field or line break (str.splitlines breaks at all but TAB).
_BREAKS = re.compile("[\t\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
#: Language codes, collection and split names become path parts: keep them to plain characters.
_NAME = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class QueryRecord:
    """One query line: its page id and title, and its judged target documents in order."""

    src_id: str
    src_query: str
    tgt_results: tuple[tuple[str, int], ...]

    def __post_init__(self) -> None:
        if not isinstance(self.src_id, str) or not self.src_id:
            raise ValueError(f"src_id must be a non-empty string, got {self.src_id!r}")
        if not isinstance(self.src_query, str):
            raise ValueError(f"query {self.src_id}: src_query must be a string, got {self.src_query!r}")
        seen: set[str] = set()
        for position, (doc_id, label) in enumerate(self.tgt_results):
            if not isinstance(doc_id, str) or not doc_id:
                raise ValueError(f"query {self.src_id}: result {position}: doc id {doc_id!r} is not a non-empty string")
            if isinstance(label, bool) or not isinstance(label, int) or not 0 <= label <= SELF_LABEL:
                raise ValueError(
                    f"query {self.src_id}: result {position} ({doc_id}): label {label!r} is not an int 0-{SELF_LABEL}"
                )
            if doc_id in seen:
                raise ValueError(f"query {self.src_id}: document {doc_id} appears twice in tgt_results")
            seen.add(doc_id)


def _check_name(kind: str, value: str) -> str:
    if not _NAME.fullmatch(value):
        raise ValueError(f"{kind} {value!r} must be letters, digits, '_' or '-' (it becomes part of a file name)")
    return value


def qrels_path(out: Path, collection: str, query_lang: str, doc_lang: str, split: str) -> Path:
    """Where the queries of one direction and split go (see the module docstring)."""
    source = _check_name("query language", query_lang)
    target = _check_name("document language", doc_lang)
    return Path(out) / _check_name("collection", collection) / f"{source}.{target}.{_check_name('split', split)}.jsonl"


def docs_path(out: Path, collection: str, lang: str) -> Path:
    """Where the documents of one language go (see the module docstring)."""
    return Path(out) / _check_name("collection", collection) / "docs" / f"{_check_name('language', lang)}.tsv"


def write_qrels_jsonl(path: Path, records: Iterable[QueryRecord]) -> int:
    """Write query records as JSON Lines, atomically; returns the number of records."""
    count = 0
    with atomic_text(Path(path)) as handle:
        for record in records:
            line = {"src_id": record.src_id, "src_query": record.src_query,
                    "tgt_results": [[doc_id, label] for doc_id, label in record.tgt_results]}
            handle.write(orjson.dumps(line).decode() + "\n")
            count += 1
    return count


def write_docs_tsv(path: Path, docs: Iterable[tuple[str, str]]) -> int:
    """Write ``(doc_id, text)`` rows as ``doc_id<TAB>text`` lines, atomically; returns the row count.

    Tabs, line breaks and the other characters that TSV and line readers may
    split on are replaced by single spaces in the text: the format has no
    escaping, and the text is a truncated lead for retrieval, where a space
    reads the same. A doc id holding such a character is an error.
    """
    count = 0
    with atomic_text(Path(path)) as handle:
        for doc_id, text in docs:
            if not isinstance(doc_id, str) or not doc_id or _BREAKS.search(doc_id):
                raise ValueError(f"{path}: doc id {doc_id!r} must be a non-empty string without tabs or line breaks")
            handle.write(f"{doc_id}\t{_BREAKS.sub(' ', text)}\n")
            count += 1
    return count


def _record_from_json(obj: Any) -> QueryRecord:
    """A ``QueryRecord`` from one parsed JSON line; ValueError says what is wrong with it."""
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    missing = [field for field in ("src_id", "src_query", "tgt_results") if field not in obj]
    if missing:
        raise ValueError(f"missing field(s) {missing}")
    results = obj["tgt_results"]
    if not isinstance(results, list):
        raise ValueError(f"tgt_results must be a list, got {type(results).__name__}")
    pairs = []
    for position, pair in enumerate(results):
        if not isinstance(pair, list) or len(pair) != 2:
            raise ValueError(f"tgt_results[{position}] must be a [doc_id, label] pair, got {pair!r}")
        pairs.append((pair[0], pair[1]))
    return QueryRecord(obj["src_id"], obj["src_query"], tuple(pairs))


def read_qrels_jsonl(path: Path) -> Iterator[QueryRecord]:
    """The records of a queries file, in order; a bad line raises InputFormatError naming it.

    Records before the bad line have been yielded and stay usable.
    """
    with open(path, encoding="utf-8", newline="\n") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                yield _record_from_json(orjson.loads(line))
            except ValueError as error:  # orjson.JSONDecodeError is a ValueError
                raise InputFormatError(str(path), f"line {number}", str(error)) from error


def _tsv_row(line: str) -> tuple[str, str] | None:
    """``(doc_id, text)`` of one documents line, None when it has no tab or no id."""
    doc_id, tab, text = line.rstrip("\n").partition("\t")
    return (doc_id, text) if tab and doc_id else None


def read_docs_tsv(path: Path) -> Iterator[tuple[str, str]]:
    """``(doc_id, text)`` rows of a documents file; a line without a tab raises InputFormatError naming it."""
    with open(path, encoding="utf-8", newline="\n") as handle:
        for number, line in enumerate(handle, start=1):
            row = _tsv_row(line)
            if row is None:
                raise InputFormatError(str(path), f"line {number}", "expected 'doc_id<TAB>text'")
            yield row


def _doc_ids(path: Path, problems: list[str]) -> set[str]:
    """The doc ids of a documents file, noting its own problems (bad lines, repeated ids)."""
    ids: set[str] = set()
    with open(path, encoding="utf-8", newline="\n") as handle:
        for number, line in enumerate(handle, start=1):
            row = _tsv_row(line)
            if row is None:
                problems.append(f"{path}:{number}: expected 'doc_id<TAB>text'")
            elif row[0] in ids:
                problems.append(f"{path}:{number}: doc id {row[0]} appears twice")
            else:
                ids.add(row[0])
    return ids


def validate_export(directory: Path) -> list[str]:
    """Every problem found in an export (one collection, or a directory of collections); empty when sound.

    Checks each queries file's name, every JSON line (fields, types, labels
    0-6, no document twice in a list, no query twice in a file) and that each
    judged document is in the document file of the target language. Unlike the
    readers it does not stop at the first problem.
    """
    problems: list[str] = []
    docs_cache: dict[Path, set[str] | None] = {}
    for path in sorted(Path(directory).rglob("*.jsonl")):
        parts = path.name[: -len(".jsonl")].split(".")
        if len(parts) != 3 or not all(_NAME.fullmatch(part) for part in parts):
            problems.append(f"{path}: name is not <query_lang>.<doc_lang>.<split>.jsonl")
            continue
        tsv = path.parent / "docs" / f"{parts[1]}.tsv"
        if tsv not in docs_cache:
            docs_cache[tsv] = _doc_ids(tsv, problems) if tsv.is_file() else None
            if docs_cache[tsv] is None:
                problems.append(f"{path}: documents file {tsv} is missing")
        problems.extend(_problems_of_queries(path, docs_cache[tsv]))
    return problems


def _problems_of_queries(path: Path, known_docs: set[str] | None) -> list[str]:
    problems: list[str] = []
    queries: set[str] = set()
    with open(path, encoding="utf-8", newline="\n") as handle:
        for number, line in enumerate(handle, start=1):
            try:
                record = _record_from_json(orjson.loads(line))
            except ValueError as error:  # orjson.JSONDecodeError is a ValueError
                problems.append(f"{path}:{number}: {error}")
                continue
            if record.src_id in queries:
                problems.append(f"{path}:{number}: query {record.src_id} appears twice")
            queries.add(record.src_id)
            if known_docs is not None:
                absent = [doc_id for doc_id, _ in record.tgt_results if doc_id not in known_docs]
                if absent:
                    problems.append(
                        f"{path}:{number}: query {record.src_id}: doc id(s) {absent[:5]} not in the documents file"
                    )
    return problems
