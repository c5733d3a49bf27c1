"""The translation stage's choices: how strict the quality gate is and how long a translation may be."""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator


class TranslateConfig(BaseModel):
    """Quality gate thresholds and the output-length policy of machine translation.

    ``min_chrf`` (round-trip chrF, 0–100) sits between what faithful round trips and ones that lost the
    point score, leaning lenient because the numbers and entities checks catch the worst errors.  Texts under
    ``min_detect_letters`` letters skip the language check (lingua guesses on short, name-heavy text) and are
    recorded as not applicable, not failed.  The token limit only bounds a model that rambles on.

    See ``docs/qa-build.md``, "Translation".
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
