"""CLIRMatrix as a recipe: cross-lingual retrieval collections mined from Wikipedia.

Built by ``babelbench clir build`` (its own flow: each language's index, the
title queries' BM25 hits with Jenks labels, and the qrels carried across
languages by Wikidata — the ``retrieval`` and ``qrels`` stages are this
recipe's; the index is shared with XRAG's distractors) and evaluated by
``babelbench clir eval`` (NDCG@10 with exponential gain per direction), not
through the question-answering flows.  A collection is published as its own
kind of dataset folder — documents, queries and qrels per language and
direction, with a card stating the label distribution and the Jenks breaks
(:mod:`tasks.pairing.folder`) — and ``import hf`` reads one back
(:func:`tasks.imports.clirmatrix.read_folder`); both are imported when used.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tasks.catalog import QRELS, RETRIEVAL
from tasks.recipe import Card, Publication
from tasks.recipes.base import BaseRecipe
from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse

if TYPE_CHECKING:
    from tasks.publish.rows import Configuration

CITATION = """@inproceedings{sun2020clirmatrix,
  title     = {CLIRMatrix: A massively large collection of bilingual and multilingual datasets for Cross-Lingual
               Information Retrieval},
  author    = {Sun, Shuo and Duh, Kevin},
  booktitle = {Proceedings of EMNLP 2020},
  year      = {2020}
}"""


def _holds(wh: Warehouse, name: str) -> bool:
    from tasks.pairing.provenance import holds

    return holds(wh, name)


def _write(wh: Warehouse, name: str, folder: Path, repo: str | None) -> tuple[list[Configuration], int]:
    from tasks.pairing.folder import write

    return write(wh, name, folder, repo, RECIPE)


def _read(wh: Warehouse, folder: Path, name: str, langs: list[str] | None, fp: str) -> StageOutput:
    from tasks.imports.clirmatrix import read_folder

    return read_folder(wh, folder, name, langs, fp)


RECIPE = BaseRecipe(
    name="clirmatrix",
    card=Card("CLIRMatrix", "Cross-lingual retrieval collections mined from Wikipedia: article titles as queries, the"
              " documents of every other language ranked by BM25 and labelled by relevance (0–6), per language"
              " direction.", CITATION, ("text-retrieval",)),
    headline="ndcg@10",
    stages=(RETRIEVAL, QRELS),
    scored_elsewhere="a CLIR collection is evaluated by `babelbench clir eval`",
    publication=Publication(holds=_holds, write=_write, read=_read),
)
