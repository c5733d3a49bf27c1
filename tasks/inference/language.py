"""The language a response is written in: lingua's view of the target language, of English, and of code-switching.

A model asked in Japanese may answer in English, or start in Japanese and
drift into English mid-answer; XRAG counts a correct answer in the wrong
language as wrong, and MIRAGE's features use these probabilities.  Per
response this reads, with citations stripped:

- ``detected``: the language lingua sees in the whole response;
- ``target_prob`` and ``english_prob``: lingua's confidence in the question's
  language and in English (among the detector's languages);
- ``switched_share``: the share of the response's sentences, among those long
  enough to identify, that lingua places in a language other than the target.

A target language lingua does not know gives status ``unsupported`` and no
numbers at all — a guess by the nearest known language would be worse than
none.  A response with too few letters to identify is ``too_short``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.inference.reading import strip_citations
from tasks.text.language_id import confidence, detect_language, lingua_code
from tasks.text.languages import all_rules
from tasks.text.sentences import split_sentences

#: fewer letters than this and lingua's verdict is noise (a name, a number, "Yes.")
MIN_LETTERS = 8


@dataclass(frozen=True)
class ResponseLanguage:
    """lingua's reading of one response (see the module notes); numbers are None unless ``status`` is ok."""

    status: str  # ok | unsupported | too_short
    detected: str | None = None
    target_prob: float | None = None
    english_prob: float | None = None
    switched_share: float | None = None


def _letters(text: str) -> int:
    return sum(char.isalpha() for char in text)


def response_language(text: str, lang: str, shown: frozenset[str] = frozenset()) -> ResponseLanguage:
    """How ``text``, answering a question in ``lang`` from passages in the ``shown`` languages, stands in lingua's eyes.

    The languages in play are the question's, English and the passages' (a
    model may answer in the language of what it read).
    """
    target = lingua_code(lang)
    if target is None:
        return ResponseLanguage("unsupported")
    body = strip_citations(text).strip()
    if _letters(body) < MIN_LETTERS:
        return ResponseLanguage("too_short")
    # the target's sentence rules, then English's: a switch into English mid-answer ends its sentences the English way
    sentences = [part for sentence in (split_sentences(body, lang) if lang in all_rules() else [body])
                 for part in split_sentences(sentence, "en")]
    placed = [detect_language(sentence, lang, shown) for sentence in sentences if _letters(sentence) >= MIN_LETTERS]
    placed = [found for found in placed if found is not None]
    switched = sum(found != target for found in placed) / len(placed) if placed else None
    return ResponseLanguage("ok", detect_language(body, lang, shown), confidence(body, lang, lang, shown),
                            confidence(body, "en", lang, shown), switched)
