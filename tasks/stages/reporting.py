"""What a flow run shows on its Prefect page: a table of stage cells and a short summary.

The summary says what the run computed, took from the cache, failed and
skipped — cells that did not run because a cell upstream of them failed, and
items the run's budget stopped (``skipped_budget`` rows, which the next run
resumes) — and what it cost: the model calls sent, tokens and USD spent from
the run's budget ledger (every attempt sent counts, retries included; answers
served from the warehouse's call cache are free).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from prefect.artifacts import create_markdown_artifact, create_table_artifact

from tasks.llm import BudgetLedger, run_ledger
from tasks.mlflow_genai import link_templates, run_templates
from tasks.tracking import StageOutcome, TrackedRun, tracking_uri
from tasks.warehouse.db import Warehouse, cli_prefix, snapshot_label

NOT_RUN = "not run: "


def artifact_key(*parts: str) -> str:
    """A Prefect artifact key from ``parts``: Prefect accepts only lowercase letters, digits and dashes."""
    return re.sub(r"[^a-z0-9]+", "-", "-".join(parts).lower()).strip("-")


@dataclass(frozen=True)
class Spending:
    """What one flow run paid for model calls, and its limits."""

    calls: int = 0
    tokens: int = 0
    usd: float = 0.0
    stopped_by_budget: bool = False
    limits: str = ""

    @classmethod
    def of(cls, ledger: BudgetLedger) -> Spending:
        limits = ", ".join(f"{k} {v:g}" for k, v in ledger.budget.model_dump(exclude_none=True).items())
        return cls(ledger.calls, ledger.tokens, ledger.usd, ledger.exhausted, limits)


def finish_run(run: TrackedRun, flow: str, outcomes: Sequence[StageOutcome]) -> list[dict]:
    """Record the outcomes (warehouse, MLflow), publish the Prefect artifacts, return the rows for callers.

    A build flow whose computed cells read a prompt template, or that paid a model call, opens its MLflow run
    here: the prompts that wrote a benchmark and what they cost belong beside the evaluations. One that only
    read files and the warehouse (an import, a corpus, instances) has nothing there an MLflow user reads, and
    opening the store would cost a small command seconds; its stage table is a Prefect artifact and warehouse
    rows. In MLflow what the run spent is tags, and the run is linked to the registered templates its cells read.
    """
    spending = Spending.of(run_ledger(run.run_id, None))
    if not run.tracked and (spending.calls or run_templates(run.wh, run.run_id, computed_only=True)):
        run.track()
    run.finish(outcomes)
    skipped = budget_skipped(run.wh, outcomes) if spending.stopped_by_budget else {}
    publish_summary(flow, outcomes, run.wh, mlflow_run_id=run.mlflow_run_id if run.tracked else None,
                    spending=spending, skipped=skipped)
    if run.tracked:
        import mlflow

        mlflow.set_tags({"babelbench.cost.calls": str(spending.calls), "babelbench.cost.tokens": str(spending.tokens),
                         "babelbench.cost.usd": f"{spending.usd:.6f}",
                         "babelbench.items_skipped_budget": str(sum(skipped.values()))})
        link_templates(tracking_uri(run.wh.home), run.mlflow_run_id, run_templates(run.wh, run.run_id))
    return [o.as_row() for o in outcomes]


def budget_skipped(wh: Warehouse, outcomes: Sequence[StageOutcome]) -> dict[str, int]:
    """``stage[cell]`` → items left ``skipped_budget`` by the cells this run computed (rows carry the cell's fingerprint)."""
    computed = {o.ref.fingerprint: f"{o.stage}[{o.cell}]" for o in outcomes if o.ref and o.status == "computed"}
    if not computed:
        return {}
    tables = [name for (name,) in wh.query(
        "SELECT c.table_name FROM information_schema.columns c JOIN information_schema.tables t"
        " ON t.table_name = c.table_name AND t.table_schema = c.table_schema"
        " WHERE t.table_type = 'BASE TABLE' AND c.column_name IN ('status', 'fingerprint')"
        " GROUP BY c.table_name HAVING count(DISTINCT c.column_name) = 2 ORDER BY 1")]
    found: dict[str, int] = {}
    for table in tables:
        for fp, count in wh.query(f'SELECT fingerprint, count(*) FROM "{table}" WHERE status = \'skipped_budget\''
                                  " AND list_contains(?, fingerprint) GROUP BY fingerprint", [list(computed)]):
            found[computed[fp]] = found.get(computed[fp], 0) + count
    return dict(sorted(found.items()))


def publish_summary(flow: str, outcomes: Sequence[StageOutcome], wh: Warehouse, *, mlflow_run_id: str | None,
                    spending: Spending | None = None, skipped: dict[str, int] | None = None) -> str:
    """Create the flow run's Prefect artifacts and return the markdown summary (which names the warehouse and the
    snapshot it holds once the run ended)."""
    spending = spending or Spending()
    skipped = skipped or {}
    counts = {s: sum(1 for o in outcomes if o.status == s) for s in ("computed", "cached", "failed")}
    not_run = [o for o in outcomes if o.status == "failed" and (o.error or "").startswith(NOT_RUN)]
    failed = [o for o in outcomes if o.status == "failed" and o not in not_run]
    items = sum(skipped.values())
    lines = [
        f"## babelbench {flow}",
        f"{counts['computed']} cells computed, {counts['cached']} cache hits, {len(failed)} failed,"
        f" {len(not_run)} skipped (not run: a cell upstream failed); {items} items skipped by the budget.",
        "",
        f"- cost: {spending.calls} model calls paid, {spending.tokens} tokens, ${spending.usd:.6f}"
        + (f" (budget: {spending.limits}{'; reached' if spending.stopped_by_budget else ''})" if spending.limits else ""),
        f"- warehouse: `{wh.path}`, snapshot {snapshot_label(wh.snapshot())}"
        f" (`{cli_prefix(wh)} sql \"SELECT * FROM stage_runs\"`)",
        f"- MLflow run: `{mlflow_run_id or '-'}`",
    ]
    if failed:
        lines += ["", "### Failed cells"] + [f"- **{o.stage}[{o.cell}]**: {o.error}" for o in failed]
    if not_run:
        lines += ["", "### Skipped cells"] + [f"- {o.stage}[{o.cell}]: {(o.error or '')[len(NOT_RUN):]}" for o in not_run]
    if skipped:
        lines += ["", "### Items skipped by the budget (the next run resumes them; what was paid is not paid again)"]
        lines += [f"- {cell}: {count} skipped_budget" for cell, count in skipped.items()]
    issues = [o for o in outcomes if o.ref and o.ref.issues]
    if issues:
        lines += ["", "### Cells with input issues"] + [f"- {o.stage}[{o.cell}]: {o.ref.issues} issue(s) {o.ref.message}" for o in issues if o.ref]
    markdown = "\n".join(lines)
    key = re.sub(r"[^a-z0-9-]+", "-", f"babelbench-{flow}".lower())
    create_table_artifact(table=[o.as_row() for o in outcomes], key=f"{key}-stages", description=f"Stage cells of this {flow} run")
    create_markdown_artifact(markdown=markdown, key=f"{key}-summary", description=f"Summary of this {flow} run")
    return markdown
