"""Backfill: add languages to everything already in the warehouse, computing only the missing cells.

For each kind of result, the latest run on each scope is run again with the
new languages added to its own:

1. the corpus, when there is one (the last corpus run's source, kind and
   dump date): the new languages are ingested; a language whose dump cannot
   be had is *skipped* from here on, and said so;
2. every CLIR collection: the new languages join it — their index, mining and
   every direction to and from them;
3. every translated benchmark: its items are translated into the new
   languages, then its instances are assembled again;
4. every evaluation: the models answer the new languages' instances and are
   scored again.

Everything that already existed is a cache hit, so the report of the run —
its stage table and the per-scope summary printed at the end — lists exactly
what was added.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from prefect import flow
from prefect.artifacts import create_markdown_artifact
from pydantic import BaseModel, Field

from flows.clir import ClirBuildParams, clir_build_flow
from flows.corpus import CorpusParams, corpus_flow
from flows.evaluate import EvaluateParams, evaluate_flow
from flows.qa import InstancesParams, TranslateParams, instances_flow, translate_flow
from tasks.orchestration import shared_warehouse
from tasks.settings import resolve_home


class BackfillParams(BaseModel):
    """Which languages to add everywhere (a form in the Prefect UI)."""

    langs: list[str] = Field(min_length=1, description="Languages to add to every corpus, collection, benchmark and"
                                                       " evaluation of the warehouse.")
    home: str | None = None


def latest_runs(home: str, flow_name: str, scope: str) -> Iterator[dict[str, Any]]:
    """The parameters of the latest run of ``flow_name`` per value of its ``scope`` parameter, newest first."""
    seen: set[Any] = set()
    for (raw,) in shared_warehouse(home).query("SELECT params FROM runs WHERE flow = ? AND params IS NOT NULL"
                                               " ORDER BY started_at DESC", [flow_name]):
        params = json.loads(raw)
        if params.get(scope) not in seen:
            seen.add(params.get(scope))
            yield params


def _added(rows: list[dict]) -> int:
    return sum(row["status"] == "computed" for row in rows)


@flow(name="backfill", log_prints=True)
def backfill_flow(params: BackfillParams) -> list[dict]:
    """Add ``params.langs`` everywhere (see the module notes); returns every stage cell of the runs it made."""
    home = str(resolve_home(params.home))
    new = sorted(set(params.langs))
    rows: list[dict] = []
    summary: list[str] = []
    added = new
    corpora = list(latest_runs(home, "corpus", "source"))
    if corpora:  # a warehouse of imported benchmarks alone has none
        corpus = corpora[0] | {"langs": sorted(set(corpora[0]["langs"]) | set(new)), "home": home, "force": []}
        ingested = corpus_flow(CorpusParams.model_validate(corpus))
        rows += ingested
        missing = sorted({r["cell"] for r in ingested if r["status"] == "failed" and r["cell"] in new})
        added = [lang for lang in new if lang not in missing]
        summary.append(f"corpus: {_added(ingested)} cells computed"
                       + (f"; skipped for lack of data: {', '.join(missing)}" if missing else ""))
    if added:
        for collection in latest_runs(home, "clir-build", "name"):
            built = clir_build_flow(ClirBuildParams.model_validate(
                collection | {"langs": sorted(set(collection["langs"]) | set(added)), "home": home, "force": []}))
            rows += built
            summary.append(f"collection {collection['name']}: {_added(built)} cells computed")
        for translation in latest_runs(home, "translate", "benchmark"):
            benchmark = translation["benchmark"]
            translated = translate_flow(TranslateParams.model_validate(
                translation | {"to": sorted(set(translation["to"]) | set(added)), "home": home, "force": []}))
            for assembly in (p for p in latest_runs(home, "instances", "benchmark") if p["benchmark"] == benchmark):
                translated += instances_flow(InstancesParams.model_validate(assembly | {"home": home, "force": []}))
            rows += translated
            summary.append(f"benchmark {benchmark}: {_added(translated)} cells computed")
        for evaluation in latest_runs(home, "evaluate", "benchmark"):
            langs = evaluation.get("langs")
            if langs:  # a chosen subset grows by the new languages the benchmark now has instances in
                have = {lang for (lang,) in shared_warehouse(home).query(
                    "SELECT DISTINCT lang FROM instances WHERE benchmark = ?", [evaluation["benchmark"]])}
                langs = sorted(set(langs) | (set(added) & have))
            evaluated = evaluate_flow(EvaluateParams.model_validate(
                evaluation | {"langs": langs, "home": home, "force": []}))
            rows += evaluated
            summary.append(f"evaluation of {evaluation['benchmark']}: {_added(evaluated)} cells computed")
    report = f"backfill of {', '.join(new)}:\n  " + "\n  ".join(summary)
    print(report)
    create_markdown_artifact(markdown="## Backfill\n\n" + "\n".join(f"- {line}" for line in summary),
                             key="backfill", description=f"What the backfill of {', '.join(new)} added")
    return rows
