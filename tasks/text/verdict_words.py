"""The words each language says "yes" and "no" with, generated from CLDR (``verdict_words.csv``).

Judges, the MKQA scorer and the QA checks read short verdicts ("はい",
"nein", "sí") in the question's language; English is read everywhere,
because models answer in English whatever they are asked in.  The table is
generated (:mod:`tasks.text.generate_verdict_words`), so adding a language
never means editing code.
"""

from __future__ import annotations

import csv
from functools import cache
from importlib import resources

from tasks.text.codes import wiki_code

WORDS_FILE = "verdict_words.csv"
ENGLISH = "en"


@cache
def _table() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    text = resources.files("tasks.text").joinpath(WORDS_FILE).read_text(encoding="utf-8")
    rows = csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))
    return {row["lang"]: (frozenset(filter(None, row["yes"].split("|"))), frozenset(filter(None, row["no"].split("|"))))
            for row in rows}


@cache
def yes_no_words(lang: str) -> tuple[frozenset[str], frozenset[str]]:
    """(yes words, no words) of ``lang`` (any code the language table resolves) and English, casefolded; a word
    that is "yes" in one and "no" in the other is in neither."""
    own_yes, own_no = _table().get(wiki_code(lang), (frozenset(), frozenset()))
    english_yes, english_no = _table()[ENGLISH]
    yes, no = own_yes | english_yes, own_no | english_no
    return yes - no, no - yes


def has_words(lang: str) -> bool:
    """Whether the table has yes/no words of ``lang`` itself (not only English's)."""
    return wiki_code(lang) in _table()
