"""MKQA's official scoring, reproduced number for number — its quirks included, on purpose.

The numbers papers report come from the official scorer, so this mode keeps what a careful reader would
call its bugs (ASCII punctuation, article patterns that eat the start of words, characters as tokens for
some scripts, the threshold sweep's start and tie order).  The improved mode
(:mod:`tasks.metrics.mkqa_improved`) is the one for generative models.  Two opt-in departures, for the
leaderboard's own predictions only, are explained at :func:`score_language`.

See ``docs/mkqa.md``, "Scoring".
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Collection, Sequence
from functools import lru_cache
from typing import Literal

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
_ASCII_PUNCTUATION_RUN = re.compile(f"[{re.escape(string.punctuation)}]+")  # faster than translate on long text
#: How the sweep treats equal no-answer probabilities: the official script admits them one by one in the
#: predictions file's order; "grouped" admits them together, as a threshold does.
Ties = Literal["file_order", "grouped"]
KEYS = ("best_em", "best_f1", "best_answerable_em", "best_answerable_f1", "best_unanswerable_em", "best_f1_thresh")


def gold_strings(example: GoldExample, lang: str) -> tuple[str, ...]:
    """The official gold set: every answer's text ("" for no text) and its aliases, deduplicated."""
    answers = example.answers[lang]
    if len(answers) == 1 and not answers[0].aliases:  # most examples: one answer, no alias
        return (answers[0].text or "",)
    strings = {answer.text or "" for answer in answers}
    strings.update(alias for answer in answers for alias in answer.aliases)
    return tuple(sorted(strings))


def is_answerable(example: GoldExample, lang: str) -> bool:
    """The official reading: the gold set holds more than the empty string."""
    return gold_strings(example, lang) != ("",)


Tokens = Callable[[str], tuple[str, ...]]


#: Joins a language's strings so the per-string steps run once over all of them.  It is neither ASCII
#: punctuation nor a word character, nor cased, so case mapping, punctuation removal, the article patterns'
#: word boundaries and whitespace splitting treat it exactly like the end of a string.
_SEPARATOR = "\x00"


@lru_cache(maxsize=None)
def tokenizer(lang: str) -> Tokens:
    """The official tokens of a text in ``lang``: lower case, ASCII punctuation dropped, articles replaced by a
    space, then split on whitespace — or, for CJK/th/km, every non-space character a token.

    The language's choices are made once here rather than on every call.
    """
    article = _ARTICLES.get(lang)
    characters = lang in CHARACTER_TOKENS

    def tokens(text: str) -> tuple[str, ...]:
        text = text.lower().translate(_ASCII_PUNCTUATION)
        if article is not None:
            text = article.sub(" ", text)
        return tuple("".join(text.split())) if characters else tuple(text.split())

    return tokens


def tokenize_all(texts: Sequence[str], lang: str) -> dict[str, tuple[str, ...]]:
    """:func:`tokenizer`'s tokens of every text, keyed by text.

    Lower-casing, punctuation removal and the article pattern run once over all the texts joined by
    :data:`_SEPARATOR` — scoring tokenises hundreds of thousands of short, nearly all distinct strings, and
    the per-call cost of those steps dominated.  A text that contains the separator itself is tokenised alone.
    """
    distinct = list(dict.fromkeys(text for text in texts if text))
    tokens = tokenizer(lang)
    if any(_SEPARATOR in text for text in distinct):
        return {text: tokens(text) for text in distinct}
    joined = _ASCII_PUNCTUATION_RUN.sub("", _SEPARATOR.join(distinct).lower())
    article = _ARTICLES.get(lang)
    if article is not None:
        joined = article.sub(" ", joined)
    parts = joined.split(_SEPARATOR)
    if lang in CHARACTER_TOKENS:
        return {text: tuple("".join(part.split())) for text, part in zip(distinct, parts, strict=True)}
    return {text: tuple(part.split()) for text, part in zip(distinct, parts, strict=True)}


def official_tokens(text: str, lang: str) -> tuple[str, ...]:
    """The official tokens of ``text`` (see :func:`tokenizer`)."""
    return tokenizer(lang)(text)


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


def example_scores(text: str, golds: Sequence[str], tokens: Callable[[str], tuple[str, ...]]) -> tuple[float, float]:
    """(EM, F1) of one scored text against its gold set: the best over the gold strings."""
    predicted = tokens(text) if text else ()
    f1 = 0.0
    for gold in golds:
        expected = tokens(gold) if gold else ()
        if predicted == expected:
            return 1.0, 1.0  # an exact match is also the best F1
        f1 = max(f1, token_f1(predicted, expected))
    return 0.0, f1


def _mean(values: list[float]) -> float | None:
    """×100, rounded to 2 decimals; None (the official script's NaN) for an empty group."""
    return round(100.0 * sum(values) / len(values), 2) if values else None


