"""The XRAG construction choices: how article pairs are found, checked and turned into questions.

Defaults follow ``docs/protocols/xrag.md`` (the paper's news setting) where it gives a
number; the character and token limits keep prompts within what the small
offline model reads and writes in a few seconds.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.placement import DeviceConfig
from tasks.qa.window import Window

PairKind = Literal["monolingual", "crosslingual"]
QuestionType = Literal["aggregation", "comparison", "multihop", "set"]

PAIR_KINDS: tuple[PairKind, ...] = ("monolingual", "crosslingual")
QUESTION_TYPES: tuple[QuestionType, ...] = ("aggregation", "comparison", "multihop", "set")


class XragConfig(BaseModel):
    """Pairing, relatedness check and the four-step question chain of an XRAG build."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pivot: str = Field("en", description="Pivot language: one side of every pair, and the language of the questions.")
    min_shared_entities: int = Field(
        2, ge=1,
        description="Entities two articles must share to be a pair; an article's own subject counts as one of its "
                    "entities, so one article mentioning the other is one shared entity (the paper: 2 title entities).")
    max_days_apart: float | None = Field(
        14, ge=0,
        description="Largest gap between the two articles' timestamps (Wikipedia: last revision, standing in for the "
                    "paper's publication date); applied only when both have one. None: no window.")
    dense_model: str | None = Field(
        None,
        description="sentence-transformers model (multilingual; hub name or local directory) that also pairs a "
                    "pivot article with its nearest articles of each other language, as the paper's dense retriever "
                    "pairs news about the same event; never an article with its own translation (same QID). "
                    "None: entity pairs only.")
    device: DeviceConfig = Field(default_factory=DeviceConfig.from_env,
                                 description="Where and in what precision the dense model runs.")
    min_similarity: float = Field(0.5, ge=-1, le=1, description="Lowest cosine of a dense pair.")
    dense_k: int = Field(3, ge=1, description="Nearest pivot articles considered per article of another language.")
    max_entity_articles: int | None = Field(
        1000, ge=1,
        description="Entities mentioned by more articles than this in one language (a country, a language, a year) "
                    "do not count towards a pair: they pair nearly everything and would make pairing grow with the "
                    "square of a wiki's size. None: every entity counts.")
    max_pairs: int = Field(
        100, ge=1,
        description="Pairs kept per pair kind, and per other language for cross-language pairs, highest score first.")
    pair_kinds: tuple[PairKind, ...] = Field(
        PAIR_KINDS, min_length=1,
        description="monolingual: pivot–pivot pairs; crosslingual: a pivot article with an article of another language "
                    "about a different entity.")
    question_types: tuple[QuestionType, ...] = Field(
        QUESTION_TYPES, min_length=1, description="Question types asked per pair.")
    questions_per_type: int = Field(2, ge=1, le=2, description="Questions asked per pair and type (the paper: at most 2).")
    summary_words: int = Field(180, ge=20, description="Longest summary kept, in words of the article's language.")
    simple_qa_per_summary: int = Field(
        6, ge=1, le=6, description="Most simple question–answer pairs asked per summary (1–6).")
    question_words: int = Field(25, ge=5, description="Longest cross-document question kept, in words.")
    check_chars: int = Field(800, ge=100, description="Characters of each article shown to the relatedness check.")
    source_chars: int = Field(4000, ge=200, description="Characters of an article given to its summary step.")
    answer_chars: int = Field(1500, ge=200, description="Characters of each article given to the answer step.")
    check_max_tokens: int = Field(96, ge=16, description="Tokens for the relatedness verdict and its justification.")
    summary_max_tokens: int = Field(256, ge=16, description="Tokens for one summary.")
    simple_qa_max_tokens: int = Field(128, ge=16, description="Tokens for one summary's simple question–answer pairs.")
    question_max_tokens: int = Field(112, ge=16, description="Tokens for one pair's questions of one type.")
    answer_max_tokens: int = Field(64, ge=8, description="Tokens for one answer.")
    window: Window | None = Field(
        None, description="Live build: only articles that first appeared within SINCE[:UNTIL] (dump dates, inclusive) "
                          "are paired (both articles of a pair), their dates in place of revision times for max_days_apart; None: every article.")
