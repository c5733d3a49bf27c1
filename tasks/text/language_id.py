"""Language identification with lingua: which language a text is in, and how sure lingua is.

lingua knows 75 languages.  A language outside them is never guessed as the
nearest one lingua knows: :func:`lingua_supports` says so, and callers report
such texts as ``unsupported``.  The candidates a text is told apart from are
chosen by the language it is expected in (see :func:`language_detector`).
"""

from __future__ import annotations

import re
from functools import cache

from lingua import Language, LanguageDetector, LanguageDetectorBuilder

from tasks.errors import ConfigError
from tasks.text.codes import wiki_code
from tasks.text.languages import all_rules


#: Codes that name a language lingua knows under another ISO 639-1 code: Norwegian (MKQA's and Wikipedia's
#: ``no``) is written in Bokmål; Simple English is English; Taraškievica is Belarusian in another orthography.
_ALIASES = {"no": "nb", "simple": "en", "be_tarask": "be"}

#: BCP 47 subtags that only narrow a language: a script (4 letters) or a region (2 letters, 3 digits).
_NARROWING = re.compile(r"^(?:[a-z]{4}|[a-z]{2}|[0-9]{3})$")


@cache
def _lingua_languages() -> dict[str, Language]:
    return {language.iso_code_639_1.name.lower(): language for language in Language.all()}


def lingua_code(lang: str) -> str | None:
    """The ISO 639-1 code lingua detects for ``lang``, or None when lingua cannot detect that language.

    ``lang`` may be an ISO 639-1 code, a wiki code or an MKQA / BCP 47 locale: a script or region subtag
    (``zh_cn``, ``zh-TW``, ``pt-BR``, ``zh-Hant``) narrows the language without changing it, so it is dropped;
    any other subtag names another language (``zh-yue``, ``zh-min-nan``), which is never taken for its
    neighbour.
    """
    code = lang.strip().lower().replace("-", "_")
    primary, _, rest = code.partition("_")
    if rest and all(_NARROWING.match(part) for part in rest.split("_")):
        code = primary
    code = _ALIASES.get(code, code)
    return code if code in _lingua_languages() else None


def lingua_supports(lang: str) -> bool:
    """Whether lingua can detect the language ``lang`` names (see :func:`lingua_code`)."""
    return lingua_code(lang) is not None


def lingua_language(lang: str) -> Language:
    """lingua's language for ``lang`` (see :func:`lingua_code`); one lingua does not know is a ConfigError naming it."""
    code = lingua_code(lang)
    if code is None:
        raise ConfigError(
            f"language {lang!r} is not one lingua can detect, so its language cannot be checked;"
            " lingua knows: " + ", ".join(sorted(_lingua_languages()))
        )
    return _lingua_languages()[code]


def _candidates(expected: str | None) -> set[str]:
    """lingua codes a text expected in ``expected`` is told apart from (see ``language_detector``)."""
    target = lingua_code(expected) if expected else None
    if target is None:
        return set(_lingua_languages())
    rules = all_rules()
    try:
        script = rules[wiki_code(expected)].script  # type: ignore[arg-type]
    except ConfigError:
        return set(_lingua_languages())
    same_script = {code for lang, other in rules.items() if other.script == script and (code := lingua_code(lang))}
    return same_script | {"en", target}


@cache
def language_detector(expected: str | None = None) -> LanguageDetector:
    """A detector telling ``expected`` apart from English and from every language lingua knows in its script.

    Those are the mistakes that matter when checking a response or a
    translation: falling back to English, or drifting into a neighbour written
    the same way (Danish for Norwegian, Ukrainian for Russian) — a detector
    restricted to fewer languages would call the neighbour the target. A text in
    another script matches no candidate closely, so the target's confidence
    stays near zero. Choosing among all 75 languages instead is about ten times
    slower per text. Without an expected language every language lingua knows
    is a candidate. One detector per expected language is built once (models
    load lazily).
    """
    return LanguageDetectorBuilder.from_languages(*(_lingua_languages()[code] for code in sorted(_candidates(expected)))).build()


def detect_language(text: str, expected: str | None = None) -> str | None:
    """The ISO 639-1 code lingua sees in ``text`` (``expected`` among the candidates), or None when it sees none."""
    language = language_detector(expected).detect_language_of(text)
    return language.iso_code_639_1.name.lower() if language is not None else None


def confidence(text: str, lang: str, expected: str | None = None) -> float:
    """lingua's probability (0–1, among the candidates of ``expected``'s detector) that ``text`` is in ``lang``."""
    target = lingua_language(lang)
    return language_detector(expected).compute_language_confidence(text, target)
