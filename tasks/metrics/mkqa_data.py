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

from tasks.errors import ConfigError
from tasks.json_lines import read_json_lines

MKQA_LANGUAGES = ("ar", "da", "de", "en", "es", "fi", "fr", "he", "hu", "it", "ja", "km", "ko", "ms", "nl", "no", "pl",
                  "pt", "ru", "sv", "th", "tr", "vi", "zh_cn", "zh_hk", "zh_tw")
NO_ANSWER_TYPES = frozenset({"long_answer", "unanswerable"})


@dataclass(frozen=True)
class GoldAnswer:
    """One gold answer of one language: ``text`` is None for long_answer and unanswerable."""

    type: str
    text: str | None
    entity: str | None = None
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class GoldExample:
    """One MKQA example: its id, the English query, the query and answers per language."""

    example_id: str
    query: str
    queries: dict[str, str]
    answers: dict[str, tuple[GoldAnswer, ...]]


@dataclass(frozen=True)
class Prediction:
    """One prediction line: ``prediction`` None or "" means no answer; ``binary_answer`` overrides it."""

    example_id: str
    prediction: str | None
    binary_answer: str | None
    no_answer_prob: float


def example_id(value: Any, where: str) -> str:
    """The exact decimal text of an integer id; floats, booleans and non-numeric strings are refused."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return str(int(value))
    raise ConfigError(f"{where}: example_id {value!r} is not an integer")


def _answer(raw: Any, where: str) -> GoldAnswer:
    if not isinstance(raw, dict) or "type" not in raw:
        raise ConfigError(f"{where}: an answer is an object with a type")
    text = raw.get("text")
    aliases = raw.get("aliases") or []
    if text is not None and not isinstance(text, str) or not all(isinstance(a, str) for a in aliases):
        raise ConfigError(f"{where}: answer text and aliases must be strings")
    return GoldAnswer(str(raw["type"]), text, raw.get("entity"), tuple(aliases))


def read_gold(path: Path) -> list[GoldExample]:
    """Every example of an MKQA annotation file (``.jsonl`` or ``.jsonl.gz``), in file order."""
    examples, seen = [], set()
    for number, record in read_json_lines(path, "line"):
        where = f"{path} line {number}"
        for key in ("example_id", "answers", "queries"):
            if key not in record:
                raise ConfigError(f"{where}: missing {key}")
        identifier = example_id(record["example_id"], where)
        if identifier in seen:
            raise ConfigError(f"{where}: example_id {identifier} appears twice")
        seen.add(identifier)
        answers = {lang: tuple(_answer(a, f"{where} answers[{lang}]") for a in items)
                   for lang, items in record["answers"].items()}
        if any(not items for items in answers.values()):
            raise ConfigError(f"{where}: a language has no answer (long_answer/unanswerable are answers too)")
        examples.append(GoldExample(identifier, str(record.get("query") or ""), dict(record["queries"]), answers))
    return examples


def read_predictions(path: Path) -> dict[str, Prediction]:
    """One language's predictions by example id, in file order (the official threshold sweep breaks ties by it)."""
    predictions: dict[str, Prediction] = {}
    for number, record in read_json_lines(path, "line"):
        where = f"{path} line {number}"
        identifier = example_id(record.get("example_id"), where)
        binary = record.get("binary_answer")
        binary = binary.lower() if isinstance(binary, str) and binary else None
        if binary not in (None, "yes", "no"):
            raise ConfigError(f"{where}: binary_answer {record.get('binary_answer')!r} is not yes, no or null")
        probability = record.get("no_answer_prob", 0)
        if isinstance(probability, bool) or not isinstance(probability, (int, float)):
            raise ConfigError(f"{where}: no_answer_prob {probability!r} is not a number")
        prediction = record.get("prediction")
        if prediction is not None and not isinstance(prediction, str):
            raise ConfigError(f"{where}: prediction {prediction!r} is not a string or null")
        predictions[identifier] = Prediction(identifier, prediction, binary, float(probability))
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
