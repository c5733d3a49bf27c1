"""The language a response is written in: checked by script for every language, by lingua where it has a model.

XRAG counts a correct answer in the wrong language as wrong, and MIRAGE's features use lingua's
probabilities.  Script comes first: an answer with no letter in a script of the question's language is
not in it.  A short answer (under ``MIN_LETTERS`` letters) or a language lingua has no model for is placed
by script alone (``unchecked`` where the script is shared); otherwise lingua gives ``detected``,
``target_prob``, ``english_prob`` and ``switched_share``.  A code neither the language table nor lingua
knows is ``unsupported``.

See ``docs/evaluation.md``, "Response language".
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from tasks.errors import ConfigError
from tasks.inference.reading import strip_citations
from tasks.text.codes import wiki_code
from tasks.text.language_id import confidence, detect_language, lingua_code
from tasks.text.languages import all_rules
from tasks.text.scripts import language_scripts, letter_scripts, likeliest_language, own_scripts
from tasks.text.sentences import split_sentences

#: fewer letters than this and lingua's verdict is noise (a name, a number, "Yes.")
MIN_LETTERS = 8


@dataclass(frozen=True)
class ResponseLanguage:
    """The reading of one response (see the module notes); probabilities only where lingua knows the target."""

    status: str  # ok | unchecked | unsupported
    detected: str | None = None
    target_prob: float | None = None
    english_prob: float | None = None
    switched_share: float | None = None


def _letters(text: str) -> int:
    return sum(char.isalpha() for char in text)


def target_code(lang: str) -> str | None:
    """The code a response in ``lang`` is recorded under: lingua's ISO 639-1 code, else the language table's wiki
    code (``km``); None for a code neither knows."""
    code = lingua_code(lang)
    if code is not None:
        return code
    try:
        return wiki_code(lang)
    except ConfigError:
        return None


def _main_script(written: Counter[str | None]) -> str | None:
    return max(sorted(written, key=str), key=written.__getitem__)


def _probabilities(body: str, lang: str, shown: frozenset[str]) -> tuple[float | None, float | None]:
    if lingua_code(lang) is None:
        return None, None
    return confidence(body, lang, lang, shown), confidence(body, "en", lang, shown)


def response_language(text: str, lang: str, shown: frozenset[str] = frozenset()) -> ResponseLanguage:
    """How ``text``, answering a question in ``lang`` from passages in the ``shown`` languages, is placed (see the
    module notes).  The languages lingua weighs are the question's, English and the passages'."""
    target = target_code(lang)
    if target is None:
        return ResponseLanguage("unsupported")
    body = strip_citations(text).strip()
    written = letter_scripts(body)
    if not written:
        return ResponseLanguage("unchecked")
    scripts, main, known = language_scripts(lang), _main_script(written), lingua_code(lang) is not None
    long = _letters(body) >= MIN_LETTERS
    if not written.keys() & scripts:
        read = detect_language(body, lang, shown) if known and long else None
        detected = read if read not in (None, target) else likeliest_language(main)
        return ResponseLanguage("ok", detected, *_probabilities(body, lang, shown))
    if known and long:
        return _by_lingua(body, lang, target, shown)
    if main not in scripts:
        return ResponseLanguage("ok", likeliest_language(main), *_probabilities(body, lang, shown))
    if main in own_scripts(lang) or (not long and written.keys() & own_scripts(lang)):
        return ResponseLanguage("ok", target, *_probabilities(body, lang, shown))
    return ResponseLanguage("unchecked")


def _by_lingua(body: str, lang: str, target: str, shown: frozenset[str]) -> ResponseLanguage:
    """A long answer in a language lingua knows, sentence by sentence for the code-switching share."""
    # the target's sentence rules, then English's: a switch into English mid-answer ends its sentences the English way
    sentences = [part for sentence in (split_sentences(body, lang) if lang in all_rules() else [body])
                 for part in split_sentences(sentence, "en")]
    placed = [detect_language(sentence, lang, shown) for sentence in sentences if _letters(sentence) >= MIN_LETTERS]
    placed = [found for found in placed if found is not None]
    switched = sum(found != target for found in placed) / len(placed) if placed else None
    return ResponseLanguage("ok", detect_language(body, lang, shown), *_probabilities(body, lang, shown), switched)
