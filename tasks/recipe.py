"""Recipes: a benchmark protocol as one plugin — its build stages, prompts, gold, scoring and card.

A recipe says everything the core would otherwise look up by the recipe's
name: the stages it adds to the catalog (and which of them write the items
the pre-screen reads, and which feed the instances), how its items are
translated and turned into instances, the prompt template and sampling of an
instance, whether its prompts offer the abstention answer, the judge its
protocol uses, how its answers are scored (metrics, headline, score modes),
whether its leaderboard splits by a model's knowledge cutoff, the schema of
its own data (``extra``) and the text of its card.  The five protocols this
project reproduces are recipes like any other (``tasks.recipes``), registered
here by path so nothing is imported until a recipe is looked up; another
distribution adds one with an entry point in the group ``babelbench.recipe``
(see ``docs/development.md``, "Writing a recipe").

Types of the layers above (scores, budgets, instance lookups) are named for
type checkers only: this module sits with the catalog, below the code that
implements recipes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pydantic import BaseModel

from tasks.plugins import Kind, register_lazy
from tasks.stage import Stage, StageOutput, StageRef

if TYPE_CHECKING:
    from prefect.futures import PrefectFuture

    from tasks.instances.build import Sources
    from tasks.llm import Budget
    from tasks.metrics.leaderboard import ScoringConfig
    from tasks.metrics.score import Score
    from tasks.metrics.windows import Question
    from tasks.publish.rows import Configuration
    from tasks.warehouse.db import Warehouse

#: (cell → {stage → future}) of the cells a recipe submits, and the futures the next core stage reads (the pre-screen
#: after a build, the instances after what precedes them)
Cells = tuple[dict[str, dict[str, "PrefectFuture[Any]"]], dict[str, "PrefectFuture[Any]"]]


@dataclass(frozen=True)
class Sampling:
    """What a recipe's protocol asks for when the inference configuration leaves it open."""

    max_tokens: int = 96
    temperature: float = 0.0
    doc_chars: int = 1500
    total_chars: int | None = None  # all passages together


@dataclass(frozen=True)
class Card:
    """What a published benchmark's card says of its recipe: a title, what it measures, how to cite its seed paper,
    the task categories of the Hugging Face hub, and what its own fields mean (the keys of its ``extra`` and of its
    documents, beside the core's: ``babelbench publish`` describes every field of the folder it writes)."""

    title: str
    summary: str
    citation: str
    task_categories: tuple[str, ...]
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Publication:
    """How a recipe publishes what it holds other than a benchmark of instances (CLIRMatrix: a collection of
    queries, documents and qrels) as a dataset folder, and reads such a folder back.

    ``holds(wh, name)``: whether the warehouse holds one of its own by that name.  ``write(wh, name, folder,
    repo)``: write its Parquet files, card and Croissant metadata into ``folder`` (``repo``: the hub repository it
    will be pushed to, for the card's links); returns the configurations written and how many of its articles no
    ingested dump names.  ``read(wh, folder, name, langs, fingerprint)``: import a folder it wrote (``babelbench
    import hf``).  The core checks the folder (mlcroissant, ``datasets``) and swaps it in.
    """

    holds: Callable[[Warehouse, str], bool]
    write: Callable[[Warehouse, str, Path, str | None], tuple[list[Configuration], int]]
    read: Callable[[Warehouse, Path, str, list[str] | None, str], StageOutput]


@dataclass(frozen=True)
class BuildRun:
    """What the ``qa-build`` flow hands a recipe's build: the home, the benchmark, its languages, the generator and
    the recipe's own settings (its ``build_config``), the corpus's current stage outputs per language, the run's
    budget, the stages to recompute and the run."""

    home: str
    benchmark: str
    langs: list[str]
    generator: str
    config: BaseModel | None
    corpus: dict[str, StageRef]
    budget: Budget
    force: frozenset[str]
    run_id: str


@dataclass(frozen=True)
class InstancesRun:
    """What the ``instances`` flow hands a recipe before assembling: the benchmark and its languages, the index
    backend, the run's settings and budget, the stages to recompute and the run."""

    home: str
    benchmark: str
    langs: list[str]
    params: BaseModel
    translations: dict[str, Any]
    force: frozenset[str]
    run_id: str


