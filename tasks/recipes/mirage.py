"""MIRAGE-BENCH as a recipe: imported retrieval-augmented questions with judged passages, compared in an arena.

Imported (from MIRACL's topics, qrels and passages), never built; a model
answers from the passages with a cited reason (its own template and
sampling: temperature 0.1, passages of about 800 tokens, 8,192 in all — taken
as characters at four per token — and room for the reasoning); its systems
are compared pairwise by a judge and rated (``babelbench arena``), not scored
one by one.
"""

from __future__ import annotations

from tasks.inference.prompting import MIRAGE as MIRAGE_TEMPLATE
from tasks.recipe import Card, Sampling
from tasks.recipes.base import BaseRecipe

CITATION = """@inproceedings{thakur2025mirage,
  title     = {MIRAGE-BENCH: Automatic Multilingual Benchmark Arena for Retrieval-Augmented Generation Systems},
  author    = {Thakur, Nandan and Kazi, Suleman and Luo, Ge and Lin, Jimmy and Ahmad, Amin},
  booktitle = {Proceedings of NAACL 2025},
  year      = {2025}
}"""


RECIPE = BaseRecipe(
    name="mirage",
    card=Card("MIRAGE-BENCH", "Retrieval-augmented questions in many languages with judged relevant and non-relevant"
              " passages; systems answer with citations and are compared pairwise by a judge, with heuristic"
              " features and a surrogate judge learned from them.", CITATION, ("question-answering",)),
    headline="rating",
    sampling=Sampling(max_tokens=512, temperature=0.1, doc_chars=3200, total_chars=32768),
    own_template=MIRAGE_TEMPLATE,
    scored_elsewhere="its systems are rated against each other (babelbench arena)",
)
