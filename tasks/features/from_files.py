"""MIRAGE's features of responses made elsewhere (``babelbench score features``): files in, one JSON object out.

Responses, shown passages, TREC qrels and optional gold answers as files; each reply is read as inference
reads one into the stage's own :class:`FeatureInput` and scored by the stage's functions, so a number here
and on the leaderboard mean the same.  Names are the spec's (``citation_MAP@10`` …), the stage's accepted.

See ``docs/evaluation.md``, "Scoring files made elsewhere".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from statistics import fmean
from typing import Any

import msgspec

from tasks.errors import ConfigError
from tasks.features.compute import deterministic_values
from tasks.features.deterministic import DETERMINISTIC, Value
from tasks.features.inputs import FeatureInput
from tasks.features.models import FeatureModels
from tasks.features.registry import FEATURES, FeatureNeeds
from tasks.imports.common import unique_lines
from tasks.imports.miracl import read_qrels
from tasks.inference.language import response_language
from tasks.inference.reading import citations, strip_citations
from tasks.inference.respond import read_answer
from tasks.json_lines import read_typed_lines

#: the spec's name of each feature whose stage name differs (MIRAGE-BENCH's 11 columns)
SPEC_NAMES = {"citation_map_at_10": "citation_MAP@10", "citation_recall_at_10": "citation_Recall@10",
              "answer_rouge_l": "answer_rougeL"}
STAGE_NAMES = {spec: stage for stage, spec in SPEC_NAMES.items()}
#: the features that read lingua's view of a reply (computed only when one of them is asked for)
LANGUAGE_FEATURES = frozenset({"target_language", "english_language", "extra_code_switching"})


class ResponseLine(msgspec.Struct):
    query_id: str
    lang: str
    model: str
    text: str
    question: str | None = None


class PassageLine(msgspec.Struct):
    query_id: str
    doc_id: str
    text: str


class ReferenceLine(msgspec.Struct):
    query_id: str
    answer: str


def spec_name(name: str) -> str:
    return SPEC_NAMES.get(name, name)


def chosen_features(only: Sequence[str] | None) -> list[str]:
    """The stage names of the features to compute: ``only`` (spec or stage names) or the deterministic ones."""
    if not only:
        return list(DETERMINISTIC)
    names = [STAGE_NAMES.get(name, name) for name in only]
    registered = FEATURES.names()
    graded = sorted(spec_name(name) for name in names if name in registered and FEATURES.get(name).template)
    if graded:
        raise ConfigError(f"{', '.join(graded)}: graded by an LLM, which scoring from files does not call; import the"
                          " responses (`babelbench import responses`) and run `babelbench features --grader …`")
    known = [name for name in registered if not FEATURES.get(name).template]
    unknown = sorted(name for name in names if name not in known)
    if unknown:
        raise ConfigError(f"unknown feature(s) {', '.join(unknown)}; known: {', '.join(map(spec_name, known))}")
    return list(dict.fromkeys(names))


def read_inputs(responses: Path, passages: Path, qrels: Path, reference: Path | None, *,
                language: bool = True) -> list[FeatureInput]:
    """One :class:`FeatureInput` per response line, in file order (lingua's reading only when ``language``)."""
    answers = read_typed_lines(responses, ResponseLine, "response (query_id, lang, model, text)")
    if not answers:
        raise ConfigError(f"{responses}: no responses")
    unique_lines(answers, lambda line: (line.query_id, line.model), responses, "query and model")
    shown: dict[str, dict[str, str]] = {}
    for _, line in unique_lines(read_typed_lines(passages, PassageLine, "passage (query_id, doc_id, text)"),
                                lambda line: (line.query_id, line.doc_id), passages, "passage").values():
        shown.setdefault(line.query_id, {})[line.doc_id] = line.text
    judged = read_qrels(qrels)
    gold = ({line.query_id: line.answer for _, line in unique_lines(
        read_typed_lines(reference, ReferenceLine, "reference (query_id, answer)"), lambda line: line.query_id,
        reference, "query").values()} if reference is not None else {})
    inputs = []
    for number, line in answers:
        if line.query_id not in shown:
            raise ConfigError(f"{responses} line {number}: {passages.name} has no passage of query {line.query_id!r}")
        read = read_answer(line.text)
        answer = read.value or ""
        relevant = frozenset(doc for doc, rel in judged.get(line.query_id, {}).items() if rel > 0)
        heard = response_language(line.text, line.lang) if language and read.ok else None
        inputs.append(FeatureInput(
            instance_id=line.query_id, model=line.model, lang=line.lang, question=line.question or "",
            status=read.status, answer=answer, answer_text=strip_citations(answer), raw_text=line.text,
            citations=tuple(citations(line.text)), relevant=relevant, passages=shown[line.query_id],
            reference=gold.get(line.query_id), reference_is_own=False,
            language_status=heard.status if heard else None, target_prob=heard.target_prob if heard else None,
            english_prob=heard.english_prob if heard else None,
            switched_share=heard.switched_share if heard else None))
    return inputs


def score_feature_files(responses: Path, passages: Path, qrels: Path, reference: Path | None = None, *,
                        only: Sequence[str] | None = None, models: FeatureModels | None = None) -> dict[str, Any]:
    """``{"responses": [{"query_id", "model", "lang", "features": {name: value}, "missing": {name: status}}],
    "models": {model: {name: mean}}}``, names as the spec writes them.

    A feature a response has no value for (a failed read, no relevant
    passage shown, no reference …) is null in ``features`` and its status is
    in ``missing``; a model's mean is over the values it has (null when none).
    """
    names = chosen_features(only)
    inputs = read_inputs(responses, passages, qrels, reference, language=bool(LANGUAGE_FEATURES & set(names)))
    if "reranker_score" in names:
        unasked = next((item for item in inputs if not item.question), None)
        if unasked is not None:
            raise ConfigError(f"reranker_score reads the question: {responses} has none for query"
                              f" {unasked.instance_id!r} of {unasked.model!r} (add \"question\" to each line)")
    needs = FeatureNeeds(models=models or FeatureModels())
    values: dict[str, list[Value]] = {}
    for name in names:  # a built-in deterministic one in the stage's batches (on the Dask cluster when large)
        values[name] = (deterministic_values(inputs, name) if name in DETERMINISTIC
                        else FEATURES.get(name).compute(inputs, needs))
    rows = []
    for n, item in enumerate(inputs):
        rows.append({"query_id": item.instance_id, "model": item.model, "lang": item.lang,
                     "features": {spec_name(name): values[name][n].value for name in names},
                     "missing": {spec_name(name): values[name][n].status for name in names
                                 if values[name][n].status != "ok"}})
    means: dict[str, dict[str, float | None]] = {}
    for model in sorted({item.model for item in inputs}):
        mine = [n for n, item in enumerate(inputs) if item.model == model]
        for name in names:
            measured = [values[name][n].value for n in mine if values[name][n].status == "ok"]
            means.setdefault(model, {})[spec_name(name)] = fmean(measured) if measured else None
    return {"responses": rows, "models": means}
