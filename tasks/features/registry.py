"""Features by name: the Protocol a feature meets, what computing one may use, and the built-ins registered.

A feature computes one :class:`~tasks.features.deterministic.Value` per
response of a batch.  It says whether its inputs need the passages shown
with each question (the model features read them) and whether an LLM grades
it (a paid call per response, run as a paid stage cell).  The built-ins are
the tables of :mod:`tasks.features.deterministic`, :mod:`tasks.features.models`
and :mod:`tasks.features.grades`, which load no model until one is computed;
another package adds a feature with an entry point in the group
``babelbench.feature`` (:mod:`tasks.plugins`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tasks.errors import ConfigError
from tasks.features.deterministic import DETERMINISTIC, Compute, Value
from tasks.features.grades import TEMPLATES, graded
from tasks.features.inputs import FeatureInput
from tasks.features.models import MODEL_FEATURES, FeatureModels
from tasks.llm import BudgetLedger, LLMClient
from tasks.plugins import Kind, register


@dataclass(frozen=True)
class FeatureNeeds:
    """What computing a feature may use beyond the responses: the model features' models, and for a graded
    feature the client, the grader's registry name and the run's budget."""

    models: FeatureModels = field(default_factory=FeatureModels)
    client: LLMClient | None = None
    grader: str | None = None
    budget: BudgetLedger | None = None


class Feature(Protocol):
    """One feature of every response of a batch, in order."""

    passages: bool  # its inputs carry the passages shown with each question
    template: str | None  # the prompt template an LLM grades it with; None: computed here
    version: int  # bumped when what it computes changes: its cells, and only they, recompute

    def compute(self, inputs: Sequence[FeatureInput], needs: FeatureNeeds) -> list[Value]:
        ...


@dataclass(frozen=True)
class Computed:
    """A feature computed without a model."""

    batch: Compute
    version: int = 1
    passages: bool = False
    template: str | None = None

    def compute(self, inputs: Sequence[FeatureInput], needs: FeatureNeeds) -> list[Value]:
        return self.batch(inputs)


@dataclass(frozen=True)
class ModelBased:
    """A feature a cross-encoder computes from the cited passages."""

    batch: Callable[[Sequence[FeatureInput], FeatureModels], list[Value]]
    version: int = 1
    passages: bool = True
    template: str | None = None

    def compute(self, inputs: Sequence[FeatureInput], needs: FeatureNeeds) -> list[Value]:
        return self.batch(inputs, needs.models)


@dataclass(frozen=True)
class Graded:
    """A feature an LLM grades from 1 to 5 with ``template``."""

    name: str
    template: str | None
    version: int = 1
    passages: bool = False

    def compute(self, inputs: Sequence[FeatureInput], needs: FeatureNeeds) -> list[Value]:
        if needs.client is None or needs.grader is None:
            raise ConfigError(f"feature {self.name!r} is graded by an LLM: name the grader (--grader)")
        return graded(self.name, inputs, needs.client, needs.grader, needs.budget)


#: the built-ins whose computation changed since they were first computed
VERSIONS = {"support_entailment": 2, "support_neutral": 2,  # 2: a completion model's reply is its reasoning
            "citation_map_at_10": 2, "citation_recall_at_10": 2}  # 2: "not applicable" says no judged relevant passage
FEATURES: Kind[Feature] = Kind("feature", Feature, "feature")
for _name, _batch in DETERMINISTIC.items():
    register(FEATURES.name, _name)(Computed(_batch, VERSIONS.get(_name, 1)))
for _name, _model_batch in MODEL_FEATURES.items():
    register(FEATURES.name, _name)(ModelBased(_model_batch, VERSIONS.get(_name, 1)))
for _name, _template in TEMPLATES.items():
    register(FEATURES.name, _name)(Graded(_name, _template, VERSIONS.get(_name, 1)))
