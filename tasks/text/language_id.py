"""Language identification with lingua: which language a text is in, and how sure lingua is.

lingua knows 75 languages.  A language outside them is never guessed as the
nearest one lingua knows: :func:`lingua_supports` says so, and callers report
such texts as ``unsupported``.  The detector is restricted to the languages
of the rules table that lingua knows (plus English, the usual language a
model falls back to), which makes it faster and more accurate than choosing
among all 75.
"""

from __future__ import annotations

from functools import cache

from lingua import Language, LanguageDetector, LanguageDetectorBuilder

from tasks.errors import ConfigError
from tasks.text.languages import all_rules


@cache
def _lingua_languages() -> dict[str, Language]:
    return {language.iso_code_639_1.name.lower(): language for language in Language.all()}


def lingua_supports(lang: str) -> bool:
    """Whether lingua can detect the language of ISO 639-1 code ``lang``."""
    return lang in _lingua_languages()


def lingua_language(lang: str) -> Language:
    """lingua's language for an ISO 639-1 code; a code lingua does not know is a ConfigError naming it."""
    try:
        return _lingua_languages()[lang]
    except KeyError:
        raise ConfigError(
            f"language {lang!r} is not one lingua can detect, so its language cannot be checked;"
            " lingua knows: " + ", ".join(sorted(_lingua_languages()))
        ) from None


@cache
def language_detector() -> LanguageDetector:
    """One detector over the rules table's languages that lingua knows, and English (built once, models load lazily)."""
    codes = sorted({lang for lang in all_rules() if lingua_supports(lang)} | {"en"})
    return LanguageDetectorBuilder.from_languages(*(lingua_language(lang) for lang in codes)).build()


def detect_language(text: str) -> str | None:
    """The ISO 639-1 code lingua sees in ``text``, or None when it sees none."""
    language = language_detector().detect_language_of(text)
    return language.iso_code_639_1.name.lower() if language is not None else None


def confidence(text: str, lang: str) -> float:
    """lingua's probability (0–1, among the detector's languages) that ``text`` is in ``lang``, which it must know."""
    return language_detector().compute_language_confidence(text, lingua_language(lang))
