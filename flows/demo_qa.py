"""The demo's QA half: small ECLEKTIC- and XRAG-style benchmarks written by the local model, and an evaluation
that shows something.

The benchmarks the local model writes are kept small on purpose — it is a
270M-parameter base model at about 40 tokens/s on two cores — so every
status (parse, pre-screen, gate) shows up in a few minutes.  Its answers are
weak; the point there is the machinery, and the statuses say honestly what
came out.

The evaluation needs more questions than that to say anything, and a judge
that can read: so the systems are also evaluated on bundled samples — a few
dozen cross-document questions in German and French in XRAG's release format
(written from the sample articles, :mod:`tasks.sample.xrag_sample`), and a
sample in MKQA's format — and everything is judged by the reference judge, a
deterministic baseline that compares answers with the gold answer.  With the
``oracle`` (the gold answer, citing the gold passages) above ``extractive``
above ``abstain``, the leaderboard and the arena show that the scorers
separate a right answer from a wrong one; the local model is placed among
them.
"""

from __future__ import annotations

from pathlib import Path

from flows.arena import ArenaParams, arena_flow
from flows.evaluate import EvaluateParams, evaluate_flow
from flows.publish import PublishParams, publish_flow
from flows.qa import InstancesParams, QaBuildParams, TranslateParams, instances_flow, qa_build_flow, translate_flow
from flows.report import ReportParams, report_flow
from tasks.arena import ArenaConfig
from tasks.imports import import_dataset
from tasks.instances import InstanceConfig
from tasks.llm import edit_model
from tasks.sample import EARLIER_DATE, load_questions, write_xrag_sample
from tasks.warehouse import Warehouse

GENERATOR = "local"
#: The systems the demo evaluates: the local model, the baseline that always abstains (MKQA's floor), the one
#: that copies the likeliest sentence of the shown passages, and the oracle that gives the gold answer.
SYSTEMS = [GENERATOR, "abstain", "extractive", "oracle"]
#: Every judgement of the demo: a deterministic baseline that compares with the gold answer (offline, the local
#: model is the only other judge, and a 270M base model's verdicts are noise).  Not a judge to trust.
JUDGE = "reference-judge"
MKQA_SAMPLE = Path(__file__).resolve().parents[1] / "tasks" / "sample" / "mkqa_sample.jsonl"
#: The bundled XRAG-format sample, imported under this name; the arena and the report are about it, and it is
#: published (a Hugging Face dataset folder) under the home's PUBLISHED folder.
XRAG_SAMPLE = "xrag-sample"
PUBLISHED = "published"
# ECLEKTIC: every sample language; the items are translated into English only (each translation is two calls).
ECLEKTIC_TARGETS = ["en"]
# XRAG: English pivot with German; three pairs per kind and one question type.  Built over the whole later dump,
# its pairs are mostly of articles the earlier dump had, with one of articles new in the later one among them.
XRAG_LANGS = ["en", "de"]
XRAG = {"max_pairs": 3, "question_types": ["comparison"], "questions_per_type": 1}
#: The live benchmarks of the sample's later dump: their questions come only from the articles new in it.
LIVE_WINDOW = "20261101"
LIVE_BENCHMARK = "eclektic-live-2026-11"
LIVE_XRAG = "xrag-live-2026-11"
#: The benchmarks the local model writes, each evaluated and its leaderboard split by knowledge cutoff.
SPLIT_BENCHMARKS = ["eclektic", LIVE_BENCHMARK, "xrag", LIVE_XRAG]
#: The split the demo prints: XRAG's closed book is asked in English, which needs no translation, so it has
#: questions whatever the local translator does (ECLEKTIC's pairs need one through the gate).
SHOWN_SPLIT = ["xrag", LIVE_XRAG]
#: The local model's knowledge cutoff in the demo: the earlier dump's day, so the articles that dump had are before
#: it and those new in the later dump after it.
LOCAL_CUTOFF = f"{EARLIER_DATE[:4]}-{EARLIER_DATE[4:6]}-{EARLIER_DATE[6:]}"


def run_qa_demo(home: Path, langs: list[str]) -> list[dict]:
    """Build, translate and assemble the benchmarks and their live months; evaluate the local model and the three
    baselines on them and on the bundled XRAG- and MKQA-format samples, judged by the reference judge; run an
    arena on the XRAG sample, write its report and publish it.

    The pre-screen is advisory (``qc_policy: human``).
    """
    rows = build_generated(home, langs)
    for benchmark in SPLIT_BENCHMARKS:
        rows += evaluate_flow(EvaluateParams(benchmark=benchmark, models=SYSTEMS, judges=[JUDGE], home=str(home)))
    with Warehouse(home) as wh:  # questions about the sample's world, in XRAG's and MKQA's published layouts
        import_dataset(wh, "xrag", write_xrag_sample(home / "xrag-sample.jsonl"), XRAG_SAMPLE, None)
        import_dataset(wh, "mkqa", MKQA_SAMPLE, "mkqa-sample", None)
    rows += evaluate_flow(EvaluateParams(benchmark=XRAG_SAMPLE, models=SYSTEMS, judges=[JUDGE], home=str(home)))
    rows += evaluate_flow(EvaluateParams(benchmark="mkqa-sample", models=SYSTEMS, judges=[], home=str(home)))
    every_question = ArenaConfig(queries_per_lang=len(load_questions()))  # each pair of systems in both orders
    rows += arena_flow(ArenaParams(benchmark=XRAG_SAMPLE, models=SYSTEMS, judge=JUDGE, arena=every_question,
                                   bootstrap=200, home=str(home)))
    report_flow(ReportParams(benchmark=XRAG_SAMPLE, out=str(home / "report.html"), home=str(home)))
    publish_flow(PublishParams(benchmark=XRAG_SAMPLE, out=str(home / PUBLISHED), home=str(home)))
    return rows


def build_generated(home: Path, langs: list[str]) -> list[dict]:
    """The benchmarks the local model writes: ECLEKTIC and XRAG over the whole later dump, and each one's live
    month from the articles new in it; then ``local`` gets its knowledge cutoff, and every benchmark is translated
    and assembled."""
    live = {"window": LIVE_WINDOW}
    rows: list[dict] = []
    for recipe, benchmark, recipe_langs, config in (("eclektic", None, langs, {}), ("xrag", None, XRAG_LANGS, XRAG),
                                                    ("eclektic", LIVE_BENCHMARK, langs, live),
                                                    ("xrag", LIVE_XRAG, XRAG_LANGS, XRAG | live)):
        rows += qa_build_flow(QaBuildParams(recipe=recipe, benchmark=benchmark, generator=GENERATOR, home=str(home),
                                            langs=recipe_langs, config=config))
    edit_model(GENERATOR, {"knowledge_cutoff": LOCAL_CUTOFF}, home)
    policy = InstanceConfig(qc_policy="human")
    for benchmark in SPLIT_BENCHMARKS:
        targets = XRAG_LANGS[1:] if benchmark.startswith("xrag") else ECLEKTIC_TARGETS
        rows += translate_flow(TranslateParams(benchmark=benchmark, to=targets, translator=GENERATOR,
                                               qc_policy=policy.qc_policy, home=str(home)))
        rows += instances_flow(InstancesParams(benchmark=benchmark, instances=policy, home=str(home)))
    return rows
