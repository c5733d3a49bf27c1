"""Which responses become traces: all, none, or a seeded sample of N per model and language.

Every response is in the warehouse; traces are for reading some of them in
the MLflow UI, and each costs a write of a few hundred milliseconds at most.
The default, 30 per model and language, keeps a 10,000-question evaluation in
26 locales at 780 traces per model (a few minutes of writes at worst, a few
pages of the Traces tab) while still showing what is common: a behaviour
that affects one answer in ten of a language turns up among its 30 with
probability 1 − 0.9³⁰ ≈ 96%.

The sample is drawn per language by a hash of (seed, instance id) — not by
shuffling — so every model's sample holds the same questions (their traces
compare side by side) and adding a model or a question does not move the
others.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.qa.sampling import seeded_order

DEFAULT_PER_LANGUAGE = 30
_COUNT = re.compile(r"all|none|\d+")


class TraceSample(BaseModel):
    """How many responses of each model and language an evaluation writes as MLflow traces (arena: battles per
    language), and the seed of the sample."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    traces: str = Field(str(DEFAULT_PER_LANGUAGE), description="all, none, or N per model and language (arena: N"
                        " battles per language), a seeded sample.")
    seed: int = Field(0, description="Seed of the traces' sample.")

    @field_validator("traces")
    @classmethod
    def _count(cls, value: str) -> str:
        value = value.strip().lower()
        if not _COUNT.fullmatch(value):
            raise ValueError(f"traces must be all, none or a number of traces per language, not {value!r}")
        return value

    @property
    def per_language(self) -> int | None:
        """Traces per language; None for all of them."""
        if self.traces == "all":
            return None
        return 0 if self.traces == "none" else int(self.traces)

    def describe(self) -> str:
        """What was asked for, as a run tag shows it: "30 per language, seed 0", "all", "none"."""
        return self.traces if self.traces in ("all", "none") else f"{self.traces} per language, seed {self.seed}"

    def pick(self, keys: Iterable[tuple[str, str]]) -> set[str]:
        """The keys (of ``(language, key)`` pairs) in the sample: each language's first ``per_language`` in the
        seeded order."""
        by_lang: dict[str, list[str]] = defaultdict(list)
        for lang, key in keys:
            by_lang[lang].append(key)
        limit = self.per_language
        return {key for found in by_lang.values()
                for key in seeded_order(sorted(set(found)), self.seed, key=str)[:limit]}
