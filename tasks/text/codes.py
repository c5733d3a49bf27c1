"""Language codes at the edges: whatever a user or a dataset names a language with, mapped to its wiki code.

Inputs come as wiki codes (``zh-yue``, ``be-tarask``, ``simple``), wiki database
prefixes (``be_x_old``, ``zh_yue``), MKQA locales (``zh_cn``, ``zh_tw``, ``no``),
ISO 639-1/639-3 codes (``fi``, ``fin``, ``swh``) or BCP 47 tags (``pt-BR``,
``yue-Hant-HK``, ``nb``). Each resolves through the rules table (its ``bcp47``
and ``wiki`` columns, overrides included) and, failing that, through CLDR's
normalisation (langcodes: ISO 639-3 to 639-1, macrolanguages such as ``swh``
to ``sw``, script and region subtags dropped). A code nothing resolves is a
clear error that suggests the closest known codes.
"""

from __future__ import annotations

import difflib
from functools import lru_cache
from typing import Annotated

import langcodes
from pydantic import AfterValidator

from tasks.errors import ConfigError
from tasks.text.languages import LanguageRule, all_rules


@lru_cache(maxsize=4)
def _aliases(rules: tuple[LanguageRule, ...]) -> dict[str, str]:
    """Lower-cased tags and database prefixes -> wiki code; a wiki's own code wins over another's tag."""
    aliases: dict[str, str] = {}
    for rule in rules:
        aliases.setdefault(rule.bcp47.lower(), rule.lang)
        aliases.setdefault(rule.wiki.removesuffix("wiki").lower(), rule.lang)
    return aliases | {rule.lang: rule.lang for rule in rules}


def _lookup(code: str) -> str | None:
    aliases = _aliases(tuple(all_rules().values()))
    for candidate in (code, code.lower(), code.lower().replace("_", "-"), code.lower().replace("-", "_")):
        if candidate in aliases:
            return aliases[candidate]
    try:
        language = langcodes.Language.get(langcodes.standardize_tag(code.replace("_", "-"), macro=True))
    except (LookupError, ValueError):
        return None
    for candidate in (language.to_tag().lower(), language.language):
        if candidate and candidate.lower() in aliases:
            return aliases[candidate.lower()]
    return None


def wiki_code(code: str) -> str:
    """The wiki code ``code`` names (see the module notes); an unknown code is a ConfigError with suggestions."""
    found = _lookup(code.strip())
    if found is None:
        raise unknown_code(code)
    return found


def unknown_code(code: str) -> ConfigError:
    """The error for a code no rule or mapping knows, naming the closest known codes and language names."""
    rules = all_rules()
    names = {rule.name.lower(): lang for lang, rule in rules.items()}
    near = [names[name] for name in difflib.get_close_matches(code.lower(), list(names), n=3, cutoff=0.6)]
    near += difflib.get_close_matches(code.lower(), list(rules), n=5, cutoff=0.5)
    suggestions = ", ".join(f"{lang} ({rules[lang].name})" for lang in dict.fromkeys(near)) or "none close"
    return ConfigError(
        f"unknown language code {code!r}: no Wikipedia language has it (closest: {suggestions}); a language can be"
        " added with a row in $BABELBENCH_HOME/languages.csv or the file named by BABELBENCH_LANGUAGES"
    )


def bcp47(lang: str) -> str:
    """The BCP 47 tag of a wiki code, for exports read by tools that expect standard tags (``zh-yue`` -> ``yue``)."""
    rule = all_rules().get(lang)
    if rule is None:
        raise unknown_code(lang)
    return rule.bcp47


#: A pydantic field type for language parameters: any accepted spelling is stored as the wiki code.
WikiLang = Annotated[str, AfterValidator(wiki_code)]
