"""MKQA's official scoring, reproduced number for number — its quirks included, on purpose.

The numbers papers report come from the official scorer, so this mode keeps
what a careful reader would call its bugs: ASCII punctuation only, the
French and Italian article patterns that also eat the start of words
("la" in "lapin"), the Arabic pattern that removes every "ال", characters as
tokens for Chinese, Japanese, Thai and Khmer, a no-answer threshold that
starts at 0.0 whatever the probabilities are, and ties in the threshold sweep
broken by the order of the predictions file.  The improved mode
(:mod:`tasks.metrics.mkqa_improved`) is the one to use for generative models.

It is faster than the official script because each distinct string is
normalised once (the official code normalises every gold answer twice per
prediction) and punctuation goes through ``str.translate``.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from functools import lru_cache

from tasks.errors import ConfigError
from tasks.metrics.mkqa_data import GoldExample, Prediction

CHARACTER_TOKENS = frozenset({"zh_cn", "zh_hk", "zh_tw", "ja", "th", "km"})
# The article patterns of the official scorer, as it has them (fr and it have no closing word boundary).
ARTICLES = {
    "en": r"\b(a|an|the)\b",
    "es": r"\b(un|una|unos|unas|el|la|los|las)\b",
    "vi": r"\b(của|là|cái|chiếc|những)\b",
    "de": r"\b(ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des)\b",
    "ar": r"\sال^|ال",
    "nl": r"\b(de|het|een|des|der|den)\b",
    "sv": r"\b(en|ett)\b",
    "da": r"\b(en|et)\b",
    "no": r"\b(en|et|ei)\b",
    "fr": r"\b(le|la|l'|les|du|de|d'|des|un|une|des)",
    "pt": r"\b(o|a|os|as|um|uma|uns|umas)\b",
    "it": r"\b(il|lo|la|l'|i|gli|le|del|dello|della|dell'|dei|degli|degl'|delle|un'|uno|una|un)",
    "fi": r"\b(se|yks|yksi)\b",
    "hu": r"\b(a|az|egy)\b",
}
_ARTICLES = {lang: re.compile(pattern) for lang, pattern in ARTICLES.items()}
_ASCII_PUNCTUATION = str.maketrans("", "", string.punctuation)
KEYS = ("best_em", "best_f1", "best_answerable_em", "best_answerable_f1", "best_unanswerable_em", "best_f1_thresh")


def gold_strings(example: GoldExample, lang: str) -> tuple[str, ...]:
    """The official gold set: every answer's text ("" for no text) and its aliases, deduplicated."""
    strings = {answer.text or "" for answer in example.answers[lang]}
    strings.update(alias for answer in example.answers[lang] for alias in answer.aliases)
    return tuple(sorted(strings))


@lru_cache(maxsize=1 << 20)
def official_tokens(text: str, lang: str) -> tuple[str, ...]:
    """Lower-case, drop ASCII punctuation, replace articles by a space, then split (characters for CJK/th/km)."""
    text = text.lower().translate(_ASCII_PUNCTUATION)
    article = _ARTICLES.get(lang)
    if article is not None:
        text = article.sub(" ", text)
    if lang in CHARACTER_TOKENS:
        return tuple(ch for ch in text if ch.strip())
    return tuple(text.split())


def token_f1(predicted: tuple[str, ...], gold: tuple[str, ...]) -> float:
    """SQuAD's bag-of-tokens F1; with an empty side, 1 when both are empty and 0 otherwise.

    Answers are a few tokens long, so counting with ``tuple.count`` beats building Counters.
    """
    if not predicted or not gold:
        return float(predicted == gold)
    common = sum(min(gold.count(token), predicted.count(token)) for token in set(gold) if token in predicted)
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def example_scores(text: str, golds: Sequence[str], lang: str) -> tuple[float, float]:
    """(EM, F1) of one scored text against its gold set: the best over the gold strings."""
    predicted = official_tokens(text, lang) if text else ()
    f1 = 0.0
    for gold in golds:
        tokens = official_tokens(gold, lang) if gold else ()
        if predicted == tokens:
            return 1.0, 1.0  # an exact match is also the best F1
        f1 = max(f1, token_f1(predicted, tokens))
    return 0.0, f1