def check_coverage(gold: Sequence[GoldExample], predictions: dict[str, Prediction], lang: str) -> None:
    """Every gold example of ``lang`` has a prediction and every prediction a gold example, or a clear error."""
    ids = [example.example_id for example in gold]
    missing = [identifier for identifier in ids if identifier not in predictions]
    if missing:
        raise ConfigError(f"{lang}: {len(missing)} example(s) have no prediction, e.g. {', '.join(missing[:3])}")
    if len(predictions) != len(ids):  # every gold id has a prediction, so the rest are unknown ones
        unknown = sorted(predictions.keys() - set(ids))
        raise ConfigError(f"{lang}: {len(unknown)} prediction(s) for examples not in the gold file, e.g. "
                          f"{', '.join(unknown[:3])}")
    absent = [example.example_id for example in gold if lang not in example.answers]
    if absent:
        raise ConfigError(f"{lang}: the gold file has no {lang} answers for {len(absent)} example(s), e.g. "
                          f"{', '.join(absent[:3])}")


def score_language(gold: Sequence[GoldExample], predictions: dict[str, Prediction], lang: str, *,
                   ties: Ties = "file_order", failed: Collection[str] = frozenset()) -> dict[str, float | None]:
    """The official metrics of one language (keys :data:`KEYS`).

    With the defaults this is the official script, number for number.  The leaderboard sets the two options:

    * ``ties="grouped"``: the sweep may stop only where the no-answer probability changes.  The leaderboard's
      probabilities are 0 (an answer) and 1 (an abstention), so nearly every example ties, and admitting tied
      examples one by one would make ``best_f1`` the running peak inside the tie — a number that depends on
      the order of the rows.  A threshold cannot admit half of a tie; grouped, the result is the official
      script's on the same predictions ordered with, inside each tie, the answers to unanswerable questions
      first (then the running score inside a tie falls before it rises, so its peak is at an end).  With
      distinct probabilities both settings agree.
    * ``failed``: ids of examples whose response failed (a dead endpoint, an error, the budget).  Such an
      example scores 0 in every metric at every threshold — also in the sweep's starting point, where the
      official script credits every unanswerable example as abstaining — and counts in every denominator: a
      failure is never an answer nor an abstention.  Its prediction must still be present (any value).
    """
    check_coverage(gold, predictions, lang)
    # one pass in gold order: (has a gold answer, EM, F1, no-answer probability, gives an answer) per example
    golds = [(first.text or "",) if len(answers) == 1 and not (first := answers[0]).aliases  # gold_strings, inlined
             else gold_strings(example, lang) for example in gold for answers in (example.answers[lang],)]
    chosen = [predictions[example.example_id] for example in gold]
    texts = [prediction.binary_answer or prediction.prediction or "" for prediction in chosen]
    tokens = tokenize_all([*texts, *(string for strings in golds for string in strings)], lang).__getitem__
    rows = [(strings != ("",), *example_scores(text, strings, tokens), prediction.no_answer_prob, bool(text))
            for strings, text, prediction in zip(golds, texts, chosen, strict=True)]
    order = {identifier: n for n, identifier in enumerate(predictions)}  # the predictions file's order
    swept = [n for n in sorted(range(len(rows)), key=lambda n: order[gold[n].example_id])
             if gold[n].example_id not in failed]
    threshold, best = _sweep([rows[n] for n in swept], grouped=ties == "grouped")
    scored = [(has, 0.0, 0.0) if example.example_id in failed
              else (has, float(not has) if probability > threshold else em,
                    float(not has) if probability > threshold else f1)
              for example, (has, em, f1, probability, _) in zip(gold, rows, strict=True)]
    with_answer = [row for row in scored if row[0]]
    without = [row for row in scored if not row[0]]
    return {
        "best_em": _mean([em for _, em, _ in scored]), "best_f1": round(100.0 * best / len(rows), 2),
        "best_answerable_em": _mean([em for _, em, _ in with_answer]),
        "best_answerable_f1": _mean([f1 for _, _, f1 in with_answer]),
        "best_unanswerable_em": _mean([em for _, em, _ in without]), "best_f1_thresh": round(threshold, 2),
    }


def _sweep(rows: list[tuple[bool, float, float, float, bool]], *, grouped: bool = False) -> tuple[float, float]:
    """(threshold, best score): start from everyone abstaining and admit answers by rising no-answer probability.

    ``rows`` are in the predictions file's order and sorting is stable, so equal probabilities are admitted
    in file order — and only a strictly better score moves the threshold, as in the official script.
    ``grouped``: the score is compared only once every row of a probability is admitted.
    """
    threshold = 0.0
    score = best = float(sum(not row[0] for row in rows))
    ordered = sorted(rows, key=lambda row: row[3])
    for n, (has, _, f1, probability, answers) in enumerate(ordered):
        if has:
            score += f1
        elif answers:
            score -= 1
        if grouped and n + 1 < len(ordered) and ordered[n + 1][3] == probability:
            continue
        if score > best:
            best, threshold = score, probability
    return threshold, best


def macro(per_language: dict[str, dict[str, float | None]]) -> dict[str, float | None]:
    """The official macro average: the mean of the languages' rounded values, rounded again."""
    result: dict[str, float | None] = {}
    for key in KEYS:
        values = [scores[key] for scores in per_language.values() if scores[key] is not None]
        result[key] = round(sum(values) / len(values), 2) if values else None
    return result
