"""Per-language facts as data: one row per language in ``languages.csv``.

Stages never branch on a language code; they look up its rule here. Adding a
language means adding a row to the CSV (or a ``language_rules`` override file),
never editing code.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Literal

from tasks.errors import ConfigError

RULES_FILE = "languages.csv"


@dataclass(frozen=True)
class LanguageRule:
    """What the pipeline needs to know about one language.

    ``truncate_unit``/``truncate_limit`` follow the CLIRMatrix rule: about 600
    characters for scripts written without spaces, about 200 tokens otherwise.
    ``disambiguation_markers`` are template and category names (without the
    namespace prefix, compared case-insensitively) that mark disambiguation
    pages on that language's wiki.
    """

    lang: str
    name: str
    wiki: str
    script: str
    segmenter: Literal["whitespace", "jieba", "fugashi", "pythainlp"]
    sentence_terminators: str
    truncate_unit: Literal["chars", "tokens"]
    truncate_limit: int
    analyzer: str
    stemmer: str
    disambiguation_markers: tuple[str, ...]

    @property
    def needs_segmentation(self) -> bool:
        """True for scripts that do not separate words with spaces."""
        return self.segmenter != "whitespace"


def _parse_row(row: dict[str, str]) -> LanguageRule:
    try:
        return LanguageRule(
            lang=row["lang"].strip(),
            name=row["name"].strip(),
            wiki=row["wiki"].strip(),
            script=row["script"].strip(),
            segmenter=row["segmenter"].strip(),  # type: ignore[arg-type]
            sentence_terminators=row["sentence_terminators"],
            truncate_unit=row["truncate_unit"].strip(),  # type: ignore[arg-type]
            truncate_limit=int(row["truncate_limit"]),
            analyzer=row["analyzer"].strip(),
            stemmer=row["stemmer"].strip(),
            disambiguation_markers=tuple(m.strip() for m in row["disambiguation_markers"].split("|") if m.strip()),
        )
    except (KeyError, ValueError) as exc:
        raise ConfigError(f"{RULES_FILE}: bad row for {row.get('lang')!r}: {exc}") from exc


@lru_cache(maxsize=1)
def all_rules() -> dict[str, LanguageRule]:
    """Every known language rule, keyed by language code."""
    text = resources.files("tasks.text").joinpath(RULES_FILE).read_text(encoding="utf-8")
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return {rule.lang: rule for rule in map(_parse_row, rows)}


def rule_for(lang: str) -> LanguageRule:
    """The rule of one language; an unknown code is a configuration error that names it."""
    try:
        return all_rules()[lang]
    except KeyError:
        known = ", ".join(sorted(all_rules()))
        raise ConfigError(f"no language rule for {lang!r}; add a row to tasks/text/{RULES_FILE} (known: {known})") from None
