"""What distractor selection is told: its settings and, per QA item, the question to find distractors for."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tasks.placement import DeviceConfig
from tasks.text.answer_match import AnswerMatcher
from tasks.text.languages import rule_for


class DistractorConfig(BaseModel):
    """How distractors are retrieved and filtered (``docs/protocols/xrag.md``, construction step 5)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    per_lang: int = Field(
        6, ge=1,
        description="Distractors kept per item and document language (XRAG shows up to 6: 6 pivot in the "
                    "monolingual setting, 3 pivot + 3 X in the multilingual one).",
    )
    candidates_k: int = Field(
        50, ge=1, description="Candidates retrieved per item and document language by BM25, and as many again by the dense model.",
    )
    dense_model: str | None = Field(
        None,
        description="sentence-transformers model (hub name or local directory) for the dense half of the hybrid "
                    "retrieval and for difficulty; None retrieves with BM25 only.",
    )
    device: DeviceConfig = Field(default_factory=DeviceConfig.from_env,
                                 description="Where and in what precision the dense model runs.")
    fusion: Literal["rrf", "similarity"] = Field(
        "rrf",
        description="How the BM25 and dense lists become one ranking. rrf: reciprocal rank fusion, "
                    "sum of 1/(rrf_k + rank) over the lists a document is in; it needs no calibration between "
                    "unbounded, query-dependent BM25 scores and cosines, rewards documents both retrievers "
                    "find, and is robust without tuning (Cormack, Clarke & Büttcher 2009). similarity: by "
                    "difficulty alone, hardest first.",
    )
    rrf_k: int = Field(
        60, ge=1,
        description="The rrf constant; 60 is the published value that damps the weight of the very top ranks.",
    )
    near_duplicate: float = Field(
        0.5, gt=0, le=1,
        description="Reject a candidate whose character 5-gram Jaccard similarity with a supporting document "
                    "reaches this. Lexical, not dense: a dense cosine would also reject documents that are merely "
                    "on the same topic, which are exactly the hard distractors wanted, while copies, forks and "
                    "lightly edited versions share most 5-grams in any script. Distinct articles of the bundled "
                    "sample reach at most 0.23; a copy missing one sentence of four is near 0.8.",
    )
    answer_checker: str | None = Field(
        None,
        description="Registry name of a model asked, per surviving candidate, whether the document answers the "
                    "question (catches answers the string rule misses: paraphrases, other units or scripts). "
                    "None: the rules alone decide.",
    )
    use_unverified_distractors: bool = Field(
        False,
        description="Use a candidate the answer check could not judge (its call failed, was skipped by the budget or "
                    "its reply was unreadable). Off: such a candidate may answer the question, so the next one is "
                    "tried instead, and a rerun asks again.",
    )
    check_chars: int = Field(1500, ge=100, description="Characters of a candidate shown to the answer check.")
    check_max_tokens: int = Field(96, ge=16, description="Tokens for one answer-check verdict and its justification.")
    temporal_gap_days: int | None = Field(
        None, ge=0,
        description="XRAG's rule: a distractor must be dated at least this many days before the earliest "
                    "supporting document; applied only when both carry timestamps. None on Wikipedia, whose "
                    "timestamps are of the latest revision, not of publication; news collections set 14 (the paper).",
    )


class DistractorQuery(BaseModel):
    """One QA item as distractor selection sees it.

    ``queries`` and ``answers`` hold the question and its gold answer in each
    language of ``doc_langs``: a document is retrieved with the question in
    its own language and checked for the answer in its own language.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    item_id: str = Field(min_length=1)
    queries: dict[str, str] = Field(description="Language → the question in that language.")
    answers: dict[str, str] = Field(description="Language → the gold answer in that language.")
    supporting: tuple[tuple[str, int], ...] = Field(min_length=1, description="The supporting documents as (lang, page_id).")
    doc_langs: tuple[str, ...] = Field(min_length=1, description="Languages to find distractors in.")
    before: date | None = Field(None, description="Live build: distractors only from articles that first appeared "
                                                  "before this day (the item's window start).")

    @model_validator(mode="after")
    def _complete(self) -> DistractorQuery:
        for lang in self.doc_langs:
            try:
                rule_for(lang)
                if not self.queries.get(lang, "").strip():
                    raise ValueError(f"no {lang} question to retrieve {lang} distractors with")
                if lang not in self.answers:
                    raise ValueError(f"no {lang} answer to check {lang} distractors against")
                AnswerMatcher(self.answers[lang], lang)
            except ValueError as exc:
                raise ValueError(f"item {self.item_id}: {lang}: {exc}") from None
        return self
