"""Which items of a built benchmark go on: its definition and the QC policies over ``qa_status``."""

from __future__ import annotations

from tasks.errors import ConfigError
from tasks.warehouse.db import Warehouse

#: qc_status values (view ``qa_status``) that each policy lets into translation and instances.
QC_POLICIES: dict[str, tuple[str, ...]] = {
    "prescreen": ("accepted_review", "unreviewed"),
    "human": ("accepted_review", "unreviewed", "flagged", "unchecked"),
}


def benchmark_definition(wh: Warehouse, benchmark: str) -> tuple[str, list[str]]:
    """(recipe, languages) of a built benchmark, or a clear error naming it."""
    rows = wh.query("SELECT recipe, langs FROM qa_benchmarks WHERE benchmark = ?", [benchmark])
    if not rows:
        known = [r[0] for r in wh.query("SELECT benchmark FROM qa_benchmarks ORDER BY 1")]
        raise ConfigError(f"no benchmark {benchmark!r} in the warehouse (known: {', '.join(known) or 'none'});"
                          " run `babelbench qa build` first")
    return rows[0][0], list(rows[0][1])


def accepted_items(wh: Warehouse, benchmark: str, policy: str) -> list[tuple]:
    """(item_id, lang, question, answer, context, documents) of the items ``policy`` accepts, in item order."""
    return wh.query(
        "SELECT item_id, lang, question, answer, context, documents FROM qa_status"
        " WHERE benchmark = ? AND list_contains(?, qc_status) ORDER BY item_id",
        [benchmark, list(QC_POLICIES[policy])],
    )
