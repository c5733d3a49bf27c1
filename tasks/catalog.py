"""The stage catalog: every stage of babelbench, declared once.

Each entry says what a stage is called and its version (both enter every
fingerprint), the stages it reads, the tables (or home folders, ending in
``/``) it writes, the flow that runs it and how its cells are named.  The
core's stages are declared here; the stages a recipe adds (its build, its
distractors, its qrels) are the recipe's (:mod:`tasks.recipe`), those of the
built-in recipes declared here too, since the stage code that runs them sits
below the recipes.  :func:`stages` joins both, with the pre-screen reading
every recipe's items and the instances every recipe's inputs to them.  The
flows, the rerun form, backfill, the README's DAG and the CLI reference all
read :func:`stages`; nothing else lists stages.  Adding a stage is one domain
function, one entry here (or in a recipe) and one migration
(``docs/development.md``, "Adding a stage: a worked example").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from tasks.errors import ConfigError
from tasks.stage import Stage

#: The flows that own stages, in workflow order (the order of the DAG picture and of the rerun form's owners).
FLOWS = ("corpus", "clir-build", "qa-build", "translate", "instances", "import", "evaluate", "features", "arena")

DOWNLOAD = Stage("download", 1, (), ("dumps",), "corpus", "{lang}")
DOCUMENTS = Stage("documents", 2, ("download",), ("documents", "ingest_issues"), "corpus", "{lang}")
APPEARANCE = Stage("appearance", 1, ("documents",), ("appearance_dumps", "first_seen"), "corpus", "{lang}")
SITELINKS = Stage("sitelinks", 2, ("documents", "download"), ("sitelinks",), "corpus", "{lang}")
# 2: Lucene BM25 at the configured k1, b; 3: one stacked score matrix (format 2 of tasks.index.embedded)
INDEX = Stage("index", 3, ("documents",), ("indexes/",), "clir-build", "{lang}")
RETRIEVAL = Stage("retrieval", 1, ("index",), ("retrieval_hits",), "clir-build", "{lang}")
# 2: padding keeps every judgement, pads base queries only
QRELS = Stage("qrels", 2, ("retrieval",), ("clir_qrels", "clir_collections"), "clir-build", "{collection}:{src}>{tgt}")
CANDIDATES = Stage("qa-candidates", 2, ("documents", "appearance", "sitelinks"), ("qa_candidates",), "qa-build", "{benchmark}:{lang}")
GENERATE = Stage("qa-generate", 1, ("qa-candidates",), ("qa_items",), "qa-build", "{benchmark}:{lang}")
XRAG_PAIRS = Stage("xrag-pairs", 1, ("documents", "appearance", "sitelinks"), ("related_pairs",), "qa-build", "{benchmark}")
XRAG_RELATED = Stage("xrag-related", 1, ("xrag-pairs",), ("related_pairs",), "qa-build", "{benchmark}")
XRAG_QUESTIONS = Stage("xrag-questions", 2, ("xrag-related",), ("qa_steps", "qa_items"), "qa-build", "{benchmark}")
# the pre-screen reads the items of whichever recipe built the benchmark: its upstream is every recipe's items stage
PRESCREEN = Stage("qa-prescreen", 2, (), ("qa_reviews",), "qa-build", "{benchmark}")
TRANSLATE = Stage("translate", 1, ("qa-prescreen",), ("translations",), "translate", "{benchmark}>{lang}")
DISTRACTORS = Stage("distractors", 2, ("translate", "index", "appearance"), ("distractors",), "instances", "{benchmark}")
# 3: documents carry their date
INSTANCES = Stage("instances", 3, ("translate",), ("instances",), "instances", "{benchmark}")  # + recipes' inputs
IMPORT = Stage("import", 1, (), ("qa_benchmarks", "qa_items", "instances", "documents", "clir_qrels"), "import",
               "{name}")
# 2: as inference 3.  Run by `babelbench import responses`, not by a flow.
RESPONSES_IMPORT = Stage("import-responses", 2, ("instances", "import"), ("responses",), "", "{benchmark}/{model}")
# Run by `babelbench import verdicts`, not by a flow.
VERDICTS_IMPORT = Stage("import-verdicts", 1, ("inference", "import-responses"), ("judgements",), "",
                        "{benchmark}/{judge}")
# 3: every language checked by script
INFERENCE = Stage("inference", 3, ("instances", "import"), ("responses",), "evaluate",
                  "{benchmark}/{setting}/{lang}/{model}")
JUDGING = Stage("judging", 3, ("inference",), ("judgements",), "evaluate",  # 3: JSON verdicts, read strictly
                "{benchmark}/{setting}/{lang}/{model}/{judge}")
# 4: language shares of the answered, abstained; 5: XRAG's English baseline row split by window too
SCORING = Stage("scoring", 5, ("judging", "inference"), ("leaderboard",), "evaluate", "{benchmark}/{model}")
FEATURES = Stage("features", 1, ("inference",), ("features",), "features", "{benchmark}/{feature}")
ARENA_JUDGING = Stage("arena-judging", 3, ("inference",), ("battles",), "arena",  # 3: JSON verdicts, read strictly
                      "{benchmark}/{lang}/{judge}")
# 4: ratings also per knowledge-cutoff window (arena_ratings.subset)
ARENA_RATINGS = Stage("arena-ratings", 4, ("arena-judging",), ("arena_ratings",), "arena", "{benchmark}/{judge}")
ARENA_SURROGATE = Stage("arena-surrogate", 4, ("arena-ratings", "features"), ("surrogate_reports", "arena_ratings"),
                        "arena", "{benchmark}/{judge}")

#: The core's stages, in workflow order; the pre-screen and the instances read what the recipes make (see :func:`stages`).
CORE: tuple[Stage, ...] = (DOWNLOAD, DOCUMENTS, APPEARANCE, SITELINKS, INDEX, PRESCREEN, TRANSLATE, INSTANCES, IMPORT,
                           RESPONSES_IMPORT, INFERENCE, JUDGING, SCORING, VERDICTS_IMPORT, FEATURES, ARENA_JUDGING,
                           ARENA_RATINGS, ARENA_SURROGATE)


def stages() -> tuple[Stage, ...]:
    """Every stage — the core's and every registered recipe's — in workflow order: a stage comes after those it
    reads, and otherwise by its flow's place in :data:`FLOWS`, then as declared."""
    from tasks.recipe import recipes  # recipes are plugins: loaded by name, after this module

    registered = recipes()
    own = [stage for r in registered for stage in r.stages]
    items = tuple(r.items_stage for r in registered if r.items_stage)
    inputs = tuple(name for r in registered for name in r.instances_inputs)
    joined = [replace(PRESCREEN, upstream=items) if s is PRESCREEN else
              replace(INSTANCES, upstream=(*INSTANCES.upstream, *inputs)) if s is INSTANCES else s for s in CORE]
    return _ordered([*joined, *own])


