"""Rerun one stage from the Prefect UI: the stage and its descendants, in one scope, with everything else cached.

The form names the stage (an enum of every stage, an installed recipe's too) and its scope — the
benchmark, or the collection for CLIR stages and CLIR imports; languages and
models narrow it.  The flow that owns the stage is run again with the
parameters that define the scope (see :func:`scope_runs`), ``force`` set to
the stage: the stage's cells and those downstream of them recompute, every
other cell is a cache hit.  A scope that was never run is an error that names
the command to run first.

Narrowing picks cells, it never redefines the scope: languages (models) narrow
a rerun only where the owning flow has one cell per language (model) chosen
by a parameter that *selects* — the corpus's languages, a translation's
targets, an evaluation's languages and models, an arena's languages.  Where
the languages *define* the result — a CLIR collection's directions, a QA
benchmark's items — or where a cell covers every language (instances,
features, an import), a narrowed rerun is refused with the reason, rather
than silently widened or applied to a smaller collection.  A forced run
never redefines its scope either: the next rerun or backfill takes the scope's
languages and models from its latest run that was not forced.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from prefect import flow
from pydantic import BaseModel, Field

from tasks.catalog import owned_by, stages
from tasks.errors import ConfigError
from tasks.imports import IMPORTERS
from tasks.settings import resolve_home
from tasks.stages import close_shared_warehouse, flow_run_params, shared_warehouse


@dataclass(frozen=True)
class Owner:
    """The flow that owns some stages: its name in ``runs``, where its parameters and function are, how a run
    names its scope, and how a rerun may narrow it.

    ``entry``: ``module:Params:function`` — imported when a rerun needs this owner, so a rerun imports one flow
    (and its models and libraries), not all of them.
    ``langs`` / ``models``: the parameter through which a rerun narrows the languages / models — one that
    *selects* cells of the owner; when None, ``no_langs`` / ``no_models`` says why narrowing is refused.
    ``force``: the owner's ``force`` parameter for a forced stage (a list of stages, or a flag).
    """

    flow: str
    entry: str
    scope: Callable[[dict[str, Any]], str | None]
    langs: str | None = None
    no_langs: str = ""
    models: str | None = None
    no_models: str = "its cells are not per model"
    force: Callable[[str], Any] = field(default=lambda stage: [stage])

    @property
    def params(self) -> type[BaseModel]:
        module, params, _ = self.entry.split(":")
        return getattr(importlib.import_module(module), params)

    @property
    def run(self) -> Callable[[Any], list[dict]]:
        module, _, function = self.entry.split(":")
        return getattr(importlib.import_module(module), function)

    @property
    def stages(self) -> tuple[str, ...]:
        """The stages this flow runs (the catalog's)."""
        return tuple(stage.name for stage in owned_by(self.flow))

    def scope_of(self, params: dict[str, Any]) -> str | None:
        return "corpus" if self.flow == "corpus" else self.scope(params)


def _benchmark(params: dict[str, Any]) -> str | None:
    return params.get("benchmark")


def _imported(params: dict[str, Any]) -> str | None:
    """The benchmark (or collection) an import wrote: its name, the dataset's default, or the directory's."""
    return params.get("name") or IMPORTERS.get(params["dataset"]).default_name or Path(params["source"]).name


OWNERS = (
    Owner("corpus", "flows.corpus:CorpusParams:corpus_flow", lambda p: "corpus",
          langs="langs"),
    Owner("clir-build", "flows.clir:ClirBuildParams:clir_build_flow", lambda p: p.get("name"),
          no_langs="its languages define the collection (every direction between them, and MULTI over all of them)"),
    Owner("qa-build", "flows.qa:QaBuildParams:qa_build_flow", lambda p: p.get("benchmark") or p.get("recipe"),
          no_langs="its languages define the benchmark (which facts are local to one language, which articles"
                   " pair up) and its pre-screen covers every language"),
    Owner("translate", "flows.qa:TranslateParams:translate_flow", _benchmark, langs="to"),
    Owner("instances", "flows.qa:InstancesParams:instances_flow", _benchmark,
          no_langs="a benchmark's distractors and instances are each one cell over all of its languages"),
    Owner("import", "flows.imports:ImportParams:import_flow", _imported,
          no_langs="an import is one cell: the published file, with the languages chosen when it was imported",
          force=lambda stage: True),
    Owner("evaluate", "flows.evaluate:EvaluateParams:evaluate_flow", _benchmark,
          langs="langs", models="models"),
    Owner("features", "flows.features:FeaturesParams:features_flow", _benchmark,
          no_langs="a feature is one cell over every response of the benchmark, in all languages"),
    Owner("arena", "flows.arena:ArenaParams:arena_flow", _benchmark,
          langs="langs", no_models="its models define the tournament: every pair of them is judged and rated together"),
)
STAGE_OWNER = {stage: owner for owner in OWNERS for stage in owner.stages}
#: the stages a flow runs, an enum in the rerun form
StageName = Literal[tuple(stage.name for stage in stages() if stage.flow)]  # type: ignore[valid-type]
#: Parameters that select cells of a flow; a forced (narrowed) run's values of them never define its scope.
SELECTING = ("langs", "to", "models")


class RerunParams(BaseModel):
    """Which stage to recompute, where (a form in the Prefect UI)."""

    stage: StageName = Field(description="The stage to recompute; the stages downstream of it recompute too.")
    scope: str = Field("corpus", description="The benchmark, or the collection for index/retrieval/qrels and for"
                                             " an imported CLIRMatrix collection (ignored for the corpus stages).")
    langs: list[str] | None = Field(None, description="Only these languages' cells (corpus, translate, evaluate,"
                                                      " arena stages; default: all of the scope's).")
    models: list[str] | None = Field(None, description="Only these models' cells (evaluate stages; default: all of"
                                                       " the scope's).")
    home: str | None = None


def scope_runs(home: str, flow_name: str, scope: Callable[[dict[str, Any]], Any]) -> Iterator[dict[str, Any]]:
    """Per scope of ``flow_name`` (newest first), the parameters that define it.

    Those of the scope's latest run, except that the parameters selecting its
    cells (languages, targets, models) come from its latest run that was not
    forced: a forced run narrowed to one language recomputed that language; it
    did not make the scope smaller.
    """
    runs: dict[Any, list[dict[str, Any]]] = {}
    for params in flow_run_params(shared_warehouse(home), flow_name):
        runs.setdefault(scope(params), []).append(params)
    for history in runs.values():
        latest = history[0]
        defining = next((p for p in history if not p.get("force")), latest)
        yield latest | {key: defining[key] for key in SELECTING if key in latest and key in defining}


def last_params(home: str, owner: Owner, scope: str) -> dict[str, Any]:
    """The parameters that define ``scope`` of the owner flow (see :func:`scope_runs`)."""
    for params in scope_runs(home, owner.flow, owner.scope_of):
        if owner.scope_of(params) == (scope if owner.flow != "corpus" else "corpus"):
            return params
    raise ConfigError(f"no earlier {owner.flow} run on {scope!r} to rerun; run `babelbench {owner.flow.split('-')[0]}"
                      f" …` for it first")


def narrowed(owner: Owner, params: RerunParams, previous: dict[str, Any]) -> dict[str, Any]:
    """The owner's parameters that narrow the rerun to ``params.langs`` / ``params.models``, or a clear refusal."""
    changes: dict[str, Any] = {}
    for asked, key, refusal, kind in ((params.langs, owner.langs, owner.no_langs, "languages"),
                                      (params.models, owner.models, owner.no_models, "models")):
        if asked is None:
            continue
        if key is None:
            raise ConfigError(f"{params.stage} cannot be rerun for some {kind} only: {refusal}. Leave {kind} empty"
                              f" to rerun it on all of {params.scope!r}"
                              + (", or add a language with `babelbench backfill`" if kind == "languages" else ""))
        have = previous.get(key)
        unknown = sorted(set(asked) - set(have)) if have is not None else []
        if unknown:
            raise ConfigError(f"{params.scope!r} has no {', '.join(unknown)} among its {kind} ({', '.join(have)})"
                              + ("; add a language with `babelbench backfill --langs …`" if kind == "languages" else ""))
        changes[key] = asked
    return changes


def rerun_stage(params: RerunParams) -> list[dict]:
    """The owning flow again, on the parameters that define the scope, with the stage forced in the chosen cells.

    ``babelbench rerun`` calls this directly, so a rerun from the terminal is one flow run, the owner's (a
    command answers in seconds, and a second flow engine would add one); the Prefect UI's form runs it as the
    ``rerun-stage`` flow, with the owner's run as its subflow."""
    home = str(resolve_home(params.home))
    owner = STAGE_OWNER[params.stage]
    try:
        previous = last_params(home, owner, params.scope)
        changes = narrowed(owner, params, previous) | {"force": owner.force(params.stage), "home": home}
    finally:  # the owner's flow session opens the warehouse again; a refused rerun leaves the file free
        close_shared_warehouse(home)
    print(f"rerunning {params.stage} of {owner.flow} on {params.scope}"
          + "".join(f", {key} {', '.join(changes[key])}" for key in SELECTING if key in changes))
    return owner.run(owner.params.model_validate(previous | changes))


@flow(name="rerun-stage", log_prints=True)
def rerun_stage_flow(params: RerunParams) -> list[dict]:
    """:func:`rerun_stage` as a flow: what the ``rerun-stage`` deployment's form in the Prefect UI runs."""
    return rerun_stage(params)
