"""ECLEKTIC as a recipe: facts only one language's Wikipedia covers, asked closed-book in every language.

Its build is one cell per language — candidate articles local to that
language, then one question per chosen article (``qa-candidates``,
``qa-generate``); its items carry their source context, translated with the
question and answer; its instances are the closed book in the source
language and, in each target, the closed book, the three hints and the
source context (:func:`~tasks.instances.build.eclektic_instances`); a support
judge reads the context and the answer; the headline is overall success over
(source, target) pairs, split by a model's knowledge cutoff.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from tasks.catalog import CANDIDATES, GENERATE
from tasks.qa import EclekticConfig, require_qid_coverage
from tasks.recipe import BuildRun, Card, Cells
from tasks.recipes.base import BaseRecipe, by_path

if TYPE_CHECKING:
    from tasks.instances.build import Sources
    from tasks.warehouse.db import Warehouse

CITATION = """@misc{goldman2025eclektic,
  title  = {ECLeKTic: a Novel Challenge Set for Evaluation of Cross-Lingual Knowledge Transfer},
  author = {Goldman, Omer and Shaham, Uri and others},
  year   = {2025}
}"""


class Eclektic(BaseRecipe):
    def prepare(self, wh: Warehouse, benchmark: str, langs: list[str], config: BaseModel | None) -> None:
        require_qid_coverage(wh, benchmark, langs)  # one clear line before anything is written

    def build(self, run: BuildRun) -> Cells:
        """One cell per language: its candidate articles, then one item per selected article."""
        from tasks.stages import candidates_stage, generate_stage

        futures: dict[str, dict[str, Any]] = {}
        items: dict[str, Any] = {}
        for lang in run.langs:
            cell = f"{run.benchmark}:{lang}"
            candidates = candidates_stage.submit(run.home, cell, run.benchmark, lang, run.langs, run.config,
                                                 run.corpus, run.force, run.run_id)
            items[lang] = generate_stage.submit(run.home, cell, run.benchmark, lang, run.generator, run.config,
                                                candidates, run.budget, run.force, run.run_id)
            futures[cell] = {CANDIDATES.name: candidates, GENERATE.name: items[lang]}
        return futures, items

    def instances(self, item: dict[str, Any], langs: list[str], sources: Sources,
                  issues: list[dict[str, Any]]) -> list[dict[str, Any]]:
        from tasks.instances.build import eclektic_instances

        return eclektic_instances(item, langs, sources.translated, issues)


RECIPE = Eclektic(
    name="eclektic",
    card=Card("ECLeKTic", "Questions about facts that only one language's Wikipedia covers, asked closed-book in"
              " that language and, translated, in the others: does a model that learned a fact in one language"
              " know it in another?", CITATION, ("question-answering",)),
    headline="overall_success",
    judge="support",
    windowed=True,
    stages=(CANDIDATES, GENERATE),
    items_stage=GENERATE.name,
    item_fields=("question", "answer", "context"),
    build_config=EclekticConfig,
    scorer=by_path("tasks.metrics.leaderboard:eclektic_scorer"),
    question_shares=by_path("tasks.metrics.leaderboard:eclektic_window_questions"),
)
