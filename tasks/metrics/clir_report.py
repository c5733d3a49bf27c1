"""Show an evaluation: a few pooled MLflow metrics, a table of directions, a heatmap, per-query scores, a Prefect
table."""

from __future__ import annotations

from collections.abc import Sequence

from prefect.artifacts import create_table_artifact

from tasks.metrics.clir_eval import ALL, EvalResult
from tasks.tracking import mlflow_name

HEATMAP_METRIC = "ndcg@10"
NO_SELF_METRIC = "ndcg@10_no6"


def pooled_metrics(result: EvalResult) -> dict[str, float]:
    """Each metric's mean over the directions with its 95% interval (``ndcg_at_10``, ``ndcg_at_10/ci_low``, …): the
    few numbers a run charts; every direction's are the rows of its table."""
    metrics: dict[str, float] = {}
    for row in result.metrics:
        if row["src_lang"] == ALL:
            base = mlflow_name(row["metric"])
            metrics[base] = row["value"]
            metrics.update({f"{base}/{bound}": row[bound] for bound in ("ci_low", "ci_high") if row[bound] is not None})
    return metrics


def log_to_mlflow(result: EvalResult, langs: Sequence[str]) -> None:
    """The pooled metrics with their intervals, the directions' table (``directions.json``: NDCG@10 and NDCG@10
    without the own article, per direction), the heatmap and the per-query table."""
    import mlflow
    import pandas as pd

    mlflow.log_metrics(pooled_metrics(result))
    mlflow.log_table(pd.DataFrame(direction_rows(result)), "directions.json")
    import matplotlib.pyplot as plt

    figure = heatmap(result, langs)
    mlflow.log_figure(figure, "ndcg10_heatmap.png")
    plt.close(figure)  # pyplot keeps every figure until closed
    mlflow.log_table(pd.DataFrame(result.per_query), "per_query.json")


def heatmap(result: EvalResult, langs: Sequence[str]):  # noqa: ANN201 (a matplotlib Figure)
    """Query language × document language NDCG@10, the CLIRMatrix way of reading a collection."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    index = {lang: i for i, lang in enumerate(langs)}
    grid = np.full((len(langs), len(langs)), np.nan)
    for row in result.metrics:
        if row["metric"] == HEATMAP_METRIC and row["src_lang"] in index and row["tgt_lang"] in index:
            grid[index[row["src_lang"]], index[row["tgt_lang"]]] = row["value"]
    fig, ax = plt.subplots(figsize=(1.2 * len(langs) + 2, 1.0 * len(langs) + 1.5))
    image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis")
    ax.set_xticks(range(len(langs)), langs)
    ax.set_yticks(range(len(langs)), langs)
    ax.set_xlabel("document language")
    ax.set_ylabel("query language")
    for (i, j), value in np.ndenumerate(grid):
        if not np.isnan(value):
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", color="white" if value < 0.6 else "black")
    fig.colorbar(image, ax=ax, label=HEATMAP_METRIC)
    ax.set_title(f"{HEATMAP_METRIC} by direction")
    fig.tight_layout()
    return fig


def direction_rows(result: EvalResult) -> list[dict]:
    """One row per direction (and the mean over them): NDCG@10 with its interval and queries, and NDCG@10 without
    the own article with the number of queries it leaves out (those with no other relevant document)."""
    without_self = {(r["src_lang"], r["tgt_lang"]): r["value"] for r in result.metrics if r["metric"] == NO_SELF_METRIC}
    left_out = {(r["src_lang"], r["tgt_lang"]): r["n_left_out"] for r in result.left_out
                if r["metric"] == NO_SELF_METRIC}
    left_out[(ALL, ALL)] = sum(left_out.values())
    rows = []
    for r in result.metrics:
        if r["metric"] != HEATMAP_METRIC:
            continue
        direction = (r["src_lang"], r["tgt_lang"])
        no_self = without_self.get(direction)
        rows.append({"direction": "mean" if r["src_lang"] == ALL else f"{r['src_lang']}>{r['tgt_lang']}",
                     "ndcg@10": round(r["value"], 4), "ci95": _interval(r["ci_low"], r["ci_high"]), "n": r["n_queries"],
                     NO_SELF_METRIC: "n/a" if no_self is None else round(no_self, 4),
                     f"{NO_SELF_METRIC} left out": left_out.get(direction, 0)})
    return rows


def publish_table(result: EvalResult, collection: str, ranker: str) -> None:
    """The directions' table (:func:`direction_rows`) as a Prefect table artifact."""
    create_table_artifact(table=direction_rows(result), key="babelbench-clir-eval", description=f"{ranker} on {collection}")


def _interval(low: float | None, high: float | None) -> str:
    return "n/a" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"
