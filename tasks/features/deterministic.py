"""The features computed without a model: language, citations, overlap with a reference, and labelled extras.

Each function takes a batch of responses and returns one :class:`Value` per
response, in order; a batch shares its set-up (one BLEU scorer and one ROUGE
scorer per language, one trec_eval run for all citation rankings), which is
what makes them fast — see ``benchmarks/arena.py``.

- ``target_language`` / ``english_language``: lingua's probabilities stored
  with the response (citations stripped); ``unsupported`` when lingua does not
  know the question's language.
- ``citation_map_at_10`` / ``citation_recall_at_10``: the cited ids, in order
  of first appearance, as a ranking judged against the relevant passages
  shown (trec_eval's ``map_cut.10`` and ``recall.10`` through ir-measures); no
  citation scores 0; no relevant passage shown makes the feature not
  applicable.
- ``answer_bleu`` (sacreBLEU, 0–100) and ``answer_rouge_l`` (ROUGE-L F, 0–1)
  of the answer against the reference: sacreBLEU's ``zh`` tokenizer for
  Chinese, ``ja-mecab`` for Japanese when MeCab is installed and characters
  otherwise, characters for the other unspaced scripts (th, lo, km, my),
  ``13a`` elsewhere; ROUGE on the project's word segmentation (jieba, fugashi,
  ICU…), so unspaced scripts are compared by words, not by whole sentences.
- extras, labelled as such: ``extra_answer_chars``, ``extra_code_switching``
  (share of sentences in another language), ``extra_refusal`` (1 when the
  answer declines).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import ir_measures
from rouge_score import rouge_scorer
from sacrebleu.metrics import BLEU

from tasks.features.inputs import FeatureInput
from tasks.inference.refusals import is_refusal
from tasks.text.segment import tokenize

CHARACTER_SCRIPTS = frozenset({"th", "lo", "km", "my"})


@dataclass(frozen=True)
class Value:
    """One feature of one response: ``value`` when ``status`` is ok, else why there is none."""

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
        if item.language_status == "unsupported":
            return Value(None, "unsupported", f"lingua cannot detect {item.lang}")
        if item.language_status != "ok":
            return Value(None, "not_applicable", f"language not identified ({item.language_status})")
        return Value(probability(item))
    return _each(measure)


def _citation(measure: ir_measures.Measure) -> Compute:
    """One trec_eval run over every response whose instance showed relevant passages."""
    def batch(inputs: Sequence[FeatureInput]) -> list[Value]:
        judged = {str(n): item for n, item in enumerate(inputs) if item.status == "ok" and item.relevant}
        qrels = [ir_measures.Qrel(key, doc, 1) for key, item in judged.items() for doc in sorted(item.relevant)]
        run = [ir_measures.ScoredDoc(key, doc, float(len(item.citations) - rank))
               for key, item in judged.items() for rank, doc in enumerate(dict.fromkeys(item.citations))]
        scores = {metric.query_id: metric.value for metric in ir_measures.iter_calc([measure], qrels, run)}
        values = []
        for n, item in enumerate(inputs):
            if item.status != "ok":
                values.append(NO_RESPONSE)
            elif not item.relevant:
                values.append(Value(None, "not_applicable", "no relevant passage was shown"))
            else:
                values.append(Value(float(scores.get(str(n), 0.0))))  # no citation: not in the run, scores 0
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
    return BLEU(tokenize=bleu_tokenizer(lang), effective_order=True)


class _WordTokenizer:
    """ROUGE's tokenizer interface over the project's word segmentation of one language."""

    def __init__(self, lang: str) -> None:
        self.lang = lang

    def tokenize(self, text: str) -> list[str]:
        return [token.lower() for token in tokenize(text, self.lang)]


@cache
def _rouge(lang: str) -> rouge_scorer.RougeScorer:
    return rouge_scorer.RougeScorer(["rougeL"], tokenizer=_WordTokenizer(lang))


def _overlap(score: Callable[[str, str, str], float]) -> Compute:
    def measure(item: FeatureInput) -> Value:
        if item.reference_is_own:
            return Value(None, "excluded", "this system's answers are the reference: never scored against itself")
        if not item.reference:
            return Value(None, "not_applicable", "no reference answer")
        return Value(score(item.answer_text, item.reference, item.lang))
    return _each(measure)


def answer_bleu(hypothesis: str, reference: str, lang: str) -> float:
    return _bleu(lang).sentence_score(hypothesis, [reference]).score


def answer_rouge_l(hypothesis: str, reference: str, lang: str) -> float:
    return _rouge(lang).score(reference, hypothesis)["rougeL"].fmeasure


DETERMINISTIC: dict[str, Compute] = {
    "target_language": _language(lambda item: item.target_prob),
    "english_language": _language(lambda item: item.english_prob),
    "citation_map_at_10": _citation(ir_measures.AP @ 10),
    "citation_recall_at_10": _citation(ir_measures.R @ 10),
    "answer_bleu": _overlap(answer_bleu),
    "answer_rouge_l": _overlap(answer_rouge_l),
    "extra_answer_chars": _each(lambda item: Value(float(len(item.answer_text)))),
    "extra_code_switching": _each(lambda item: Value(item.switched_share) if item.switched_share is not None
                                  else Value(None, "not_applicable", "language not identified")),
    "extra_refusal": _each(lambda item: Value(float(is_refusal(item.answer_text, item.lang)))),
}
