"""What a recipe is unless it says otherwise: built by import, scored against its gold, prompts by what it shows.

:class:`BaseRecipe` meets :class:`~tasks.recipe.Recipe` with a default for
every member, so a recipe states only what differs — a plugin subclasses it
(``docs/development.md``, "Writing a recipe").  The defaults: no judge, one
score mode (``protocol``), no cutoff split, no abstention answer, the core's
sampling and templates (the question alone, or with the documents shown), no
stages (an imported benchmark), items translated by question and answer into
every language, one instance per item in its own language, showing its
documents, and a published dataset with one configuration per setting and
language (no other kind of dataset to publish).  Scoring is a function (``scorer``, and ``question_shares`` for the
cutoff split) rather than a method to override, since most recipes have one
ready; a recipe scored another way says how (``scored_elsewhere``).
"""


from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from tasks.errors import ConfigError
from tasks.recipe import BuildRun, Card, Cells, InstancesRun, Publication, Sampling
from tasks.stage import Stage

if TYPE_CHECKING:  # a recipe is loaded to list the stages (a rerun, the DAG): what it scores with loads when it scores
    from tasks.instances.build import Sources
    from tasks.metrics.leaderboard import ScoringConfig
    from tasks.metrics.score import Score
    from tasks.metrics.windows import Question
    from tasks.warehouse.db import Warehouse

#: a model's scores on a benchmark from its stored responses, and a note for the log
Scorer = Callable[["Warehouse", str, str, list[str], "ScoringConfig"], tuple[list["Score"], str]]
#: per (setting, language), each question's share of the headline with its window (the cutoff split)
QuestionShares = Callable[["Warehouse", str, str, list[str], "ScoringConfig", dict[str, str]],
                          dict[tuple[str, str], list["Question"]]]


def by_path(target: str) -> Callable[..., Any]:
    """The function at ``module:name``, imported on its first call: a recipe names its scorer without loading the
    scoring code (and SciPy) into every command that only lists stages."""
    module, _, name = target.partition(":")
    loaded: list[Callable[..., Any]] = []

    def call(*args: Any, **kwargs: Any) -> Any:
        if not loaded:
            loaded.append(getattr(import_module(module), name))
        return loaded[0](*args, **kwargs)

    call.__qualname__ = call.__name__ = name
    return call


@dataclass(frozen=True)
class BaseRecipe:
    """A recipe's members with their defaults (see the module notes)."""

    name: str
    card: Card
    headline: str
    judge: str | None = None
    score_modes: tuple[str, ...] = ("protocol",)
    windowed: bool = False
    abstains: bool = False
    sampling: Sampling = field(default_factory=Sampling)
    stages: tuple[Stage, ...] = ()
    items_stage: str | None = None
    instances_inputs: tuple[str, ...] = ()
    item_fields: tuple[str, ...] = ("question", "answer")
    language_of: Literal["reply", "answer"] = "reply"
    needs_documents: bool = False
    build_config: type[BaseModel] | None = None
    extra: type[BaseModel] | None = None
    templates: str | None = None
    #: the template of every instance, where the recipe has one of its own (MIRAGE's)
    own_template: str | None = None
    scorer: Scorer | None = None
    question_shares: QuestionShares | None = None
    #: how a recipe without a scorer is evaluated, for the error a scoring run meets
    scored_elsewhere: str = "its recipe has no scorer"
    config_by: tuple[str, ...] = ("setting", "lang")
    publication: Publication | None = None

    def template(self, setting: str, has_documents: bool) -> str:
        from tasks.inference.prompting import CLOSED_BOOK, WITH_DOCUMENTS

        return self.own_template or (WITH_DOCUMENTS if has_documents else CLOSED_BOOK)

    def translates_into(self, item_lang: str, document_langs: set[str], target: str) -> bool:
        return target != item_lang

    def prepare(self, wh: Warehouse, benchmark: str, langs: list[str], config: BaseModel | None) -> None:
        return None

    def build(self, run: BuildRun) -> Cells:
        raise ConfigError(f"recipe {self.name!r} is not built: import a published {self.card.title} file"
                          " (babelbench import …)")

    def before_instances(self, run: InstancesRun) -> Cells:
        return {}, {}

    def instances(self, item: dict[str, Any], langs: list[str], sources: Sources,
                  issues: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"setting": "closed_book" if not item["documents"] else "with_documents", "lang": item["lang"],
                 "question": item["question"], "answer": item["answer"], "extra": item.get("extra"),
                 "documents": [sources.document(d["lang"], d["page_id"], d["title"], "support")
                               for d in item["documents"]]}]

    def score(self, wh: Warehouse, benchmark: str, model: str, judges: list[str],
              config: ScoringConfig) -> tuple[list[Score], str]:
        if self.scorer is None:
            raise ConfigError(f"benchmark {benchmark!r} ({self.name}) is not scored one model at a time:"
                              f" {self.scored_elsewhere}")
        return self.scorer(wh, benchmark, model, judges, config)

    def score_mode(self, config: ScoringConfig) -> str:
        return self.score_modes[0]

    def window_questions(self, wh: Warehouse, benchmark: str, model: str, judges: list[str], config: ScoringConfig,
                         windows: dict[str, str]) -> dict[tuple[str, str], list[Question]]:
        if self.question_shares is None:
            return {}
        return self.question_shares(wh, benchmark, model, judges, config, windows)
