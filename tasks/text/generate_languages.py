"""Regenerate ``languages.csv``: one rule row for every Wikipedia language edition.

Run ``python -m tasks.text.generate_languages`` (``make languages``).  The output depends only on the
pinned versions of the sources its header names, so it regenerates byte for byte
(``tests/text/test_language_table.py`` checks that).  The facts those sources lack or get wrong for a wiki
are the named tables below (``WIKI_TAGS``, ``WIKI_SCRIPTS``, ``DBNAME_EXCEPTIONS``,
``PREFERRED_SEGMENTERS``), never edits of the output.

See ``docs/languages.md``, "The language table".
"""

from __future__ import annotations

import argparse
import csv
import io
import re
from importlib import metadata, resources
from pathlib import Path

from tasks.text.languages import COLUMNS, ES_BUILTIN_ANALYZERS, RULES_FILE, default_rule

RULES_PATH = Path(__file__).with_name(RULES_FILE)
SOURCES = ("pywikibot", "langcodes", "language-data", "PyStemmer")

#: Dictionary segmenters that beat ICU's word break for their language.
PREFERRED_SEGMENTERS = {"zh": "jieba", "ja": "fugashi"}
#: Wiki codes whose language tag neither pywikibot's aliases nor langcodes give.
WIKI_TAGS = {"simple": "en", "map-bms": "jv-x-bms", "roa-tara": "nap-x-tara", "cbk-zam": "cbk", "nds-nl": "nds-NL"}
#: Names for the tags above where CLDR's name would mislead.
WIKI_NAMES = {"simple": "Simple English", "be-tarask": "Belarusian (Taraškievica)", "map-bms": "Banyumasan",
              "roa-tara": "Tarantino"}
#: Wikis written in another script than CLDR's likely script for their language.
WIKI_SCRIPTS = {
    "zh-min-nan": "Latn",  # Pe̍h-ōe-jī
    "hak": "Latn",  # Pha̍k-fa-sṳ
    "cdo": "Latn",  # Bàng-uâ-cê
    "blk": "Mymr",  # Pa'O in the Myanmar script
    "mni": "Mtei",  # Meetei Mayek
    "zh-classical": "Hant",
    "zh-yue": "Hant",
    "azb": "Arab",  # South Azerbaijani is written in the Arabic script in Iran
    "anp": "Deva",  # Angika
    "xal": "Cyrl",  # Kalmyk
    "rki": "Mymr",  # Rakhine
    "pi": "Deva",  # the Pali wiki writes Pali in Devanagari
}
#: The database name of a wiki when it is not the code with ``_`` for ``-`` plus ``wiki``.
DBNAME_EXCEPTIONS = {"be-tarask": "be_x_oldwiki"}
_LANGUAGE_SUBTAG = re.compile(r"^[a-z]{2,3}$")


def _wikipedia_family() -> object:
    import os

    os.environ.setdefault("PYWIKIBOT_NO_USER_CONFIG", "2")  # read the family file only; no user config needed
    from pywikibot.families.wikipedia_family import Family

    return Family()


def _tags(codes: list[str], aliases: dict[str, str]) -> dict[str, str]:
    """Each wiki code's language tag (see the module notes)."""
    import langcodes

    tags = {code: code for code in codes}
    for alias, code in sorted(aliases.items()):
        if code in tags and _LANGUAGE_SUBTAG.match(alias) and langcodes.tag_is_valid(alias) \
                and langcodes.standardize_tag(alias) != code:
            tags[code] = alias
    return tags | {code: tag for code, tag in WIKI_TAGS.items() if code in tags}


def _fallback_markers() -> dict[str, str]:
    text = resources.files("tasks.text").joinpath("disambiguation_templates.csv").read_text(encoding="utf-8")
    return {row["lang"]: row["disambiguation_markers"]
            for row in csv.DictReader(line for line in text.splitlines() if not line.startswith("#"))}


def _by_language(names: set[str]) -> dict[str, str]:
    """Analyzer or stemmer names keyed by the language subtag CLDR finds for them (``bengali`` -> ``bn``)."""
    import langcodes

    found = {}
    for name in sorted(names):
        try:
            found.setdefault(langcodes.find(name).language, name)
        except LookupError:  # not a language name: porter, cjk, brazilian
            continue
    return found


def rows() -> list[dict[str, str]]:
    """The generated rule rows, sorted by wiki code."""
    import langcodes
    import Stemmer


    family = _wikipedia_family()
    codes = sorted(family.codes)  # type: ignore[attr-defined]
    tags = _tags(codes, dict(family.code_aliases))  # type: ignore[attr-defined]
    stemmers = _by_language(set(Stemmer.algorithms()))
    analyzers = _by_language(set(ES_BUILTIN_ANALYZERS))
    markers = _fallback_markers()
    table = []
    for code in codes:
        language = langcodes.Language.get(tags[code])
        script = WIKI_SCRIPTS.get(code) or language.maximize().script or "Zyyy"
        derived = default_rule(code, script)  # segmentation and truncation from the script, as for an override
        table.append({
            "lang": code,
            "name": WIKI_NAMES.get(code) or language.display_name("en"),
            "wiki": DBNAME_EXCEPTIONS.get(code, code.replace("-", "_") + "wiki"),
            "bcp47": tags[code],
            "script": script,
            "segmenter": PREFERRED_SEGMENTERS.get(code, derived.segmenter),
            "truncate_unit": derived.truncate_unit,
            "truncate_limit": str(derived.truncate_limit),
            "analyzer": analyzers.get(code, analyzers.get(str(language.language), "standard")),
            "stemmer": stemmers.get(code, stemmers.get(str(language.language), "")),
            "disambiguation_markers": markers.get(code, "|".join(derived.disambiguation_markers)),
        })
    return table


def render(table: list[dict[str, str]]) -> str:
    """The CSV text: a header naming the command and the source versions, then the rows."""
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in SOURCES)
    out = io.StringIO()
    out.write("# Generated by `python -m tasks.text.generate_languages` (make languages); do not edit by hand —\n")
    out.write("# override rows in $BABELBENCH_HOME/languages.csv or the file named by BABELBENCH_LANGUAGES instead.\n")
    out.write(f"# Sources: {versions}.\n")
    writer = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=RULES_PATH)
    args = parser.parse_args()
    table = rows()
    text = render(table)
    temporary = args.output.with_name(args.output.name + ".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(args.output)
    print(f"{args.output}: {len(table)} languages")


if __name__ == "__main__":
    main()
