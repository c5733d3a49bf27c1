"""Writing systems: which Unicode scripts a language is written in, and which a text's letters are in.

A text too short for a language detector still shows its script.  A
Latin-script "Beijing" answering a Chinese question is not Chinese, and
"서울" answering a Korean one is Korean, because no other language writes
Hangul; a Latin-script "Berlin" answering a German question could be German,
English or any other Latin-script language.

The facts come from data, never from lists per language: a language's
script is its ISO 15924 code in the language table (``languages.csv`` and
its overrides); a letter's script is its Unicode Script property (through
the ``regex`` module, which reads the Unicode database); the language a
script stands for when nothing else is known is CLDR's likeliest one
(langcodes' likely subtags: Latin → en, Cyrillic → ru, Han → zh).
"""

from __future__ import annotations

from collections import Counter
from functools import cache, lru_cache

import langcodes
import regex

from tasks.errors import ConfigError
from tasks.text.codes import wiki_code
from tasks.text.languages import LanguageRule, all_rules

#: ISO 15924 codes that stand for several Unicode scripts (the standard's own definitions); every other code
#: of the language table names one Unicode script.
COMBINED: dict[str, tuple[str, ...]] = {
    "Jpan": ("Hani", "Hira", "Kana"),
    "Kore": ("Hang", "Hani"),
    "Hans": ("Hani",),
    "Hant": ("Hani",),
    "Hanb": ("Hani", "Bopo"),
}
#: Unicode's Common and Inherited scripts: letters any script uses (rare; digits and signs are not letters).
NEUTRAL = frozenset({"Zyyy", "Zinh"})


@cache
def _is_unicode_script(code: str) -> bool:
    try:
        regex.compile(rf"\p{{sc={code}}}")
    except regex.error:
        return False
    return True


def unicode_scripts(code: str) -> frozenset[str]:
    """The Unicode scripts (short names, which are ISO 15924 codes) ISO 15924 ``code`` covers; none if it is not
    a script Unicode knows."""
    scripts = COMBINED.get(code, (code,))
    return frozenset(script for script in scripts if _is_unicode_script(script))


@lru_cache(maxsize=4)
def _owners(rules: tuple[LanguageRule, ...]) -> dict[str, frozenset[str]]:
    """Unicode script → the table's languages written in it."""
    owners: dict[str, set[str]] = {}
    for rule in rules:
        for script in unicode_scripts(rule.script):
            owners.setdefault(script, set()).add(rule.lang)
    return {script: frozenset(langs) for script, langs in owners.items()}


def language_scripts(lang: str) -> frozenset[str]:
    """The Unicode scripts the language table writes ``lang`` in (any code :func:`wiki_code` reads: ``zh_tw``,
    ``pt-BR``, ``no``); a table script Unicode does not know is a ConfigError naming it."""
    rule = all_rules()[wiki_code(lang)]
    scripts = unicode_scripts(rule.script)
    if not scripts:
        raise ConfigError(f"language {rule.lang!r}: script {rule.script!r} is not a Unicode script (nor one of the"
                          f" ISO 15924 combinations {', '.join(COMBINED)}); fix its row in the language table")
    return scripts


def own_scripts(lang: str) -> frozenset[str]:
    """The scripts of ``lang`` that no other language of the table is written in (Korean: Hangul; Japanese:
    Hiragana and Katakana; Chinese: none, Han is Japanese and Korean too)."""
    owners = _owners(tuple(all_rules().values()))
    code = wiki_code(lang)
    return frozenset(script for script in language_scripts(lang) if owners.get(script, frozenset()) <= {code})


@lru_cache(maxsize=4)
def _letter_pattern(scripts: frozenset[str]) -> regex.Pattern[str]:
    """A letter, caught by the alternative named for its script, else by the last one (unnamed)."""
    named = "".join(rf"(?P<{script}>\p{{sc={script}}})|" for script in sorted(scripts))
    return regex.compile(rf"(?=\p{{L}})(?:{named}.)", regex.DOTALL)


def letter_scripts(text: str) -> Counter[str | None]:
    """How many letters of ``text`` each script holds; letters of a script no language of the table is written in
    count under None, and Common or Inherited letters not at all."""
    pattern = _letter_pattern(frozenset(_owners(tuple(all_rules().values()))) | NEUTRAL)
    counts: Counter[str | None] = Counter(match.lastgroup for match in pattern.finditer(text))
    for script in NEUTRAL:
        counts.pop(script, None)
    return counts


def likeliest_language(script: str | None) -> str | None:
    """CLDR's likeliest language written in Unicode ``script`` (``Latn`` → ``en``), or None when it has none."""
    if script is None:
        return None
    language = langcodes.Language.get(f"und-{script}").maximize().language
    return None if language in (None, "und") else language
