"""XRAG as a recipe: questions over two related articles, answered from retrieved documents in other languages.

Its build is one benchmark-wide chain — related pairs, the check that they
are related, and the questions (``xrag-pairs``, ``xrag-related``,
``xrag-questions``) — whose items are translated from the pivot into the
languages a pair allows; before its instances the distractors are chosen
from each language's index (``distractors``); an instance shows its
articles with their dates (:func:`~tasks.instances.build.xrag_instances`);
a panel of correctness judges and the answer's language decide, and the
headline is accuracy over the non-English languages, split by a model's
knowledge cutoff.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from tasks.catalog import DISTRACTORS, XRAG_PAIRS, XRAG_QUESTIONS, XRAG_RELATED
from tasks.errors import ConfigError
from tasks.inference.prompting import XRAG as XRAG_TEMPLATE
from tasks.qa import XragConfig
from tasks.recipe import BuildRun, Card, Cells, InstancesRun
from tasks.recipes.base import BaseRecipe, by_path
from tasks.stage import current_ref

if TYPE_CHECKING:
    from tasks.instances.build import Sources
    from tasks.warehouse.db import Warehouse

CITATION = """@inproceedings{liu2025xrag,
  title     = {XRAG: Cross-lingual Retrieval-Augmented Generation},
  author    = {Liu, Wei and Trenous, Sony and Ribeiro, Leonardo F. R. and Byrne, Bill and Hieber, Felix},
  booktitle = {Findings of the Association for Computational Linguistics: EMNLP 2025},
  year      = {2025}
}"""


class Xrag(BaseRecipe):
    def translates_into(self, item_lang: str, document_langs: set[str], target: str) -> bool:
        """From the pivot into each X; an item over a pivot–X pair only into its X."""
        pair = document_langs - {item_lang}
        return target != item_lang and (not pair or target in pair)

    def prepare(self, wh: Warehouse, benchmark: str, langs: list[str], config: BaseModel | None) -> None:
        pivot = config.pivot if isinstance(config, XragConfig) else XragConfig().pivot
        if pivot not in langs:
            raise ConfigError(f"XRAG: the pivot language {pivot!r} must be one of the languages {langs}")

    def build(self, run: BuildRun) -> Cells:
        """One benchmark-wide chain: pairs span languages, and one question uses both articles of a pair."""
        from tasks.stages import xrag_pairs_stage, xrag_questions_stage, xrag_related_stage

        cell = run.benchmark
        pairs = xrag_pairs_stage.submit(run.home, cell, run.benchmark, run.langs, run.config, run.corpus, run.force,
                                        run.run_id)
        related = xrag_related_stage.submit(run.home, cell, run.benchmark, run.generator, run.config, pairs,
                                            run.budget, run.force, run.run_id)
        questions = xrag_questions_stage.submit(run.home, cell, run.benchmark, run.generator, run.config, related,
                                                run.budget, run.force, run.run_id)
        return ({cell: {XRAG_PAIRS.name: pairs, XRAG_RELATED.name: related, XRAG_QUESTIONS.name: questions}},
                {"questions": questions})

    def before_instances(self, run: InstancesRun) -> Cells:
        """Each language's index, then the benchmark's distractors from them."""
        from tasks.index import IndexConfig
        from tasks.stages import distractors_stage, index_stage, shared_warehouse

        params: Any = run.params
        wh = shared_warehouse(run.home)
        indexes = {}
        for lang in run.langs:
            documents = current_ref(wh, "documents", lang)
            if documents is None:
                raise ConfigError(f"{lang}: no documents in the warehouse; run `babelbench corpus ingest --lang {lang}`")
            indexes[lang] = index_stage.submit(run.home, lang, documents, params.backend, IndexConfig(), run.force,
                                               run.run_id)
        distractors = distractors_stage.submit(
            run.home, run.benchmark, run.benchmark, params.distractors, params.instances.qc_policy, params.backend,
            indexes, run.translations, params.budget, run.force, run.run_id)
        futures: dict[str, dict[str, Any]] = {lang: {"index": index} for lang, index in indexes.items()}
        futures[run.benchmark] = {DISTRACTORS.name: distractors}
        return futures, {DISTRACTORS.name: distractors}

    def instances(self, item: dict[str, Any], langs: list[str], sources: Sources,
                  issues: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from tasks.instances.build import xrag_instances

        return xrag_instances(item, langs, sources, issues)


RECIPE = Xrag(
    name="xrag",
    card=Card("XRAG", "Questions that need two related Wikipedia articles, answered from retrieved documents some of"
              " which are in another language than the question, in the question's language.", CITATION,
              ("question-answering", "text-generation")),
    headline="accuracy",
    judge="correct",
    windowed=True,
    abstains=True,  # "None", where no article is shown
    own_template=XRAG_TEMPLATE,  # its articles with their dates, or, without them, an answer from memory or "None"
    stages=(XRAG_PAIRS, XRAG_RELATED, XRAG_QUESTIONS, DISTRACTORS),
    items_stage=XRAG_QUESTIONS.name,
    instances_inputs=(DISTRACTORS.name,),
    language_of="answer",  # the tag's content, never the markup around it
    needs_documents=True,
    build_config=XragConfig,
    scorer=by_path("tasks.metrics.leaderboard:xrag_scorer"),
    question_shares=by_path("tasks.metrics.leaderboard:xrag_window_questions"),
)
