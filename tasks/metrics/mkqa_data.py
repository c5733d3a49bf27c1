"""MKQA's files: the gold annotations (``mkqa.jsonl.gz``) and per-language prediction files, read strictly.

Example ids are signed 64-bit integers; JSON readers that turn numbers into
floats would silently merge neighbouring ids, so ids are kept as the exact
decimal text of the integer and anything else (a float, a string of
letters) is refused with the file and line.  Gold answers keep their type,
entity and aliases, which the improved scoring uses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from tasks.errors import ConfigError
from tasks.json_lines import read_typed_lines

MKQA_LANGUAGES = ("ar", "da", "de", "en", "es", "fi", "fr", "he", "hu", "it", "ja", "km", "ko", "ms", "nl", "no", "pl",
                  "pt", "ru", "sv", "th", "tr", "vi", "zh_cn", "zh_hk", "zh_tw")
NO_ANSWER_TYPES = frozenset({"long_answer", "unanswerable"})


class GoldAnswer(msgspec.Struct, frozen=True, gc=False):
    """One gold answer of one language: ``text`` is None for long_answer and unanswerable.

    ``gc=False`` here and on the other records: they hold only strings and numbers, so they can form no
    reference cycle, and a gold file makes hundreds of thousands of them — untracked, they cost the
    garbage collector nothing (reading the gold file twice as fast).
    """

    type: str
    text: str | None = None
    entity: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class GoldExample:
    """One MKQA example: its id, the English query, the query and answers per language."""

    example_id: str
    query: str
    queries: dict[str, str]
    answers: dict[str, tuple[GoldAnswer, ...]]


class Prediction(msgspec.Struct, gc=False):
    """One prediction, keyed by its example id: ``prediction`` None or "" means no answer; ``binary_answer``
    (yes | no, lower case) overrides it."""

    prediction: str | None = None
    binary_answer: str | None = None
    no_answer_prob: float = 0.0


class _GoldLine(msgspec.Struct, gc=False):
    """One line of ``mkqa.jsonl.gz`` as published; types are checked while decoding."""

    example_id: int | str | float | bool  # anything but an integer is refused with its line, by example_id()
    queries: dict[str, str]
    answers: dict[str, tuple[GoldAnswer, ...]]
    query: str | None = None


class _PredictionLine(Prediction):
    """One line of an official predictions file: a prediction and the id it is for."""

    example_id: int | str | float | bool | None = None  # as in _GoldLine


def example_id(value: Any, where: str) -> str:
    """The exact decimal text of an integer id; floats, booleans and non-numeric strings are refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return str(int(value))
    raise ConfigError(f"{where}: example_id {value!r} is not an integer")


def read_gold(path: Path) -> list[GoldExample]:
    """Every example of an MKQA annotation file (``.jsonl`` or ``.jsonl.gz``), in file order."""
    examples, seen = [], set()
    for number, record in read_typed_lines(path, _GoldLine, "gold example"):
        where = f"{path} line {number}"
        identifier = example_id(record.example_id, where)
        if identifier in seen:
            raise ConfigError(f"{where}: example_id {identifier} appears twice")
        seen.add(identifier)
        if not all(record.answers.values()):
            raise ConfigError(f"{where}: a language has no answer (long_answer/unanswerable are answers too)")
        examples.append(GoldExample(identifier, record.query or "", record.queries, record.answers))
    return examples


def read_predictions(path: Path) -> dict[str, Prediction]:
    """One language's predictions by example id, in file order (the official threshold sweep breaks ties by it)."""
    predictions: dict[str, Prediction] = {}
    for number, record in read_typed_lines(path, _PredictionLine, "prediction"):
        identifier = record.example_id
        # the common case inline (this loop runs once per prediction); example_id() checks the rest
        identifier = str(identifier) if type(identifier) is int else example_id(identifier, f"{path} line {number}")
        if record.binary_answer is not None:
            record.binary_answer = record.binary_answer.lower() or None
            if record.binary_answer not in (None, "yes", "no"):
                raise ConfigError(f"{path} line {number}: binary_answer {record.binary_answer!r} is not yes, no or null")
        predictions[identifier] = record
    return predictions


def prediction_files(source: Path, langs: list[str]) -> dict[str, Path]:
    """``DIR/<lang>.jsonl`` for each language, or one FILE for a single language; a missing file is an error."""
    if source.is_dir():
        files = {lang: source / f"{lang}.jsonl" for lang in langs}
        missing = [str(path) for path in files.values() if not path.is_file()]
        if missing:
            raise ConfigError(f"no predictions file for {', '.join(missing)}")
        return files
    if len(langs) != 1:
        raise ConfigError(f"{source}: one predictions file scores one language; give a directory of <lang>.jsonl for"
                          f" {', '.join(langs)}")
    if not source.is_file():
        raise ConfigError(f"{source}: no such predictions file")
    return {langs[0]: source}
