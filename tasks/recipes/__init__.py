"""The recipes this project reproduces — ECLEKTIC, XRAG, MKQA, MIRAGE and CLIRMatrix — each a
:class:`~tasks.recipe.Recipe` (registered by path in :mod:`tasks.recipe`), and :class:`BaseRecipe`, the defaults a
recipe of another package starts from."""

from tasks.recipes.base import BaseRecipe

__all__ = ["BaseRecipe"]
