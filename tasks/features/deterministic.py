"""The features computed without a model: language, citations, overlap with a reference, and labelled extras.

Each function takes a batch of responses and returns one :class:`Value` per response, in order, and the
batch shares what its responses share (one trec_eval run, one BLEU scorer per language, each distinct text
tokenised once) — which is what makes the stage fast (``benchmarks/arena.py``).  BLEU and ROUGE-L keep
their libraries' results; their tokens differ, so each tokenises on its own (BLEU's ``13a`` and ``zh`` via
:mod:`tasks.features.bleu_tokens`).

See ``docs/arena.md``, "Features".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache, partial
from itertools import count
from typing import NamedTuple, cast

import numpy as np
from pytrec_eval import RelevanceEvaluator
from rapidfuzz.distance import LCSseq
from rouge_score import scoring as rouge_scoring
from sacrebleu.metrics import BLEU

from tasks.features.bleu_scores import SMOOTHING, sentence_bleu_scores
from tasks.features.bleu_tokens import translated
from tasks.features.inputs import FeatureInput
from tasks.features.ngrams import clipped_matches
from tasks.inference.refusals import is_refusal
from tasks.text.segment import lowered_words

CHARACTER_SCRIPTS = frozenset({"th", "lo", "km", "my"})


class Value(NamedTuple):
    """One feature of one response: ``value`` when ``status`` is ok, else why there is none.

    A named tuple rather than a frozen dataclass, whose ``__init__`` sets each
    field through ``object.__setattr__``: a batch builds one per response and
    feature, and this takes half the time.
    """

    value: float | None
    status: str = "ok"  # ok | no_response | unsupported | not_applicable | excluded
    reason: str | None = None


NO_RESPONSE = Value(None, "no_response", "the response failed: nothing to measure")
Compute = Callable[[Sequence[FeatureInput]], list[Value]]


def _each(measure: Callable[[FeatureInput], Value]) -> Compute:
    """A batch function from a per-response one; failed responses get no value."""
    def batch(inputs: Sequence[FeatureInput]) -> list[Value]:
        return [measure(item) if item.status == "ok" else NO_RESPONSE for item in inputs]
    return batch


def _language(probability: Callable[[FeatureInput], float | None]) -> Compute:
    def measure(item: FeatureInput) -> Value:
        if item.language_status not in ("ok", "unsupported"):
            return Value(None, "not_applicable", f"language not identified ({item.language_status})")
        value = probability(item) if item.language_status == "ok" else None
        # placed by script alone (a language lingua has no model for): no probability to give
        return Value(None, "unsupported", f"lingua cannot detect {item.lang}") if value is None else Value(value)
    return _each(measure)


NO_RELEVANT = Value(None, "not_applicable", "the query has no judged relevant passage")
UNCITED = Value(0.0)  # no citation scores 0 (trec_eval leaves a query without a ranking out)


def _citation(measure: str) -> Compute:
    """One trec_eval run (pytrec_eval's ``measure``) over the responses that cite something and whose query has
    judged relevant passages; the others' values need no run."""
    field = measure.replace(".", "_")  # how pytrec_eval names a measure's result: map_cut.10 -> map_cut_10

    def batch(inputs: Sequence[FeatureInput]) -> list[Value]:
        values = [NO_RESPONSE if item.status != "ok" else NO_RELEVANT if not item.relevant else UNCITED
                  for item in inputs]
        ranked = [n for n, item in enumerate(inputs) if item.status == "ok" and item.relevant and item.citations]
        keys = list(map(str, ranked))
        qrels = {key: dict.fromkeys(inputs[n].relevant, 1) for key, n in zip(keys, ranked)}
        run = {key: {doc: float(len(cited) - rank) for rank, doc in enumerate(dict.fromkeys(cited))}
               for key, cited in zip(keys, (inputs[n].citations for n in ranked))}
        results = RelevanceEvaluator(qrels, {measure}).evaluate(run)
        for key, n in zip(keys, ranked):
            values[n] = Value(float(results[key][field]))
        return values
    return batch


def bleu_tokenizer(lang: str) -> str:
    """sacreBLEU's tokenizer for ``lang`` (see the module notes)."""
    if lang.startswith("zh"):
        return "zh"
    if lang == "ja":
        try:
            import MeCab  # noqa: F401 - only whether it is installed
            return "ja-mecab"
        except ImportError:
            return "char"
    return "char" if lang in CHARACTER_SCRIPTS else "13a"


@cache
def _bleu(lang: str) -> BLEU:
    """sacreBLEU's scorer for ``lang``, its tokenizer rewritten in C-speed steps where
    :mod:`tasks.features.bleu_tokens` has one (same tokens)."""
    scorer = BLEU(tokenize=bleu_tokenizer(lang), smooth_method=SMOOTHING, effective_order=True)
    scorer.tokenizer = translated(scorer.tokenizer)
    return scorer


Pair = tuple[str, str]  # (hypothesis, reference)


def answer_bleu(pairs: Sequence[Pair], lang: str) -> list[float]:
    """sacreBLEU's ``sentence_score(hypothesis, [reference]).score`` of each pair, each distinct text tokenised once.

    The N systems answering an instance share its reference, so it is read
    once; every text is tokenised by the scorer's tokenizer (sacreBLEU's tokens), the clipped
    n-gram matches of all pairs are counted together (:mod:`tasks.features.ngrams`)
    and the scores are ``compute_bleu``'s of the statistics ``sentence_score``
    gathers, computed for all pairs at once (:mod:`tasks.features.bleu_scores`;
    ``tests/evaluation/test_features.py`` checks the equality on many pairs).
    """
    scorer = _bleu(lang)
    index = {text: n for n, text in enumerate(dict.fromkeys(text for pair in pairs for text in pair))}
    words = [scorer._preprocess_segment(text).split() for text in index]
    lengths = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
    hypotheses = np.fromiter((index[hypothesis] for hypothesis, _ in pairs), dtype=np.int64, count=len(pairs))
    references = np.fromiter((index[reference] for _, reference in pairs), dtype=np.int64, count=len(pairs))
    matches = clipped_matches(words, hypotheses, references, scorer.max_ngram_order)
    return sentence_bleu_scores(matches, lengths[hypotheses], lengths[references])


def rouge_words(text: str, lang: str) -> list[str]:
    """ROUGE's tokens: the project's word segmentation of ``lang``, lower-cased (unspaced scripts by words)."""
    return lowered_words(text, lang)


def answer_rouge_l(pairs: Sequence[Pair], lang: str) -> list[float]:
    """rouge-score's ROUGE-L F (``RougeScorer(["rougeL"]).score(reference, hypothesis)``) of each pair.

    rouge-score fills its LCS table in pure Python, which is most of the cost
    of the feature; rapidfuzz's bit-parallel LCS gives the same length. Each
    distinct text is segmented once and its words numbered in one vocabulary,
    so LCS compares integers that stand for exactly one word each (a new
    word takes the next number of a counter that every lookup draws from, so
    numbers are never shared, and ``map`` runs the lookups in C).
    """
    vocabulary: dict[str, int] = {}
    numbers = count()
    ids = {text: list(map(vocabulary.setdefault, rouge_words(text, lang), numbers))
           for text in {text for pair in pairs for text in pair}}
    return [_lcs_f(ids[reference], ids[hypothesis]) for hypothesis, reference in pairs]


def _lcs_f(target: list[int], prediction: list[int]) -> float:
    """rouge-score's ``_score_lcs(target, prediction).fmeasure``, with the LCS length from rapidfuzz."""
    if not target or not prediction:
        return 0.0
    common = LCSseq.similarity(target, prediction)
    return rouge_scoring.fmeasure(common / len(prediction), common / len(target))


def _unscored(item: FeatureInput) -> Value | None:
    """Why ``item`` gets no overlap score, or None when it is scored against its reference."""
    if item.status != "ok":
        return NO_RESPONSE
    if item.reference_is_own:
        return Value(None, "excluded", "this system's answers are the reference: never scored against itself")
    if not item.reference:
        return Value(None, "not_applicable", "no reference answer")
    return None


Scores = Callable[[Sequence[Pair], str], list[float]]  # one overlap score of each pair, all in one language
#: the overlap features' scores of (hypothesis, reference) pairs
OVERLAP: dict[str, Scores] = {"answer_bleu": answer_bleu, "answer_rouge_l": answer_rouge_l}


def each_language(scores: Scores) -> Callable[[dict[str, list[Pair]]], dict[str, list[float]]]:
    """Scores every language's pairs with ``scores``, one language after the other."""
    return lambda pairs: {lang: scores(some, lang) for lang, some in pairs.items()}


def overlap_values(inputs: Sequence[FeatureInput],
                   score: Callable[[dict[str, list[Pair]]], dict[str, list[float]]]) -> list[Value]:
    """An overlap feature of every input: ``score`` gets the (answer, reference) pairs to score by language and
    gives their scores in the same order; the other inputs get the status that says why they have none."""
    values = [_unscored(item) for item in inputs]
    positions: dict[str, list[int]] = {}
    for n, value in enumerate(values):
        if value is None:
            positions.setdefault(inputs[n].lang, []).append(n)
    pairs = {lang: [(inputs[n].answer_text, inputs[n].reference or "") for n in ns] for lang, ns in positions.items()}
    for lang, scores in score(pairs).items():
        for n, value in zip(positions[lang], scores, strict=True):
            values[n] = Value(value)
    return cast(list[Value], values)


DETERMINISTIC: dict[str, Compute] = {
    "target_language": _language(lambda item: item.target_prob),
    "english_language": _language(lambda item: item.english_prob),
    "citation_map_at_10": _citation("map_cut.10"),
    "citation_recall_at_10": _citation("recall.10"),
    "answer_bleu": partial(overlap_values, score=each_language(answer_bleu)),
    "answer_rouge_l": partial(overlap_values, score=each_language(answer_rouge_l)),
    "extra_answer_chars": _each(lambda item: Value(float(len(item.answer_text)))),
    "extra_code_switching": _each(lambda item: Value(item.switched_share) if item.switched_share is not None
                                  else Value(None, "not_applicable", "language not identified")),
    "extra_refusal": _each(lambda item: Value(float(is_refusal(item.answer_text, item.lang)))),
}
