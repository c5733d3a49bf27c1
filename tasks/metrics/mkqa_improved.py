"""MKQA scoring for generative models: the improved mode, and the default.

The official scorer was written for extractive readers with a no-answer
probability; for models that write answers it misjudges in known ways
(``specs/mkqa.md``).  This mode:

* normalises with NFKC and case folding, and turns every Unicode punctuation
  mark into a space (the official mode removes ASCII punctuation only, so
  "«Velna»" or "、" survive there);
* removes articles as whole words only (the official French and Italian
  patterns also cut "la" off "lapin"), and the Arabic article only as a word
  prefix;
* segments Chinese, Japanese and Thai into words with the project's
  segmenters (jieba, fugashi, ICU word break) instead of scoring bags of
  characters; Khmer, which has no segmenter here, stays in characters;
* writes numbers one way, read with the locale's decimal and group
  separators (CLDR, :mod:`tasks.metrics.locale_formats`): "1,000" = "1000"
  and "0.125" ≠ "125" in English, "1.000" = "1000" and "0,125" = "0.125" in
  German, "3.0" = "3";
* matches dates by their parts when both sides parse, numeric dates in the
  locale's order ("05/01/1990" is the first of May in English, the fifth of
  January in French), month names in the locale or in English: "May 1,
  1990" = "1 May 1990" = "1990-05-01" = "1. Mai 1990" in German;
* reads yes/no answers in each locale's words ("ja", "oui", "はい" …);
* treats an empty answer or a refusal (:mod:`tasks.inference.refusals`) as
  abstaining, and ignores ``no_answer_prob`` (a generative model has none,
  and a constant one makes the official threshold sweep depend on file
  order).  An abstention scores 1 on an unanswerable example and 0 otherwise.

Scores are plain means (no threshold); the keys are the official ones so the
two modes sit in one table, with ``best_f1_thresh`` None.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any

import regex
from dateutil import parser as date_parser

from tasks.inference.refusals import is_refusal
from tasks.metrics.locale_formats import LocaleFormats, locale_formats
from tasks.metrics.mkqa_data import GoldExample, Prediction
from tasks.metrics.mkqa_official import check_coverage, token_f1
from tasks.text.segment import tokenize

#: MKQA locales segmented into words by a project segmenter (the language rule it uses).
SEGMENTED = {"zh_cn": "zh", "zh_hk": "zh", "zh_tw": "zh", "ja": "ja", "th": "th"}
CHARACTERS = frozenset({"km"})
ARTICLES: dict[str, frozenset[str]] = {lang: frozenset(words.split()) for lang, words in {
    "en": "a an the", "es": "un una unos unas el la los las", "de": "ein eine einen einem eines einer der die das den dem des",
    "nl": "de het een des der den", "sv": "en ett", "da": "en et", "no": "en et ei",
    "fr": "le la les l du de d des un une", "pt": "o a os as um uma uns umas",
    "it": "il lo la l i gli le del dello della dell dei degli degl delle un uno una", "fi": "se yks yksi",
    "hu": "a az egy", "vi": "của là cái chiếc những",
}.items()}
YES_NO: dict[str, tuple[frozenset[str], frozenset[str]]] = {lang: (frozenset(yes.split()), frozenset(no.split()))
                                                            for lang, yes, no in [
    ("en", "yes", "no"), ("de", "ja", "nein"), ("fr", "oui", "non"), ("es", "sí si", "no"), ("it", "sì si", "no"),
    ("pt", "sim", "não nao"), ("nl", "ja", "nee"), ("sv", "ja", "nej"), ("da", "ja", "nej"), ("no", "ja", "nei"),
    ("fi", "kyllä", "ei"), ("hu", "igen", "nem"), ("pl", "tak", "nie"), ("ru", "да", "нет"), ("tr", "evet", "hayır"),
    ("ar", "نعم", "لا"), ("he", "כן", "לא"), ("ja", "はい", "いいえ"), ("ko", "예 네", "아니요 아니오"),
    ("zh_cn", "是 是的 对", "否 不是 不"), ("zh_hk", "是 是的 對", "否 不是 不"), ("zh_tw", "是 是的 對", "否 不是 不"),
    ("th", "ใช่", "ไม่ใช่ ไม่"), ("vi", "có đúng", "không"), ("ms", "ya", "tidak"), ("km", "បាទ ចាស", "ទេ"),
]}
_SPACES = " \u00a0\u202f"  # thousands are grouped by spaces only in groups of three ("1 000 000")
_MARK = regex.compile(r"\D")
_PUNCTUATION = regex.compile(r"\p{P}+")
_DECIMAL = "\u2219"
_DATE_DEFAULTS = (datetime(1, 1, 1), datetime(2, 2, 2))
_YEAR_FIRST = regex.compile(r"\s*\d{4}(?!\d)")


@lru_cache(maxsize=None)
def _number_pattern(lang: str) -> regex.Pattern[str]:
    """Digits joined by the marks a number of ``lang`` can hold: points, commas and its own separators."""
    formats = locale_formats(lang)
    marks = regex.escape("".join(sorted({".", ",", formats.decimal, formats.group} - set(_SPACES))))
    return regex.compile(rf"(?<!\d)\d{{1,3}}(?:[{_SPACES}]\d{{3}})+(?:[{marks}]\d+)*(?!\d)|\d+(?:[{marks}]\d+)*")


def canonical_number(text: str, lang: str) -> str | None:
    """One spelling of the number ``text`` (digits and separators) in ``lang``: no group separators, a point
    for the decimal mark, no leading or trailing zeros; None when it is not one number there ("1.2.3").

    The locale's decimal mark, at most once and last, starts the fraction; what is before it must be grouped
    properly (a first group of 1–3 digits not starting with 0, then groups of exactly three, by one mark
    that is not the decimal one), or be plain digits.  A single point or comma that cannot group ("3,5" in
    English, "0.125" in German) can only be a decimal mark, and is read as one.
    """
    formats = locale_formats(lang)
    parts, marks = _MARK.split(text), _MARK.findall(text)
    whole, fraction, grouping = parts, "", marks
    if formats.decimal in marks:
        if marks.count(formats.decimal) > 1 or marks[-1] != formats.decimal:
            return None
        whole, fraction, grouping = parts[:-1], parts[-1], marks[:-1]
    if _grouped(whole, grouping):
        return _plain("".join(whole), fraction)
    if len(marks) == 1 and marks[0] in ".,":
        return _plain(parts[0], parts[1])
    return None


def _grouped(parts: list[str], marks: list[str]) -> bool:
    """Whether digit runs ``parts`` joined by ``marks`` are one integer written with thousands groups."""
    if not marks:
        return True
    return (len(set(marks)) == 1 and 1 <= len(parts[0]) <= 3 and not parts[0].startswith("0")
            and all(len(part) == 3 for part in parts[1:]))


def _plain(whole: str, fraction: str) -> str:
    whole, fraction = whole.lstrip("0") or "0", fraction.rstrip("0")
    return f"{whole}.{fraction}" if fraction else whole


def _spelled(match: regex.Match[str], lang: str) -> str:
    number = canonical_number(match.group(), lang)
    # the decimal point becomes a symbol that punctuation removal keeps (∙ is a math symbol, not punctuation)
    return match.group() if number is None else f" {number.replace('.', _DECIMAL)} "


@lru_cache(maxsize=1 << 18)
def improved_tokens(text: str, lang: str) -> tuple[str, ...]:
    """The words of an answer as this mode compares them (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = _number_pattern(lang).sub(lambda match: _spelled(match, lang), text)
    if lang in SEGMENTED:
        words = [w for w in tokenize(text, SEGMENTED[lang]) if not _PUNCTUATION.fullmatch(w)]
    else:
        spaced = _PUNCTUATION.sub(" ", text)
        words = list(spaced) if lang in CHARACTERS else spaced.split()
        words = [w for w in words if w.strip()]
    articles = ARTICLES.get(lang, frozenset())
    kept = [w for w in words if w not in articles]
    if lang == "ar":
        kept = [w[2:] if w.startswith("ال") and len(w) > 3 else w for w in kept]
    return tuple(kept)


@lru_cache(maxsize=1 << 16)
def _date_parts(text: str, lang: str) -> tuple[int | None, int | None, int | None] | None:
    """(year, month, day) that ``text`` states, None for a part it leaves out; None when it is not a date.

    A numeric date is read in the locale's order; one that starts with a four-digit year is year-month-day
    everywhere (ISO 8601, and every CLDR locale that puts the year first).
    """
    formats = locale_formats(lang)
    if _YEAR_FIRST.match(text):
        yearfirst, dayfirst = True, False
    else:
        yearfirst, dayfirst = formats.date_order == "ymd", formats.date_order == "dmy"
    reader = date_parser.parser(_date_names(formats))
    try:
        first, second = (reader.parse(text, default=d, yearfirst=yearfirst, dayfirst=dayfirst) for d in _DATE_DEFAULTS)
    except (ValueError, OverflowError):
        return None
    return tuple(a if a == b else None for a, b in ((first.year, second.year), (first.month, second.month),
                                                     (first.day, second.day)))  # type: ignore[return-value]


@lru_cache(maxsize=None)
def _date_names(formats: LocaleFormats) -> date_parser.parserinfo:
    """dateutil's words for dates, with the locale's month names beside the English ones."""

    class LocaleDates(date_parser.parserinfo):
        MONTHS: Any = [(*english, *local) for english, local in zip(date_parser.parserinfo.MONTHS, formats.months,
                                                                       strict=True)]

    return LocaleDates()


def _binary(text: str, lang: str) -> str | None:
    tokens = improved_tokens(text, lang)
    yes, no = YES_NO.get(lang, YES_NO["en"])
    if tokens and tokens[0] in yes | YES_NO["en"][0]:
        return "yes"
    if tokens and tokens[0] in no | YES_NO["en"][1]:
        return "no"
    return None


def abstains(prediction: Prediction, lang: str) -> bool:
    """No answer given: empty, or a refusal in the locale's language or in English."""
    text = prediction.binary_answer or prediction.prediction
    return is_refusal(text, lang)


def is_answerable(example: GoldExample, lang: str) -> bool:
    """Whether the example has a short answer in ``lang`` (not only long_answer or unanswerable)."""
    return any(answer.text for answer in example.answers[lang])


def example_scores(prediction: Prediction, example: GoldExample, lang: str) -> tuple[float, float, bool]:
    """(EM, F1, answerable) of one prediction under this mode."""
    answers = example.answers[lang]
    answerable = is_answerable(example, lang)
    if abstains(prediction, lang):
        return (0.0, 0.0, True) if answerable else (1.0, 1.0, False)
    if not answerable:
        return 0.0, 0.0, False
    text = prediction.binary_answer or prediction.prediction or ""
    best_em = best_f1 = 0.0
    for answer in answers:
        if answer.type == "binary":
            match = float(_binary(text, lang) == (answer.text or "").lower())
            best_em, best_f1 = max(best_em, match), max(best_f1, match)
            continue
        for gold in (answer.text or "", *answer.aliases):
            if answer.type == "date" and (parts := _date_parts(gold, lang)) is not None and _date_parts(text, lang) == parts:
                return 1.0, 1.0, True
            tokens, predicted = improved_tokens(gold, lang), improved_tokens(text, lang)
            best_em, best_f1 = max(best_em, float(tokens == predicted)), max(best_f1, token_f1(predicted, tokens))
    return best_em, best_f1, True


def _mean(values: Sequence[float]) -> float | None:
    return round(100.0 * sum(values) / len(values), 2) if values else None


def score_language(gold: Sequence[GoldExample], predictions: dict[str, Prediction], lang: str) -> dict[str, float | None]:
    """The improved metrics of one language, under the official keys (``best_f1_thresh`` None)."""
    check_coverage(gold, predictions, lang)
    rows = [example_scores(predictions[example.example_id], example, lang) for example in gold]
    answerable = [(em, f1) for em, f1, has in rows if has]
    unanswerable = [em for em, _, has in rows if not has]
    return {"best_em": _mean([em for em, _, _ in rows]), "best_f1": _mean([f1 for _, f1, _ in rows]),
            "best_answerable_em": _mean([em for em, _ in answerable]),
            "best_answerable_f1": _mean([f1 for _, f1 in answerable]),
            "best_unanswerable_em": _mean(unanswerable), "best_f1_thresh": None}
