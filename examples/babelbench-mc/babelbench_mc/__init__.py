"""A multiple-choice recipe for babelbench, installed beside it: its recipe is ``babelbench_mc.recipe:RECIPE``."""
