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
none.

Below ``MIN_LETTERS`` letters lingua's verdict among languages that share a
script is noise, so a short answer is read by the scripts of its letters
(Unicode's, against the language table's script for the question's language,
see :mod:`tasks.text.scripts`):

- no letter in a script of the question's language (a Latin-script
  "Beijing" for a Chinese question): status ``ok``, not in the language;
  ``detected`` is CLDR's likeliest language of the answer's main script
  (Latin → en, Cyrillic → ru, Hangul → ko), None for a script the table
  does not know — never the target;
- a letter in a script only the question's language is written in (Hangul
  for Korean, kana for Japanese): status ``ok``, ``detected`` is the target;
- otherwise — digits and signs only, or letters of a script other languages
  share ("Berlin" for a German question, "北京" for a Chinese one, Han being
  Japanese too): status ``unchecked``, no numbers; the language rule cannot
  be applied to the answer either way.

A script-decided answer has lingua's probabilities (its candidates are told
apart by script too, so they agree: 0 for the target in another script) and
no ``switched_share``.
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks.inference.reading import strip_citations
from tasks.text.language_id import confidence, detect_language, lingua_code
from tasks.text.languages import all_rules
from tasks.text.scripts import language_scripts, letter_scripts, likeliest_language, own_scripts
from tasks.text.sentences import split_sentences

#: fewer letters than this and lingua's verdict is noise (a name, a number, "Yes.")
MIN_LETTERS = 8


@dataclass(frozen=True)
class ResponseLanguage:
    """lingua's reading of one response (see the module notes); numbers are None unless ``status`` is ok."""

    status: str  # ok | unsupported | unchecked
    detected: str | None = None
    target_prob: float | None = None
    english_prob: float | None = None
    switched_share: float | None = None


def _letters(text: str) -> int:
    return sum(char.isalpha() for char in text)


def _by_script(body: str, lang: str, target: str, shown: frozenset[str]) -> ResponseLanguage:
    """A short answer read by its letters' scripts (see the module notes)."""
    written = letter_scripts(body)
    if written and not written.keys() & language_scripts(lang):
        detected = likeliest_language(max(sorted(written, key=str), key=written.__getitem__))  # the main script's
    elif written.keys() & own_scripts(lang):
        detected = target
    else:
        return ResponseLanguage("unchecked")
    return ResponseLanguage("ok", detected, confidence(body, lang, lang, shown), confidence(body, "en", lang, shown))


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
        return _by_script(body, lang, target, shown)
    # the target's sentence rules, then English's: a switch into English mid-answer ends its sentences the English way
    sentences = [part for sentence in (split_sentences(body, lang) if lang in all_rules() else [body])
                 for part in split_sentences(sentence, "en")]
    placed = [detect_language(sentence, lang, shown) for sentence in sentences if _letters(sentence) >= MIN_LETTERS]
    placed = [found for found in placed if found is not None]
    switched = sum(found != target for found in placed) / len(placed) if placed else None
    return ResponseLanguage("ok", detect_language(body, lang, shown), confidence(body, lang, lang, shown),
                            confidence(body, "en", lang, shown), switched)