def _mean(values: list[float]) -> float | None:
    """×100, rounded to 2 decimals; None (the official script's NaN) for an empty group."""
    return round(100.0 * sum(values) / len(values), 2) if values else None


def check_coverage(gold: Sequence[GoldExample], predictions: dict[str, Prediction], lang: str) -> None:
    """Every gold example of ``lang`` has a prediction and every prediction a gold example, or a clear error."""
    ids = {example.example_id for example in gold}
    missing = [example.example_id for example in gold if example.example_id not in predictions]
    if missing:
        raise ConfigError(f"{lang}: {len(missing)} example(s) have no prediction, e.g. {', '.join(missing[:3])}")
    unknown = [identifier for identifier in predictions if identifier not in ids]
    if unknown:
        raise ConfigError(f"{lang}: {len(unknown)} prediction(s) for examples not in the gold file, e.g. "
                          f"{', '.join(unknown[:3])}")
    absent = [example.example_id for example in gold if lang not in example.answers]
    if absent:
        raise ConfigError(f"{lang}: the gold file has no {lang} answers for {len(absent)} example(s), e.g. "
                          f"{', '.join(absent[:3])}")


def score_language(gold: Sequence[GoldExample], predictions: dict[str, Prediction], lang: str) -> dict[str, float | None]:
    """The official metrics of one language (keys :data:`KEYS`)."""
    check_coverage(gold, predictions, lang)
    golden = {example.example_id: gold_strings(example, lang) for example in gold}
    texts = {i: p.binary_answer or p.prediction or "" for i, p in predictions.items()}
    answerable = {i: strings != ("",) for i, strings in golden.items()}
    em, f1 = {}, {}
    for identifier, strings in golden.items():
        em[identifier], f1[identifier] = example_scores(texts[identifier], strings, lang)
    threshold, best = _sweep(predictions, texts, f1, answerable)
    abstains = {i: p.no_answer_prob > threshold for i, p in predictions.items()}

    def at_threshold(scores: dict[str, float], ids: list[str]) -> list[float]:
        return [float(not answerable[i]) if abstains[i] else scores[i] for i in ids]

    ids = list(golden)
    with_answer = [i for i in ids if answerable[i]]
    without = [i for i in ids if not answerable[i]]
    return {
        "best_em": _mean(at_threshold(em, ids)), "best_f1": round(100.0 * best / len(ids), 2),
        "best_answerable_em": _mean(at_threshold(em, with_answer)),
        "best_answerable_f1": _mean(at_threshold(f1, with_answer)),
        "best_unanswerable_em": _mean(at_threshold(em, without)), "best_f1_thresh": round(threshold, 2),
    }


def _sweep(predictions: dict[str, Prediction], texts: dict[str, str], f1: dict[str, float],
           answerable: dict[str, bool]) -> tuple[float, float]:
    """(threshold, best score): start from everyone abstaining and admit answers by rising no-answer probability.

    Sorting is stable over the predictions file's order, so equal probabilities are admitted in file order —
    and only a strictly better score moves the threshold, as in the official script.
    """
    threshold = 0.0
    score = best = float(sum(not has for has in answerable.values()))
    for identifier in sorted(predictions, key=lambda i: predictions[i].no_answer_prob):
        if answerable[identifier]:
            score += f1[identifier]
        elif texts[identifier]:
            score -= 1
        if score > best:
            best, threshold = score, predictions[identifier].no_answer_prob
    return threshold, best


def macro(per_language: dict[str, dict[str, float | None]]) -> dict[str, float | None]:
    """The official macro average: the mean of the languages' rounded values, rounded again."""
    result: dict[str, float | None] = {}
    for key in KEYS:
        values = [scores[key] for scores in per_language.values() if scores[key] is not None]
        result[key] = round(sum(values) / len(values), 2) if values else None
    return result
