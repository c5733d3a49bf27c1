"""QA benchmark construction: ECLEKTIC and XRAG items, their quality control and review."""
