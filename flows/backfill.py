"""Backfill: add languages to everything already in the warehouse, computing only the missing cells.

Each kind of result runs again on the parameters of its latest run (:func:`flows.rerun.scope_runs`) with
the new languages added — corpus sources (oldest first, so the newest one's documents win), built CLIR
collections, generated QA benchmarks (as translation targets only: items written anew would depend on the
benchmark's languages and recompute every cell), then evaluations, features and arenas.  Imported results
keep their file's languages.  Everything that existed is a cache hit, so the report lists exactly what was
added and what was skipped, and why.

Backfills of different languages may run at once (workers on a DuckLake warehouse): each reads a scope's
languages before the other has written its own, so after each run the backfill looks for runs of the same scope
that others finished meanwhile and runs again with their languages too (:meth:`Backfill.grow`).

See ``docs/caching.md``, "Backfill a language".
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from pydantic import BaseModel, Field

from flows.arena import ArenaParams, arena_flow
from flows.clir import ClirBuildParams, clir_build_flow
from flows.corpus import CorpusParams, corpus_flow
from flows.evaluate import EvaluateParams, evaluate_flow
from flows.features import FeaturesParams, features_flow
from flows.qa import InstancesParams, TranslateParams, instances_flow, translate_flow
from flows.rerun import scope_runs
from tasks.recipe import recipe as recipe_of
from tasks.settings import resolve_home
from tasks.stage import current_ref
from tasks.stages import (
    add_benchmark_languages,
    benchmarks,
    collections,
    flow_runs,
    flow_session,
    instance_languages,
    response_languages,
    shared_warehouse,
)
from tasks.text import WikiLang
from tasks.warehouse import Warehouse


class BackfillParams(BaseModel):
    """Which languages to add everywhere (a form in the Prefect UI)."""

    langs: list[WikiLang] = Field(min_length=1, description="Languages to add to every corpus, collection, benchmark,"
                                                       " evaluation, feature run and arena of the warehouse.")
    home: str | None = None


@dataclass
class Backfill:
    """The languages being added to one home, and what the backfill has done so far."""

    home: str
    new: list[str]
    rows: list[dict] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def wh(self) -> Warehouse:
        return shared_warehouse(self.home)  # each flow run releases the warehouse when it ends

    def with_documents(self) -> list[str]:
        """The new languages that have documents (from this backfill's corpus runs or earlier ones)."""
        return [lang for lang in self.new if current_ref(self.wh, "documents", lang) is not None]

    def run(self, flow_fn: Callable[[Any], list[dict]], params: type[BaseModel], previous: dict[str, Any],
            **changes: Any) -> list[dict] | None:
        """A flow again, unforced, on ``previous`` parameters with ``changes``; its cells join the backfill's.

        A run that fails is reported and the backfill goes on with the other scopes (it fails at the end).
        """
        try:
            made = flow_fn(params.model_validate(previous | changes | {"home": self.home,
                                                                       "force": _unforced(previous)}))
        except Exception as exc:  # noqa: BLE001 — reported below and in the run's final state
            self.failures.append(f"{getattr(flow_fn, 'name', flow_fn)}: {type(exc).__name__}: {exc}")
            self.summary.append(f"FAILED {self.failures[-1]}")
            return None
        self.rows += made
        return made

    def grow(self, flow_fn: Callable[[Any], list[dict]], params: type[BaseModel], scope: Scope, key: str,
             langs: list[str] | None, **changes: Any) -> list[dict] | None:
        """:meth:`run` on ``scope`` with its languages (parameter ``key``) set to ``langs``; then again, with them
        added, while runs of the same scope that other processes finished meanwhile name languages this one lacks.

        Two backfills at once (``sv`` and ``fi``) each read the scope before the other ran it, and each would
        leave it with its own language only. Each records its run's end before it looks at the others, so at
        least one of them finds the other's and runs again with both: every cell is a cache hit but those
        between the two languages, and the scope ends as after the two backfills in turn. ``langs`` None (all of
        them) has nothing to grow.
        """
        made: list[dict] = []
        while True:
            rows = self.run(flow_fn, params, scope.params, **changes, **({key: langs} if langs is not None else {}))
            if rows is None:
                return None
            made += rows
            if langs is None:
                return made
            meanwhile = scope.languages_since(self.wh, key) - set(langs)
            if not meanwhile:
                return made
            self.summary.append(f"{scope.flow} {scope.name}: {', '.join(sorted(meanwhile))} added by a run that ended"
                                " meanwhile (another backfill?): run again with them")
            langs = sorted(set(langs) | meanwhile)

    def report(self, what: str, rows: list[dict] | None, note: str = "") -> None:
        if rows is None:  # the run failed: its line says so
            return
        self.summary.append(f"{what}: {sum(r['status'] == 'computed' for r in rows)} cells computed" + _failed(rows)
                            + note)


@dataclass(frozen=True)
class Scope:
    """One scope of a flow as the backfill read it: the parameters that define it, and the runs of the flow
    recorded by then (any other was made meanwhile, by another process)."""

    flow: str
    by: str  # the parameter that names the scope: source, name, benchmark
    params: dict[str, Any]
    seen: frozenset[str]

    @property
    def name(self) -> Any:
        return self.params.get(self.by)

    def languages_since(self, wh: Warehouse, key: str) -> set[str]:
        """The languages (parameter ``key``) of the scope's unforced runs that ended since it was read."""
        return {lang for run in flow_runs(wh, self.flow)
                if run.run_id not in self.seen and run.status != "running" and not run.params.get("force")
                and run.params.get(self.by) == self.name for lang in run.params.get(key) or ()}


def _unforced(previous: dict[str, Any]) -> Any:
    return False if isinstance(previous.get("force"), bool) else []


def _failed(rows: list[dict]) -> str:
    failed = sum(r["status"] == "failed" for r in rows)
    return f", {failed} failed" if failed else ""


def _grown(langs: list[str] | None, gained: set[str]) -> list[str] | None:
    """A chosen subset of languages grows by the gained ones; None (all of them) stays all."""
    return None if langs is None else sorted(set(langs) | gained)


def _runs(home: str, flow_name: str, scope: str) -> Iterator[dict[str, Any]]:
    return scope_runs(home, flow_name, lambda params: params.get(scope))


def _scopes(bf: Backfill, flow_name: str, by: str) -> list[Scope]:
    """Every scope of ``flow_name`` (named by parameter ``by``), newest first; the runs seen are listed before the
    parameters are read, so that no run recorded in between goes unnoticed."""
    seen = frozenset(run.run_id for run in flow_runs(bf.wh, flow_name))
    return [Scope(flow_name, by, params, seen) for params in _runs(bf.home, flow_name, by)]


def backfill_corpora(bf: Backfill) -> None:
    """Every corpus source gains the new languages; those no source has are named."""
    sources = _scopes(bf, "corpus", "source")[::-1]  # oldest first: the newest source's documents win
    for corpus in sources:
        ingested = bf.grow(corpus_flow, CorpusParams, corpus, "langs", sorted(set(corpus.params["langs"]) | set(bf.new)))
        missing = sorted({r["cell"] for r in ingested or () if r["status"] == "failed" and r["cell"] in bf.new})
        bf.report(f"corpus {corpus.name}", ingested, f"; not in this source: {', '.join(missing)}" if missing else "")
    if sources:
        lacking = sorted(set(bf.new) - set(bf.with_documents()))
        if lacking:
            bf.summary.append(f"skipped for lack of data: {', '.join(lacking)} (no corpus source has a dump of it)")


def backfill_collections(bf: Backfill) -> None:
    """Every collection built here gains the new languages that have documents; imported ones are named."""
    added = bf.with_documents()
    built = set()
    for collection in _scopes(bf, "clir-build", "name"):
        built.add(collection.name)
        if added:
            bf.report(f"collection {collection.name}", bf.grow(
                clir_build_flow, ClirBuildParams, collection, "langs", sorted(set(collection.params["langs"]) | set(added))))
    for name, langs in collections(bf.wh):
        if name not in built and not name.endswith("-multi") and set(bf.new) - set(langs):
            bf.summary.append(f"collection {name}: skipped: imported from a published collection, whose languages"
                              f" ({', '.join(langs)}) are the file's")


def backfill_benchmarks(bf: Backfill) -> None:
    """Generated benchmarks gain the new languages as translation targets; imported ones are named."""
    documented = set(bf.with_documents())
    translations = {scope.name: scope for scope in _scopes(bf, "translate", "benchmark")}
    assemblies = {p["benchmark"]: p for p in _runs(bf.home, "instances", "benchmark")}
    for benchmark, recipe, langs, generator in benchmarks(bf.wh):
        wanted = [lang for lang in bf.new if lang not in langs]
        if not wanted:
            continue
        if generator.startswith("import:"):
            bf.summary.append(f"benchmark {benchmark}: skipped {', '.join(wanted)}: imported from {generator[7:]},"
                              " its languages are the published file's (import a file that has them)")
            continue
        if benchmark not in translations:
            bf.summary.append(f"benchmark {benchmark}: skipped {', '.join(wanted)}: never translated, so there is no"
                              f" translator to use (run `babelbench translate --benchmark {benchmark} --to …`)")
            continue
        lacking = [lang for lang in wanted if recipe_of(recipe).needs_documents and lang not in documented]
        if lacking:
            bf.summary.append(f"benchmark {benchmark}: skipped for lack of data: {', '.join(lacking)} (a {recipe}"
                              " benchmark's instances search documents in every one of its languages)")
        targets = [lang for lang in wanted if lang not in lacking]
        if not targets:
            continue
        add_benchmark_languages(bf.wh, benchmark, targets)
        translation = translations[benchmark]
        made = bf.grow(translate_flow, TranslateParams, translation, "to",
                       sorted(set(translation.params["to"]) | set(targets)))
        if made is None:
            continue
        if benchmark in assemblies:
            made += bf.run(instances_flow, InstancesParams, assemblies[benchmark]) or []
        absent = sorted(set(targets) - instance_languages(bf.wh, benchmark))
        bf.report(f"benchmark {benchmark} (+{', '.join(targets)})", made,
                  f"; no instances in {', '.join(absent)} (no translation passed the gate, or the benchmark was never"
                  " assembled: see `translations`, `instances`)" if absent else "")


def backfill_evaluations(bf: Backfill) -> set[str]:
    """Every evaluation answers the new languages its benchmark has instances in; returns the benchmarks that
    gained answers in a new language."""
    answered = set()
    for evaluation in _scopes(bf, "evaluate", "benchmark"):
        benchmark = evaluation.name
        gained = set(bf.new) & instance_languages(bf.wh, benchmark)
        if not gained:
            bf.summary.append(f"evaluation of {benchmark}: nothing to add (no instances in {', '.join(bf.new)})")
            continue
        bf.report(f"evaluation of {benchmark}", bf.grow(evaluate_flow, EvaluateParams, evaluation, "langs",
                                                        _grown(evaluation.params.get("langs"), gained)))
        if gained & set(response_languages(bf.wh, benchmark)):
            answered.add(benchmark)
    return answered


def backfill_judgements(bf: Backfill, answered: set[str]) -> None:
    """Features and arenas of the benchmarks that gained answers run again over them."""
    for features in _runs(bf.home, "features", "benchmark"):
        if features["benchmark"] in answered:
            bf.report(f"features of {features['benchmark']}", bf.run(features_flow, FeaturesParams, features))
    for arena in _scopes(bf, "arena", "benchmark"):
        benchmark = arena.name
        if benchmark in answered:
            gained = set(bf.new) & set(response_languages(bf.wh, benchmark))
            bf.report(f"arena of {benchmark}", bf.grow(arena_flow, ArenaParams, arena, "langs",
                                                       _grown(arena.params.get("langs"), gained)))


@flow(name="backfill", log_prints=True)
def backfill_flow(params: BackfillParams) -> list[dict]:
    """Add ``params.langs`` everywhere (see the module notes); returns every stage cell of the runs it made."""
    home = str(resolve_home(params.home))
    bf = Backfill(home, sorted(set(params.langs)))
    with flow_session(home):  # the DuckDB file and the compute cluster are released when the backfill ends
        backfill_corpora(bf)
        backfill_collections(bf)
        backfill_benchmarks(bf)
        backfill_judgements(bf, backfill_evaluations(bf))
    report = f"backfill of {', '.join(bf.new)}:\n  " + "\n  ".join(bf.summary or ["nothing in the warehouse to add to"])
    print(report)
    create_markdown_artifact(markdown="## Backfill\n\n" + "\n".join(f"- {line}" for line in bf.summary),
                             key="backfill", description=f"What the backfill of {', '.join(bf.new)} added")
    if bf.failures:
        raise RuntimeError(f"backfill of {', '.join(bf.new)}: {len(bf.failures)} run(s) failed: {'; '.join(bf.failures)}")
    return bf.rows
