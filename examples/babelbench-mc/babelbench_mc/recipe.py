"""The ``mc`` recipe: what babelbench asks of it, and its one build stage.

Registered by the entry point ``babelbench.recipe: mc`` (pyproject.toml), its
migrations by ``babelbench.migrations: mc``: installing the package is all it
takes.
"""

from __future__ import annotations

from typing import Any

from prefect.states import State

from babelbench_mc import scoring
from babelbench_mc.questions import McConfig, McExtra, write_items
from tasks.recipe import BuildRun, Card, Cells
from tasks.recipes import BaseRecipe
from tasks.stage import ReadFields, Stage, StageRef, run_stage
from tasks.stages import as_task_result, forced, shared_warehouse, stage_task

#: one cell per language; it reads the language's articles (and their dates, which the cutoff split reads)
MC_QUESTIONS = Stage("mc-questions", 1, ("documents", "appearance"), ("qa_items", "mc_options"), "qa-build",
                     "{benchmark}:{lang}")


@stage_task(MC_QUESTIONS.name)
def mc_questions_stage(home: str, cell: str, benchmark: str, lang: str, config: McConfig,
                       corpus: dict[str, StageRef], force: frozenset[str], run_id: str) -> StageRef | State[StageRef]:
    wh = shared_warehouse(home)
    inputs = {key: ref for key, ref in corpus.items() if key in (f"documents_{lang}", f"appearance_{lang}")}
    return as_task_result(run_stage(
        wh, MC_QUESTIONS, cell, ReadFields.of(config, *McConfig.model_fields), inputs,
        lambda fp: write_items(wh, benchmark, lang, config, fp),
        force=forced(MC_QUESTIONS.name, force), run_id=run_id))


class MultipleChoice(BaseRecipe):
    def translates_into(self, item_lang: str, document_langs: set[str], target: str) -> bool:
        return False  # each language has its own items

    def build(self, run: BuildRun) -> Cells:
        futures: dict[str, dict[str, Any]] = {}
        for lang in run.langs:
            cell = f"{run.benchmark}:{lang}"
            futures[cell] = {MC_QUESTIONS.name: mc_questions_stage.submit(
                run.home, cell, run.benchmark, lang, run.config, run.corpus, run.force, run.run_id)}
        return futures, {cell: stages[MC_QUESTIONS.name] for cell, stages in futures.items()}

    def instances(self, item: dict[str, Any], langs: list[str], sources: Any,
                  issues: list[dict[str, Any]]) -> list[dict[str, Any]]:
        [doc] = item["documents"]
        passage = sources.document(doc["lang"], doc["page_id"], doc["title"], "support")
        base = {"lang": item["lang"], "question": item["question"], "answer": item["answer"], "extra": item["extra"]}
        return [base | {"setting": "closed_book"}, base | {"setting": "passage", "documents": [passage]}]


RECIPE = MultipleChoice(
    name="mc",
    card=Card("Which article?", "A description from the first sentence of a Wikipedia article, its title masked, and"
              " four titles of the same wiki to choose from.", "", ("multiple-choice",)),
    headline="accuracy",
    windowed=True,
    stages=(MC_QUESTIONS,),
    items_stage=MC_QUESTIONS.name,
    item_fields=(),
    build_config=McConfig,
    extra=McExtra,
    templates="babelbench_mc.templates",
    own_template="mc:answer_mc",
    scorer=scoring.score,
    question_shares=scoring.window_questions,
)
