"""Every choice of the CLIR (CLIRMatrix) recipe that the paper leaves open, as one typed config.

The stages of the recipe read their fields from here, so a field's value is
part of the fingerprint of exactly the stages that read it, and the Prefect UI
renders the whole recipe as one form. Defaults follow the recommendations of
``docs/protocols/clir.md``; each field's description says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: Label of the query's own article; the Jenks classes always end at 5 just below it.
SELF_LABEL = 6
#: Label of the highest Jenks class; lower classes count down from here.
TOP_CLASS_LABEL = 5


class ClirConfig(BaseModel):
    """The CLIRMatrix mining and packaging decisions, one documented field each."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    top_k: int = Field(
        100,
        ge=1,
        description=(
            "Hits kept per title query, and the size every 'base' query is padded to. "
            "CLIRMatrix kept and padded to 100."
        ),
    )
    normalisation: Literal["minmax", "max"] = Field(
        "minmax",
        description=(
            "How one query's BM25 scores are mapped to [0, 1] before Jenks: (s - min) / (max - min), "
            "or s / max. Scores are normalised per query because BM25 scales differ between queries. "
            "Both maps are positive affine, and Fisher-Jenks minimises squared deviations, which such "
            "a map only scales, so the choice changes the normalised scores but never the labels."
        ),
    )
    self_in_jenks: bool = Field(
        False,
        description=(
            "Whether the query's own article enters normalisation and Jenks. Off by default: its label is "
            "overwritten with 6 anyway, and its usually far larger score would squeeze all other hits "
            "into the lower classes."
        ),
    )
    force_self_label: bool = Field(
        True,
        description=(
            "Give the query's own article label 6 even when retrieval did not return it in the top K "
            "(it is then appended). The paper says the own article is always labelled 6."
        ),
    )
    classes: int = Field(
        5,
        ge=1,
        le=TOP_CLASS_LABEL,
        description=(
            "Jenks classes for the hits other than the own article. The highest class is always labelled 5, "
            "lower ones 4, 3, ... so that 6 stays the only label above it; with the default the labels are 1-5."
        ),
    )
    split_sizes: dict[str, int] = Field(
        default_factory=lambda: {"train": 10_000, "dev": 1_000, "test1": 1_000, "test2": 1_000},
        description=(
            "Most queries per direction in each split of the 'base' collection (CLIRMatrix BI-139 base: "
            "10,000 train, 1,000 each of dev, test1, test2). Queries beyond the caps are in the full "
            "collection only."
        ),
    )
    split_fractions: dict[str, float] | None = Field(
        None,
        description=(
            "Share of all topics (QIDs) assigned to each split, independently of any direction. "
            "None: proportional to split_sizes, so a direction with exactly sum(split_sizes) queries "
            "fills every split on average. Fractions may sum to less than 1; the rest of the topics are "
            "in no split. Test splits take the first ranges of the hash, so changing a train or dev "
            "fraction never moves a test topic."
        ),
    )
    split_seed: int = Field(
        13, description="Seed of the topic hash that assigns splits; change it to draw other splits."
    )
    pad: bool = Field(
        True,
        description=(
            "Pad every 'base' query to top_k candidates with random label-0 documents, flagged as padding. "
            "Padding only fills up: a query with more judgements than top_k (its own article appended after "
            "top_k hits) keeps them all."
        ),
    )
    pad_seed: int = Field(13, description="Seed of the padding draw (combined with each query's id).")
    min_documents: int = Field(
        10_000,
        ge=0,
        description=(
            "Languages with fewer documents are skipped. CLIRMatrix used 10,000; small demos lower it."
        ),
    )
    multi_languages: tuple[str, ...] = Field(
        ("ar", "de", "en", "es", "fr", "ja", "ru", "zh"),
        description=(
            "Languages the MULTI collection may span: a build's MULTI collection covers those of the build's "
            "languages that are listed here, only topics with an article in every one of them are queries, and "
            "each query gets candidates from each of the others. The paper's MULTI-8 set is the default, so a "
            "build of many languages (the paper's 139) still makes MULTI-8, and a smaller build makes MULTI "
            "over those of the eight it has."
        ),
    )

    @model_validator(mode="after")
    def _check_splits(self) -> ClirConfig:
        if any(size < 0 for size in self.split_sizes.values()):
            raise ValueError(f"split_sizes must not be negative: {self.split_sizes}")
        for name in self.split_sizes:
            if not name or any(char in name for char in "./\\") or name == "full":
                raise ValueError(f"split name {name!r} must be non-empty, without '.', '/', and not 'full'")
        if self.split_fractions is not None:
            if set(self.split_fractions) != set(self.split_sizes):
                raise ValueError(
                    f"split_fractions names {sorted(self.split_fractions)} differ from split_sizes names "
                    f"{sorted(self.split_sizes)}"
                )
            if any(not 0.0 <= share <= 1.0 for share in self.split_fractions.values()):
                raise ValueError(f"split_fractions must each be within [0, 1]: {self.split_fractions}")
            if sum(self.split_fractions.values()) > 1.0 + 1e-9:
                raise ValueError(f"split_fractions must sum to at most 1: {self.split_fractions}")
        return self

    def fractions(self) -> dict[str, float]:
        """The share of topics per split: ``split_fractions``, or proportional to ``split_sizes``."""
        if self.split_fractions is not None:
            return dict(self.split_fractions)
        total = sum(self.split_sizes.values())
        if total == 0:
            return {name: 0.0 for name in self.split_sizes}
        return {name: size / total for name, size in self.split_sizes.items()}

    def multi_langs(self, langs: Sequence[str]) -> list[str]:
        """The MULTI languages of a build over ``langs``: those in ``multi_languages``, in the build's order.

        Languages of ``multi_languages`` that the build does not have cannot be
        in MULTI (they have no retrieval to take judgements from); languages of
        the build outside ``multi_languages`` are in the BI collection only.
        """
        wanted = set(self.multi_languages)
        return [lang for lang in langs if lang in wanted]