def _ordered(declared: list[Stage]) -> tuple[Stage, ...]:
    """``declared`` sorted so that every stage follows the stages it reads, by (flow, declaration) among those ready.

    A stage no flow runs (an import command's) takes the place of the latest flow it reads from.
    """
    by_name: dict[str, Stage] = {}
    for stage_ in declared:
        if by_name.setdefault(stage_.name, stage_) is not stage_:
            raise ConfigError(f"two stages are called {stage_.name!r}; a recipe must name its stages apart")
    rank: dict[str, int] = {}

    def flow_rank(stage_: Stage) -> int:
        if stage_.name not in rank:
            rank[stage_.name] = FLOWS.index(stage_.flow) if stage_.flow in FLOWS else max(
                (flow_rank(by_name[u]) for u in stage_.upstream if u in by_name), default=0)
        return rank[stage_.name]

    position = {stage_.name: n for n, stage_ in enumerate(declared)}
    done: list[Stage] = []
    waiting = list(declared)
    while waiting:
        ready = [s for s in waiting if all(u in {d.name for d in done} or u not in by_name for u in s.upstream)]
        if not ready:
            raise ConfigError(f"the stages {[s.name for s in waiting]} read each other in a circle")
        chosen = min(ready, key=lambda s: (flow_rank(s), position[s.name]))
        done.append(chosen)
        waiting.remove(chosen)
    return tuple(done)


def stage(name: str) -> Stage:
    """The stage called ``name``; an unknown name is a ConfigError listing the known ones."""
    known = {s.name: s for s in stages()}
    if name not in known:
        raise ConfigError(f"no stage {name!r} (stages: {', '.join(known)})")
    return known[name]


def owned_by(flow: str) -> tuple[Stage, ...]:
    """The stages ``flow`` runs, in workflow order."""
    return tuple(s for s in stages() if s.flow == flow)


def scope(*flows: str) -> tuple[Stage, ...]:
    """The stages a run of ``flows`` may be told to recompute: those they run, and the stages those read."""
    every = stages()
    owned = [s for s in every if s.flow in flows]
    read = {upstream for s in owned for upstream in s.upstream}
    return tuple(s for s in every if s in owned or s.name in read)


def descendants(stages: Iterable[Stage], forced: Iterable[str]) -> set[str]:
    """The forced stages plus every stage among ``stages`` downstream of them (what ``--force`` recomputes)."""
    stages = list(stages)
    result = set(forced)
    unknown = result - {s.name for s in stages}
    if unknown:
        raise ConfigError(f"--force names unknown stage(s) {sorted(unknown)}; stages are {[s.name for s in stages]}")
    changed = True
    while changed:
        changed = False
        for candidate in stages:
            if candidate.name not in result and result.intersection(candidate.upstream):
                result.add(candidate.name)
                changed = True
    return result
