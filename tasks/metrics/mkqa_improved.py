"""MKQA scoring for generative models: the improved mode, and the default.

The official scorer was written for extractive readers with a no-answer
probability, and misjudges answers that models write.  This mode compares
answers after NFKC and case folding with Unicode punctuation removed,
articles removed as whole words, Chinese, Japanese and Thai segmented into
words; numbers (:mod:`tasks.metrics.locale_numbers`), dates
(:mod:`tasks.metrics.locale_dates`) and yes/no are read as the locale writes
them before any segmentation; an empty answer or a refusal abstains, and
``no_answer_prob`` is ignored.  The rules and their reasons are in the MKQA
guide (``docs/mkqa.md``).

Scores are plain means (no threshold); the keys are the official ones so the
two modes sit in one table, with ``best_f1_thresh`` None.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import regex

from tasks.inference.refusals import is_refusal
from tasks.metrics.locale_dates import dates_agree, read_dates
from tasks.metrics.locale_formats import fold
from tasks.metrics.locale_numbers import number_spans
from tasks.metrics.mkqa_data import GoldExample, Prediction
from tasks.metrics.mkqa_official import check_coverage, token_f1
from tasks.text.segment import segmenter, tokenize
from tasks.text.verdict_words import yes_no_words

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
_PUNCTUATION = regex.compile(r"\p{P}+")


@lru_cache(maxsize=1 << 18)
def improved_tokens(text: str, lang: str) -> tuple[str, ...]:
    """The words of an answer as this mode compares them: numbers read first, one token each, whatever the
    script does with the rest (see the module notes)."""
    text = fold(text)
    tokens: list[str] = []
    start = 0
    for begin, end, number in number_spans(text, lang):
        tokens += _words(text[start:begin], lang)
        tokens += number
        start = end
    return tuple(tokens + _words(text[start:], lang))


def _words(text: str, lang: str) -> list[str]:
    """The words of a stretch of text without numbers: segmented, without punctuation and articles."""
    if lang in SEGMENTED:
        words = [w for w in tokenize(text, SEGMENTED[lang]) if not _PUNCTUATION.fullmatch(w)]
    else:
        spaced = _PUNCTUATION.sub(" ", text)
        words = [w for w in (list(spaced) if lang in CHARACTERS else spaced.split()) if w.strip()]
    articles = ARTICLES.get(lang, frozenset())
    kept = [w for w in words if w not in articles]
    if lang == "ar":
        kept = [w[2:] if w.startswith("ال") and len(w) > 3 else w for w in kept]
    return kept


def _binary(text: str, lang: str) -> str | None:
    """Yes or no by the answer's first word, as ICU's word break finds it in any script (whatever this mode's
    segmentation does with the rest: Khmer "បាទ" is one word, not three characters)."""
    normal = fold(text)
    first = next(segmenter("icu", lang.replace("_", "-"))(normal), None)
    word = normal[first[0]:first[1]] if first else ""
    yes, no = yes_no_words(lang)  # the language's (CLDR) and English's
    if word in yes:
        return "yes"
    if word in no:
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
            if answer.type == "date" and dates_agree(read_dates(gold, lang), read_dates(text, lang)):
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
