"""Computing one feature over a benchmark's responses: batches in-process or on Dask, rows with a status.

Deterministic features are batches that share their scorers (:func:`deterministic_values`,
which ``benchmarks/arena.py`` times), run with the cycle collector paused.
The overlap features, whose cost is tokenising every answer, go to the Dask
cluster (``tasks.compute``) once a benchmark has enough responses for at
least two tasks of ``CHUNK`` pairs: a task's round trip costs a local
cluster about as much as a few thousand responses' work, so a smaller batch
runs faster in one piece here (and each batch pays numpy's per-call costs and
builds its vocabularies again). The other deterministic features (stored
columns, one trec_eval run, a pattern per answer) cost less than
serialising their inputs to a worker would, and always run in-process.
Model features run in-process too, where their model is loaded once,
batched over every response; LLM-graded features are paid.  The rows are
written in one transaction per cell.  Without names, the deterministic
features are computed; model and graded features are asked for by name
(their models are large and usually downloaded from a hub, and grades cost
calls).
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Sequence
from functools import partial

from tasks.compute import map_parallel, parallelism, paused_gc
from tasks.errors import ConfigError
from tasks.features.deterministic import DETERMINISTIC, OVERLAP, Pair, Value, each_language, overlap_values
from tasks.features.inputs import FeatureInput, feature_inputs
from tasks.features.models import FeatureModels
from tasks.features.registry import FEATURES, FeatureNeeds
from tasks.llm import BudgetLedger, LLMClient
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse

#: pairs per Dask task, at least: ~1 s of work in one batch, against a round trip of ~0.1 s on a local cluster
#: (benchmarks/README.md, arena)
CHUNK = 20_000


def feature_names(wanted: Sequence[str] | None) -> list[str]:
    """The features to compute: ``wanted`` (each registered, :mod:`tasks.features.registry`) or the deterministic
    ones."""
    known = FEATURES.names()
    unknown = sorted(set(wanted or ()) - set(known))
    if unknown:
        raise ConfigError(f"unknown feature(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return list(wanted) if wanted else list(DETERMINISTIC)


def graded_features(names: Sequence[str]) -> list[str]:
    """Those of ``names`` an LLM grades (they need a grader)."""
    return sorted(name for name in names if FEATURES.get(name).template)


def _compute_chunk(task: bytes, name: str) -> bytes:
    """One Dask task of the overlap feature ``name``: its pairs by language in, their scores by language out.

    Both are pickled here, and the tasks are scattered to the workers: Dask
    would otherwise serialise a list element by element and send it through
    the scheduler inside the task graph — ~1 s for 20,000 responses, against
    ~0.1 s as bytes.
    """
    pairs: dict[str, list[Pair]] = pickle.loads(task)
    with paused_gc():
        return pickle.dumps(each_language(OVERLAP[name])(pairs), protocol=pickle.HIGHEST_PROTOCOL)


def _tasks(pairs: dict[str, list[Pair]]) -> list[dict[str, list[Pair]]]:
    """The pairs, in order, cut into tasks of ``CHUNK`` (the last one takes the rest, so fewer than ``CHUNK``
    pairs make one task); a task may hold several languages and a language span several tasks."""
    tasks: list[dict[str, list[Pair]]] = [{}]
    size = 0
    for lang, some in pairs.items():
        start = 0
        while start < len(some):
            if size == CHUNK:
                tasks.append({})
                size = 0
            taken = some[start:start + CHUNK - size]
            tasks[-1].setdefault(lang, []).extend(taken)
            size += len(taken)
            start += len(taken)
    if len(tasks) > 1 and size < CHUNK:  # a short last task joins the one before
        for lang, some in tasks.pop().items():
            tasks[-1].setdefault(lang, []).extend(some)
    return tasks


def _on_dask(pairs: dict[str, list[Pair]], name: str) -> dict[str, list[float]]:
    """The overlap feature ``name`` of every pair, its tasks mapped over the Dask cluster."""
    scored: dict[str, list[float]] = {}
    tasks = [pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL) for task in _tasks(pairs)]
    for result in map_parallel(_compute_chunk, tasks, scatter=True, name=name):
        for lang, scores in pickle.loads(result).items():
            scored.setdefault(lang, []).extend(scores)
    return scored


def distributes(responses: int) -> bool:
    """Whether an overlap feature of ``responses`` responses goes to the Dask cluster: two tasks' worth at least,
    and more than one task can run at once (the size is asked first, so a small batch never starts a cluster)."""
    return responses >= 2 * CHUNK and parallelism() > 1


def deterministic_values(inputs: Sequence[FeatureInput], name: str) -> list[Value]:
    """The deterministic feature ``name`` of every input (read without passages): an overlap feature in tasks on
    the Dask cluster when it :func:`distributes`, anything else in one batch here (see the module notes)."""
    if name in OVERLAP and distributes(len(inputs)):
        return overlap_values(inputs, partial(_on_dask, name=name))
    with paused_gc():
        return DETERMINISTIC[name](inputs)


def compute_feature(wh: Warehouse, benchmark: str, name: str, reference_model: str | None, models: FeatureModels,
                    fp: str, *, client: LLMClient | None = None, grader: str | None = None,
                    budget: BudgetLedger | None = None) -> StageOutput:
    """One feature of every response of ``benchmark``; replaces the feature's earlier rows."""
    feature = FEATURES.get(name)
    inputs = feature_inputs(wh, benchmark, reference_model, passages=feature.passages)
    values = (deterministic_values(inputs, name) if name in DETERMINISTIC  # batched, on Dask when large
              else feature.compute(inputs, FeatureNeeds(models, client, grader, budget)))
    rows = [[benchmark, item.instance_id, item.model, name, value.value, value.status, value.reason, fp]
            for item, value in zip(inputs, values, strict=True)]
    with wh.transaction() as cur:
        cur.execute("DELETE FROM features WHERE benchmark = ? AND feature = ?", [benchmark, name])
        if rows:
            cur.executemany("INSERT INTO features VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    counts = {status: sum(row[5] == status for row in rows) for status in sorted({row[5] for row in rows})}
    return StageOutput(rows=len(rows), message=f"{name}: {counts}{missing_per_system(rows)}")


def missing_features(wh: Warehouse, benchmark: str, systems: Sequence[str] | None = None) -> dict[str, dict[str, int]]:
    """system → feature → how many of its responses have no value for it (failed, not applicable, unsupported,
    excluded), for the features a system misses somewhere (of ``systems``, or every system)."""
    missing: dict[str, dict[str, int]] = {}
    for model, feature, count in wh.query("SELECT model, feature, count(*) FROM features WHERE benchmark = ?"
                                          " AND status <> 'ok' AND (? OR list_contains(?, model))"
                                          " GROUP BY ALL ORDER BY ALL",
                                          [benchmark, systems is None, sorted(systems or ())]):
        missing.setdefault(model, {})[feature] = count
    return missing


def missing_per_system(rows: Sequence[Sequence]) -> str:
    """``; no value for: sys1 3/10, …`` — each system's feature rows without a value (any status but ok) out of
    its rows, for the systems that have such rows; empty when every system has every value."""
    total = Counter(row[2] for row in rows)
    missing = Counter(row[2] for row in rows if row[5] != "ok")
    return ("; no value for: " + ", ".join(f"{system} {missing[system]}/{total[system]}" for system in sorted(missing))
            if missing else "")
