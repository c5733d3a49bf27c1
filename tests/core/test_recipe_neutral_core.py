"""The core holds no per-recipe knowledge: no dict keyed by a recipe's name, no set of recipe names, no comparison
with one, no ``Literal`` of them.  A recipe says what differs (tasks/recipe.py); the core asks it.

The walk reads the syntax of every module of tasks/, flows/ and deployments/ except a recipe's own — its recipe
object, its importer, its build and scoring code, and the demo, which shows recipes by name — and fails on the
first such construct, with the file and line.  It is checked against made-up modules first, so a walk that
quietly finds nothing fails too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tasks.recipe import RECIPES

ROOT = Path(__file__).resolve().parents[2]
#: modules that belong to one recipe (or to the demo of all of them), where its name is its own business
OWN = ("tasks/recipes/", "tasks/imports/mkqa.py", "tasks/imports/eclektic.py", "tasks/imports/xrag.py",
       "tasks/imports/miracl.py", "tasks/imports/clirmatrix.py", "tasks/qa/eclektic", "tasks/qa/xrag",
       "tasks/metrics/eclektic", "tasks/metrics/xrag", "tasks/metrics/mkqa", "tasks/sample/", "flows/demo")


def recipe_keyed(source: str, names: set[str]) -> list[tuple[int, str]]:
    """(line, what) of each construct in ``source`` that singles out a recipe by ``names``."""
    found: list[tuple[int, str]] = []

    def named(node: ast.AST | None) -> bool:
        return isinstance(node, ast.Constant) and node.value in names

    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Dict) and any(named(key) for key in node.keys):
            found.append((node.lineno, "a dict keyed by recipe names"))
        elif isinstance(node, ast.Set) and any(named(element) for element in node.elts):
            found.append((node.lineno, "a set of recipe names"))
        elif isinstance(node, ast.Compare) and any(named(side) or (isinstance(side, (ast.Tuple, ast.List, ast.Set))
                                                                   and any(named(e) for e in side.elts))
                                                   for side in [node.left, *node.comparators]):
            found.append((node.lineno, "a comparison with a recipe name"))
        elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal"
              and any(named(e) for e in ast.walk(node.slice))):
            found.append((node.lineno, "a Literal of recipe names"))
    return found


@pytest.mark.parametrize("snippet", [
    'SCORERS = {"xrag": score_xrag, "mkqa": score_mkqa}',
    'ABSTAINING = frozenset({"mkqa", "xrag"})',
    'if recipe == "eclektic":\n    pass',
    'kept = recipe in ("xrag", "mirage")',
    'Recipe = Literal["eclektic", "xrag"]',
    'x = {**base, "clirmatrix": 1}',
])
def test_the_walk_finds_each_kind_of_recipe_keyed_construct(snippet: str) -> None:
    assert recipe_keyed(snippet, set(RECIPES.names())), snippet


def test_the_walk_leaves_recipe_neutral_code_alone() -> None:
    neutral = ('HEADLINE = recipe(name).headline\nRECIPES_BY_NAME = {r.name: r for r in recipes()}\n'
               'for name in ("eclektic", "xrag"):\n    register(name)\nif setting == "closed_book":\n    pass')
    assert recipe_keyed(neutral, set(RECIPES.names())) == []


def test_no_module_of_the_core_singles_out_a_recipe() -> None:
    names = set(RECIPES.names())
    assert {"eclektic", "xrag", "mkqa", "mirage", "clirmatrix"} <= names
    core = [path for folder in ("tasks", "flows", "deployments") for path in sorted((ROOT / folder).rglob("*.py"))
            if not str(path.relative_to(ROOT)).startswith(OWN)]
    assert len(core) > 150  # the walk reads the core, not an empty list
    problems = [f"{path.relative_to(ROOT)}:{line}: {what}" for path in core
                for line, what in recipe_keyed(path.read_text(encoding="utf-8"), names)]
    assert problems == []
