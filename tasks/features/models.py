"""The features that need a model: how well cited passages support the reasoning, and how relevant they are.

``support_entailment``/``support_neutral``: a multilingual NLI cross-encoder's mean probability over each
citing ``##Reason:`` sentence and each passage it cites (labels read from the model's ``id2label``); two
cells served by one NLI pass, the process keeping the last batch's probabilities for the sibling.
``reranker_score``: the mean cross-encoder relevance of the question and each cited passage.  A response
citing no shown passage is ``not_applicable``; models load lazily, once per process.

See ``docs/arena.md``, "Features".
"""

from __future__ import annotations

from collections.abc import Sequence
from threading import Lock
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tasks.features.deterministic import NO_RESPONSE, Value
from tasks.features.inputs import FeatureInput
from tasks.inference.reading import citations, reason_section, strip_citations
from tasks.placement import DeviceConfig, load_cross_encoder, resolve
from tasks.stage import digest
from tasks.text.languages import all_rules
from tasks.text.sentences import split_sentences

NOT_CITED = Value(None, "not_applicable", "no cited passage that was shown")


class FeatureModels(BaseModel):
    """Which models the model-based features use (hub names or local sentence-transformers directories)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    nli: str = Field("MoritzLaurer/mDeBERTa-v3-base-xnli-multilingual-nli-2mil7",
                     description="A multilingual NLI cross-encoder (labels entailment / neutral / contradiction).")
    reranker: str = Field("BAAI/bge-reranker-v2-m3", description="A multilingual relevance cross-encoder.")
    device: DeviceConfig = Field(default_factory=DeviceConfig.from_env,
                                 description="Where and in what precision the feature models run.")


def _cross_encoder(name: str, models: FeatureModels) -> Any:
    """Loaded where the device policy (:mod:`tasks.placement`) places it, once per process and placement."""
    return load_cross_encoder(name, resolve(models.device))


def _cited(item: FeatureInput, ids: Sequence[str]) -> list[str]:
    return [item.passages[i] for i in dict.fromkeys(ids) if i in item.passages]


def reranker_score(inputs: Sequence[FeatureInput], models: FeatureModels) -> list[Value]:
    """Mean relevance of (question, cited passage), one batched prediction for every pair of every response."""
    pairs: list[tuple[str, str]] = []
    spans: list[tuple[int, int] | None] = []
    for item in inputs:
        passages = _cited(item, item.citations) if item.status == "ok" else []
        spans.append((len(pairs), len(pairs) + len(passages)) if passages else None)
        pairs += [(item.question, passage) for passage in passages]
    scores = _cross_encoder(models.reranker, models).predict(pairs, show_progress_bar=False) if pairs else np.zeros(0)
    return [NO_RESPONSE if item.status != "ok" else NOT_CITED if span is None
            else Value(float(np.mean(scores[span[0]:span[1]]))) for item, span in zip(inputs, spans, strict=True)]


def _label_columns(model: Any) -> tuple[int, int]:
    """The output positions of entailment and neutral, from the model's id2label."""
    labels = {str(label).lower(): int(index) for index, label in model.config.id2label.items()}
    try:
        return labels["entailment"], labels["neutral"]
    except KeyError:
        raise ValueError(f"the NLI model's labels are {sorted(labels)}; entailment and neutral are needed") from None


def _reason_pairs(item: FeatureInput) -> list[tuple[str, str]]:
    """(premise: cited passage, hypothesis: reasoning sentence) for every citing sentence of the reasoning."""
    reason = reason_section(item.raw_text, item.primed) or ""
    lang = item.lang if item.lang in all_rules() else "en"
    return [(passage, strip_citations(sentence)) for sentence in split_sentences(reason, lang)
            for passage in _cited(item, citations(sentence))]


_NLI_LOCK = Lock()
_last_nli: tuple[str, np.ndarray] | None = None  # (digest of the model and pairs, their probabilities)


def _nli(models: FeatureModels, pairs: list[tuple[str, str]]) -> np.ndarray:
    """NLI probabilities of ``pairs`` by the NLI model of ``models``, one row per pair; the last batch's are reused.

    The lock makes a concurrent sibling cell wait for the pass under way
    rather than start its own; only a digest of the pairs is kept, not their
    texts (passages of up to 800 tokens each).
    """
    global _last_nli
    key = digest([models.nli, models.device.model_dump(), pairs])
    with _NLI_LOCK:
        if _last_nli is None or _last_nli[0] != key:
            model = _cross_encoder(models.nli, models)
            _last_nli = key, (model.predict(pairs, apply_softmax=True, show_progress_bar=False) if pairs
                              else np.zeros((0, 3)))
        return _last_nli[1]


def support(inputs: Sequence[FeatureInput], models: FeatureModels) -> tuple[list[Value], list[Value]]:
    """(entailment, neutral) of each response, from one batched NLI prediction (shared, see the module notes)."""
    pairs: list[tuple[str, str]] = []
    spans: list[tuple[int, int] | None] = []
    for item in inputs:
        found = _reason_pairs(item) if item.status == "ok" else []
        spans.append((len(pairs), len(pairs) + len(found)) if found else None)
        pairs += found
    probabilities = _nli(models, pairs)
    entail, neutral = _label_columns(_cross_encoder(models.nli, models).model)
    out: tuple[list[Value], list[Value]] = ([], [])
    for item, span in zip(inputs, spans, strict=True):
        for values, column in zip(out, (entail, neutral), strict=True):
            if item.status != "ok":
                values.append(NO_RESPONSE)
            elif span is None:
                values.append(Value(None, "not_applicable", "no reasoning sentence cites a shown passage"))
            else:
                values.append(Value(float(np.mean(probabilities[span[0]:span[1], column]))))
    return out


MODEL_FEATURES = {
    "support_entailment": lambda inputs, models: support(inputs, models)[0],
    "support_neutral": lambda inputs, models: support(inputs, models)[1],
    "reranker_score": reranker_score,
}
