"""CLIRMatrix as a recipe: cross-lingual retrieval collections mined from Wikipedia.

Built by ``babelbench clir build`` (its own flow: each language's index, the
title queries' BM25 hits with Jenks labels, and the qrels carried across
languages by Wikidata — the ``retrieval`` and ``qrels`` stages are this
recipe's; the index is shared with XRAG's distractors) and evaluated by
``babelbench clir eval`` (NDCG@10 with exponential gain per direction), not
through the question-answering flows.
"""

from __future__ import annotations

from tasks.catalog import QRELS, RETRIEVAL
from tasks.recipe import Card
from tasks.recipes.base import BaseRecipe

CITATION = """@inproceedings{sun2020clirmatrix,
  title     = {CLIRMatrix: A massively large collection of bilingual and multilingual datasets for Cross-Lingual
               Information Retrieval},
  author    = {Sun, Shuo and Duh, Kevin},
  booktitle = {Proceedings of EMNLP 2020},
  year      = {2020}
}"""


RECIPE = BaseRecipe(
    name="clirmatrix",
    card=Card("CLIRMatrix", "Cross-lingual retrieval collections mined from Wikipedia: article titles as queries, the"
              " documents of every other language ranked by BM25 and labelled by relevance (0–6), per language"
              " direction.", CITATION, ("text-retrieval",)),
    headline="ndcg@10",
    stages=(RETRIEVAL, QRELS),
    scored_elsewhere="a CLIR collection is evaluated by `babelbench clir eval`",
)
