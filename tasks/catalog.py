"""The stage catalog: every stage of babelbench, declared once.

Each entry says what a stage is called and its version (both enter every
fingerprint), the stages it reads, the tables (or home folders, ending in
``/``) it writes, the flow that runs it and how its cells are named.  The
flows, the rerun form, backfill, the README's DAG and the CLI reference all
read this list; nothing else lists stages.  Adding a stage is one domain
function, one entry here and one migration (``docs/development.md``, "Adding
a stage: a worked example").
"""

from __future__ import annotations

from collections.abc import Iterable

from tasks.errors import ConfigError
from tasks.stage import Stage

#: The flows that own stages, in workflow order (the order of the DAG picture and of the rerun form's owners).
FLOWS = ("corpus", "clir-build", "qa-build", "translate", "instances", "import", "evaluate", "features", "arena")

DOWNLOAD = Stage("download", 1, (), ("dumps",), "corpus", "{lang}")
DOCUMENTS = Stage("documents", 2, ("download",), ("documents", "ingest_issues"), "corpus", "{lang}")
APPEARANCE = Stage("appearance", 1, ("documents",), ("appearance_dumps", "first_seen"), "corpus", "{lang}")
SITELINKS = Stage("sitelinks", 2, ("documents", "download"), ("sitelinks",), "corpus", "{lang}")
INDEX = Stage("index", 2, ("documents",), ("indexes/",), "clir-build", "{lang}")  # 2: Lucene BM25 at the configured k1, b
RETRIEVAL = Stage("retrieval", 1, ("index",), ("retrieval_hits",), "clir-build", "{lang}")
# 2: padding keeps every judgement, pads base queries only
QRELS = Stage("qrels", 2, ("retrieval",), ("clir_qrels", "clir_collections"), "clir-build", "{collection}:{src}>{tgt}")
CANDIDATES = Stage("qa-candidates", 2, ("documents", "appearance", "sitelinks"), ("qa_candidates",), "qa-build", "{benchmark}:{lang}")
GENERATE = Stage("qa-generate", 1, ("qa-candidates",), ("qa_items",), "qa-build", "{benchmark}:{lang}")
XRAG_PAIRS = Stage("xrag-pairs", 1, ("documents", "appearance", "sitelinks"), ("related_pairs",), "qa-build", "{benchmark}")
XRAG_RELATED = Stage("xrag-related", 1, ("xrag-pairs",), ("related_pairs",), "qa-build", "{benchmark}")
XRAG_QUESTIONS = Stage("xrag-questions", 2, ("xrag-related",), ("qa_steps", "qa_items"), "qa-build", "{benchmark}")
PRESCREEN = Stage("qa-prescreen", 2, ("qa-generate", "xrag-questions"), ("qa_reviews",), "qa-build", "{benchmark}")
TRANSLATE = Stage("translate", 1, ("qa-prescreen",), ("translations",), "translate", "{benchmark}>{lang}")
DISTRACTORS = Stage("distractors", 2, ("translate", "index", "appearance"), ("distractors",), "instances", "{benchmark}")
# 3: documents carry their date
INSTANCES = Stage("instances", 3, ("translate", "distractors"), ("instances",), "instances", "{benchmark}")
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

#: Every stage, in workflow order.
STAGES: tuple[Stage, ...] = (DOWNLOAD, DOCUMENTS, APPEARANCE, SITELINKS, INDEX, RETRIEVAL, QRELS, CANDIDATES, GENERATE,
                             XRAG_PAIRS, XRAG_RELATED, XRAG_QUESTIONS, PRESCREEN, TRANSLATE, DISTRACTORS, INSTANCES, IMPORT,
                             RESPONSES_IMPORT, INFERENCE, JUDGING, SCORING, VERDICTS_IMPORT, FEATURES, ARENA_JUDGING,
                             ARENA_RATINGS, ARENA_SURROGATE)
BY_NAME = {stage.name: stage for stage in STAGES}


def stage(name: str) -> Stage:
    """The stage called ``name``; an unknown name is a ConfigError listing the known ones."""
    if name not in BY_NAME:
        raise ConfigError(f"no stage {name!r} (stages: {', '.join(BY_NAME)})")
    return BY_NAME[name]


def owned_by(flow: str) -> tuple[Stage, ...]:
    """The stages ``flow`` runs, in workflow order."""
    return tuple(s for s in STAGES if s.flow == flow)


def scope(*flows: str) -> tuple[Stage, ...]:
    """The stages a run of ``flows`` may be told to recompute: those they run, and the stages those read."""
    owned = [s for s in STAGES if s.flow in flows]
    read = {upstream for s in owned for upstream in s.upstream}
    return tuple(s for s in STAGES if s in owned or s.name in read)


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
