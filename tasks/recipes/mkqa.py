"""MKQA as a recipe: imported open-domain questions in 26 languages with language-independent answers.

Imported, never built; closed book with the fixed abstention answer offered
(a question may have no short answer); scored against its gold answers by
exact match and token F1, in the improved mode for generative models or the
official scorer's, without a judge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.recipe import Card
from tasks.recipes.base import BaseRecipe, by_path

if TYPE_CHECKING:
    from tasks.metrics.leaderboard import ScoringConfig

CITATION = """@article{longpre2021mkqa,
  title   = {MKQA: A Linguistically Diverse Benchmark for Multilingual Open Domain Question Answering},
  author  = {Longpre, Shayne and Lu, Yi and Daiber, Joachim},
  journal = {Transactions of the Association for Computational Linguistics},
  year    = {2021}
}"""


class Mkqa(BaseRecipe):
    def score_mode(self, config: ScoringConfig) -> str:
        return config.mkqa_mode


RECIPE = Mkqa(
    name="mkqa",
    card=Card("MKQA", "Open-domain questions in 26 languages with answers that hold in every language, some with no"
              " short answer, scored against the gold answers without a judge.", CITATION, ("question-answering",)),
    headline="f1",
    score_modes=("improved", "official"),
    abstains=True,
    scorer=by_path("tasks.metrics.mkqa_leaderboard:mkqa_scorer"),
)