class Recipe(Protocol):
    """A benchmark protocol (see the module notes).  :class:`tasks.recipes.base.BaseRecipe` gives every member a
    default; a recipe sets what differs."""

    name: str
    card: Card
    #: the pointwise judge kind its protocol uses (``support``, ``correct``), or None: scored against its gold
    judge: str | None
    #: the metric its protocol leads with
    headline: str
    #: the scoring modes it knows, the default first (MKQA: ``improved``, ``official``)
    score_modes: tuple[str, ...]
    #: whether its items carry dates, so its leaderboard splits by a model's knowledge cutoff
    windowed: bool
    #: whether its prompts offer the fixed abstention answer
    abstains: bool
    sampling: Sampling
    #: the stages it adds to the catalog, with their reads (none for a recipe that is only imported)
    stages: tuple[Stage, ...]
    #: the stage of ``stages`` that writes its ``qa_items`` (the pre-screen reads it), if it builds any
    items_stage: str | None
    #: the stages of ``stages`` whose outputs the ``instances`` stage reads (XRAG's distractors)
    instances_inputs: tuple[str, ...]
    #: the fields of an item that translation carries into the other languages
    item_fields: tuple[str, ...]
    #: what a response's language is read from: the whole reply, or the answer read from it
    language_of: Literal["reply", "answer"]
    #: whether its instances need documents in every language of the benchmark (a backfill checks it)
    needs_documents: bool
    #: the settings model of its build (``qa build``'s ``config``), or None when it takes none
    build_config: type[BaseModel] | None
    #: the schema of its own data in ``qa_items.extra`` and ``instances.extra``, or None when it keeps none
    extra: type[BaseModel] | None
    #: the package holding its prompt templates (``<name>.j2``), or None when it uses the core's only
    templates: str | None
    #: the instance columns whose values name a configuration of the published dataset (``babelbench publish``):
    #: ``("setting", "lang")`` gives one configuration per setting and language, ``("setting",)`` one per setting
    config_by: tuple[str, ...]
    #: how it publishes what it holds besides benchmarks of instances (``babelbench publish``), or None
    publication: Publication | None

    def template(self, setting: str, has_documents: bool) -> str:
        """The prompt template of an instance in ``setting`` (shown documents or not)."""
        ...

    def translates_into(self, item_lang: str, document_langs: set[str], target: str) -> bool:
        """Whether an item written in ``item_lang`` over documents in ``document_langs`` is translated into
        ``target``."""
        ...

    def prepare(self, wh: Warehouse, benchmark: str, langs: list[str], config: BaseModel | None) -> None:
        """Check what a build needs before anything is written; a ConfigError says what is missing."""
        ...

    def build(self, run: BuildRun) -> Cells:
        """Submit the build's stage cells (``qa build``)."""
        ...

    def before_instances(self, run: InstancesRun) -> Cells:
        """Submit what assembling the instances reads besides the translations (XRAG: indexes, distractors): the
        cells' futures, and those the ``instances`` stage reads, by name."""
        ...

    def instances(self, item: dict[str, Any], langs: list[str], sources: Sources,
                  issues: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The instances of one accepted item (``setting``, ``lang``, ``question``, ``answer`` and what else each
        shows or scores by); an item left out of a language is an issue saying why."""
        ...

    def score(self, wh: Warehouse, benchmark: str, model: str, judges: list[str],
              config: ScoringConfig) -> tuple[list[Score], str]:
        """One model's scores on ``benchmark`` from its stored responses (and verdicts), and a note for the log."""
        ...

    def score_mode(self, config: ScoringConfig) -> str:
        """The mode ``config`` scores in (one of ``score_modes``)."""
        ...

    def window_questions(self, wh: Warehouse, benchmark: str, model: str, judges: list[str], config: ScoringConfig,
                         windows: dict[str, str]) -> dict[tuple[str, str], list[Question]]:
        """Per (setting, language), each question's share of the headline with its window (empty when the recipe is
        not ``windowed``)."""
        ...


RECIPES: Kind[Recipe] = Kind("recipe", Recipe, "recipe")
for _name in ("eclektic", "xrag", "mkqa", "mirage", "clirmatrix"):
    register_lazy(RECIPES.name, _name, f"tasks.recipes.{_name}:RECIPE")


def recipe(name: str) -> Recipe:
    """The recipe registered as ``name``; an unknown name is a ConfigError listing the known ones."""
    return RECIPES.get(name)


def recipes() -> list[Recipe]:
    """Every registered recipe, built-ins first, then those of installed packages."""
    return [RECIPES.get(name) for name in RECIPES.names()]
