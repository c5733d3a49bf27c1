"""The translation stage's choices: how strict the quality gate is and how long a translation may be."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator


class TranslateConfig(BaseModel):
    """Quality gate thresholds and the output-length policy of machine translation.

    ``min_chrf`` = 35 (chrF of the round trip against the source, sacrebleu's
    0–100 scale).  A round trip through a faithful translation comes back as a
    paraphrase: measured on hand-made pairs, rewordings that keep the meaning
    ("Die Velna-Brücke ist 412 km lang." for "Die Brücke über die Velna ist 412
    Kilometer lang.", "Aska mountain" for "Mount Aska") score 39–77, while a
    back-translation about something else, or one that lost the question's
    point ("When was Brennmoor founded?" for "In which year did the first
    glassworks in Brennmoor open?"), scores 9–23.  35 sits in that gap,
    leaning lenient because the numbers and entities checks catch the most
    harmful errors (a changed year, a dropped name) on their own.  chrF is
    character-based, so it needs no tokenizer for Chinese, Japanese or Thai.

    ``min_detect_letters`` = 20.  Below about three words lingua's verdict is a
    guess, and texts made mostly of names are the worst case: "Velna" is
    Spanish to it, "Mount Aska" Indonesian, "Il est né à Orvik en 1864." (15
    letters) Italian, "東京" Chinese.  Short answers ("1998", "Velna", "la
    cathédrale de Tarsk") therefore skip the language check — recorded as not
    applicable (no detected language), not as a failure — and still go through
    the round-trip, numbers and entities checks; questions and contexts are
    long enough to be judged.

    Output length: a translation gets ``tokens_per_char`` tokens per source
    character, at least ``min_tokens`` and at most ``max_tokens``.  One token per
    character covers the longest expansions among the supported scripts —
    Chinese or Japanese into English (about 0.6 token per source character) and
    Latin script into Hindi or Thai with tokenizers that spend a token per
    character — and the stop at the end of the line ends a normal answer long
    before the limit, which only bounds a model that rambles on.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_chrf: float = Field(35.0, ge=0.0, le=100.0, description="Round-trip chrF (0–100) a translation needs to pass.")
    check_numbers: bool = Field(True, description="Every number of the source must appear in the translation.")
    check_entities: bool = Field(
        True, description="Every named entity of the source must appear in the translation, in its target-language form."
    )
    min_detect_letters: int = Field(
        20, ge=0, description="Texts with fewer letters skip the language check (lingua cannot tell short texts apart)."
    )
    tokens_per_char: float = Field(
        1.0, gt=0.0, description="Output tokens allowed per character of the text to translate."
    )
    min_tokens: int = Field(16, ge=1, description="Output tokens allowed for even the shortest text.")
    max_tokens: int = Field(1024, ge=1, description="Output tokens allowed for even the longest text.")

    @model_validator(mode="after")
    def _limits_ordered(self) -> TranslateConfig:
        if self.min_tokens > self.max_tokens:
            raise ValueError(f"min_tokens {self.min_tokens} > max_tokens {self.max_tokens}")
        return self

    def token_limit(self, text: str) -> int:
        """``max_tokens`` of the request translating ``text``."""
        return min(self.max_tokens, max(self.min_tokens, math.ceil(len(text) * self.tokens_per_char)))
