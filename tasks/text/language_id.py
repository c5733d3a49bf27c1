"""Language identification with lingua: which language a text is in, and how sure lingua is.

lingua knows 75 languages.  A language outside them is never guessed as the
nearest one lingua knows: :func:`lingua_supports` says so, and callers report
such texts as ``unsupported``.  A text is told apart from the languages in
play only (see :func:`language_detector`).
"""

from __future__ import annotations

import re
from functools import cache

from lingua import Language, LanguageDetector, LanguageDetectorBuilder

from tasks.errors import ConfigError

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


#: A language spoken by at least this many people (CLDR's estimate) is always a candidate.
MAJOR_LANGUAGE_SPEAKERS = 100_000_000


@cache
def _major_languages() -> frozenset[str]:
    """The lingua languages CLDR counts at least ``MAJOR_LANGUAGE_SPEAKERS`` speakers of (16 in CLDR 46)."""
    import langcodes

    return frozenset(code for code in _lingua_languages()
                     if langcodes.Language.get(code).speaking_population() >= MAJOR_LANGUAGE_SPEAKERS)


def _candidates(expected: str | None, others: frozenset[str]) -> list[str]:
    """lingua codes of the detector for ``expected`` and ``others`` (see ``language_detector``)."""
    target = lingua_code(expected) if expected else None
    if target is None:
        return sorted(_lingua_languages())
    return sorted({target, "en"} | _major_languages() | {code for other in others if (code := lingua_code(other))})


@cache
def language_detector(expected: str | None = None, others: frozenset[str] = frozenset()) -> LanguageDetector:
    """A detector choosing among ``expected``, the languages in play (``others``) and the world's major languages.

    A check asks whether a text is in the language it should be in, and the
    plausible alternatives are known: English (the language models fall back
    to), the source of a translation, the languages of the passages a model
    was shown, and the major languages (CLDR: at least 100 million speakers —
    en, zh, hi, es, ar, fr, ur, bn, pt, pa, sw, ru, id, de, ja, te) a model
    may drift into. Choosing among those rather than all 75 keeps lingua
    accurate on short texts (among all 75, a plain English sentence about
    invented places comes out as Tagalog) and about ten times faster. Without
    an expected language every language lingua knows is a candidate. One
    detector per set of candidates is built once (models load lazily).
    """
    codes = _candidates(expected, others)
    return LanguageDetectorBuilder.from_languages(*(_lingua_languages()[code] for code in codes)).build()


def detect_language(text: str, expected: str | None = None, others: frozenset[str] = frozenset()) -> str | None:
    """The ISO 639-1 code lingua sees in ``text`` among the languages in play, or None when it sees none."""
    language = language_detector(expected, others).detect_language_of(text)
    return language.iso_code_639_1.name.lower() if language is not None else None


def confidence(text: str, lang: str, expected: str | None = None, others: frozenset[str] = frozenset()) -> float:
    """lingua's probability (0–1, among the languages in play for ``expected``) that ``text`` is in ``lang``."""
    target = lingua_language(lang)
    return language_detector(expected, others).compute_language_confidence(text, target)
