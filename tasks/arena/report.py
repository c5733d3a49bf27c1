"""The benchmark report: one self-contained HTML file with the arena's ratings and the evaluation's metrics.

Everything the page needs is inside it — CSS inline, plots as inline SVG
(matplotlib), no script and nothing fetched — so it opens offline and can be
mailed or attached to an MLflow run as it is.  Per judge: the ratings over all
languages with intervals and rank intervals — an unbounded rating or interval
side shown as such (∞, "never lost"), never as a number — and each system's
sampled queries without an answer (each a loss against every system that
answered), the judge's consistency and position bias with what they count
and leave out ("n/a" where nothing was decided), an interval plot, a
language × system heatmap of ratings, and the surrogate judge's validation
with its ablations (or, with too few systems to hold any out, why there is
none), and the ratings per knowledge-cutoff window where the benchmark has
them.  Then the features each system has no value for, the evaluation's
metrics with what each stands on: ``n`` asked, ``answered``, ``failed`` and
``judge_failed`` (shown as "–" on rows written before those counts existed),
and, for a benchmark built from dated articles, each system's headline split
by window relative to its knowledge cutoff with the contamination gap
(``docs/live-benchmarks.md``).

The report belongs to the evaluation it shows: the file and its plots are
logged to the MLflow run of the benchmark's latest completed evaluation
(``evaluate`` or ``arena`` flow), next to the metrics they illustrate.
"""

from __future__ import annotations

import io
import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape

from tasks.arena.standings import AGREEMENT
from tasks.arena.table import best_first
from tasks.features.compute import missing_features
from tasks.llm import load_registry
from tasks.metrics.agreement import stored_agreement
from tasks.metrics.score import ALL
from tasks.metrics.windows import GAP_SUBSET, WINDOWS, window_subset
from tasks.version import code_version
from tasks.warehouse.atomic import atomic_write_text
from tasks.warehouse.db import Warehouse, snapshot_label

TEMPLATES = Path(__file__).with_name("templates")
EVALUATION_FLOWS = ("evaluate", "arena")


@dataclass
class JudgeSection:
    """What the report shows of one judge's arena."""

    name: str
    overall: list[dict[str, Any]]
    by_lang: dict[str, dict[str, float | None]]
    consistency: str
    first_position: str
    counts: dict[str, int | None]  # what the judge's statistics count and leave out (sql/021), None before them
    surrogate: dict[str, Any] | None = None  # the surrogate judge's validation, when it was fitted
    windows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # window subset → its ratings, best first
    no_windows: dict[str, str | None] = field(default_factory=dict)  # judged system without window ratings → cutoff
    figures: dict[str, str] = field(default_factory=dict)  # file name → SVG text

    @property
    def interval_svg(self) -> str:
        return self.figures["intervals.svg"]

    @property
    def heatmap_svg(self) -> str:
        return self.figures["heatmap.svg"]


def _svg(figure: Any) -> str:
    """A matplotlib figure as inline SVG text (without the XML prolog, which HTML does not want)."""
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _interval_plot(rows: list[dict[str, Any]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ordered = rows[::-1]  # best at the top
    finite = [v for r in rows for v in (r["rating"], r["ci_low"], r["ci_high"]) if v is not None]
    low, high = (min(finite, default=0.0), max(finite, default=0.0))
    margin = max(0.5, 0.15 * (high - low))
    left, right = low - margin, high + margin  # where an open side, or an unbounded rating, is drawn
    figure, axes = plt.subplots(figsize=(6, 0.4 * len(rows) + 1))
    # judged and predicted ratings drawn apart, so a rating the judge never gave does not pass for one
    for predicted, style in ((False, {"fmt": "o", "color": "C0", "label": "judged"}),
                             (True, {"fmt": "o", "color": "#888", "mfc": "white", "label": "predicted from features"})):
        shown = [(y, r) for y, r in enumerate(ordered) if bool(r["predicted"]) == predicted and r["rating"] is not None]
        if shown:
            axes.errorbar([r["rating"] for _, r in shown], [y for y, _ in shown], capsize=3, **style,
                          xerr=[[r["rating"] - (left if r["ci_low"] is None else r["ci_low"]) for _, r in shown],
                                [(right if r["ci_high"] is None else r["ci_high"]) - r["rating"] for _, r in shown]])
    for y, r in enumerate(ordered):  # an arrow at the edge: beyond every finite rating
        if r["rating"] is None and r["unbounded"] in ("high", "low"):
            axes.plot(right if r["unbounded"] == "high" else left, y, marker=">" if r["unbounded"] == "high" else "<",
                      color="C3", markersize=9)
    if any(r["predicted"] for r in rows):
        axes.legend(loc="lower right", fontsize=8)
    axes.set_xlim(left - 0.05 * margin, right + 0.05 * margin)
    axes.set_yticks(range(len(ordered)), [r["model"] for r in ordered])
    axes.axvline(0.0, color="#999", linewidth=0.8)
    axes.set_xlabel("Bradley–Terry rating (logit); arrows: unbounded")
    return _svg(figure)


def _heatmap(by_lang: dict[str, dict[str, float | None]], systems: list[str]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    langs = sorted(by_lang)
    # no rating, or an unbounded one (None), is an empty cell
    values = [[v if (v := by_lang[lang].get(system)) is not None else float("nan") for system in systems]
              for lang in langs]
    limit = max(1.0, *(abs(v) for row in values for v in row if v == v))
    figure, axes = plt.subplots(figsize=(1.0 * len(systems) + 2, 0.5 * len(langs) + 1.5))
    image = axes.imshow(values, cmap="RdBu", vmin=-limit, vmax=limit, aspect="auto")
    axes.set_xticks(range(len(systems)), systems, rotation=30, ha="right")
    axes.set_yticks(range(len(langs)), langs)
    for y, row in enumerate(values):
        for x, value in enumerate(row):
            if value == value:  # white on the dark ends of the scale, where black would not read
                axes.text(x, y, f"{value:+.2f}", ha="center", va="center", fontsize=8,
                          color="white" if abs(value) > 0.6 * limit else "black")
    figure.colorbar(image, ax=axes, label="rating")
    return _svg(figure)


def judge_sections(wh: Warehouse, benchmark: str, cutoffs: dict[str, str]) -> list[JudgeSection]:
    """One section per judge that rated this benchmark, with its plots; ``cutoffs``: the systems' knowledge cutoffs
    (a system without one is not in it)."""
    rows = wh.query_dicts("SELECT * FROM arena_ratings WHERE benchmark = ? ORDER BY judge, lang, rating DESC",
                          [benchmark])
    by_judge: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_judge[row["judge"]].append(row)
    sections = []
    for judge, ratings in sorted(by_judge.items()):
        overall = sorted((r for r in ratings if r["lang"] == ALL and r["subset"] == ALL), key=best_first)
        by_lang: dict[str, dict[str, float | None]] = defaultdict(dict)
        windows: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in sorted(ratings, key=best_first):
            if r["lang"] != ALL:
                by_lang[r["lang"]][r["model"]] = r["rating"]
            elif r["subset"] != ALL:
                windows[r["subset"]].append(r)
        first = next((r for r in overall if not r["predicted"]), {})
        report = wh.scalar("SELECT report FROM surrogate_reports WHERE benchmark = ? AND judge = ?", [benchmark, judge])
        section = JudgeSection(judge, overall, dict(by_lang), _share(first.get("consistency")),
                               _share(first.get("first_position_rate")), {key: first.get(key) for key in AGREEMENT},
                               json.loads(report) if report else None, dict(sorted(windows.items())))
        if windows:
            rated = {r["model"] for rows in windows.values() for r in rows}
            section.no_windows = {r["model"]: cutoffs.get(r["model"]) for r in overall
                                  if not r["predicted"] and r["model"] not in rated}
        section.figures = {"intervals.svg": _interval_plot(overall) if overall else "",
                           # predicted systems have no rating per language: no empty column for them
                           "heatmap.svg": _heatmap(section.by_lang, [r["model"] for r in overall if not r["predicted"]])
                           if by_lang else ""}
        sections.append(section)
    return sections


@dataclass(frozen=True)
class WindowSplit:
    """One system's headline metric in one setting, split by window relative to its knowledge cutoff."""

    setting: str
    model: str
    metric: str  # the headline's (the gap is in its points)
    cutoff: str | None  # the registry's knowledge cutoff as written; None: unknown
    rows: list[dict[str, Any]]  # leaderboard rows: each window's, then the contamination gap's


def window_splits(wh: Warehouse, benchmark: str, cutoffs: dict[str, str]) -> list[WindowSplit]:
    """The leaderboard's window rows over all languages, per setting and system, in window order with the gap last,
    with the system's knowledge cutoff (``cutoffs``; None: unknown)."""
    order = [window_subset(window) for window in WINDOWS] + [GAP_SUBSET]
    rows = wh.query_dicts("SELECT * FROM leaderboard WHERE benchmark = ? AND lang = 'all' AND list_contains(?, subset)"
                          " ORDER BY setting, model", [benchmark, order])
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        grouped[(row["setting"], row["model"])].append(row)
    splits = []
    for (setting, model), group in grouped.items():
        ordered = sorted(group, key=lambda r: order.index(r["subset"]))
        splits.append(WindowSplit(setting, model, ordered[0]["metric"], cutoffs.get(model), ordered))
    return splits


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def write_report(wh: Warehouse, benchmark: str, out: Path) -> list[JudgeSection]:
    """Write the report of ``benchmark`` to ``out`` (atomically); returns the judges' sections with their plots."""
    cutoffs = load_registry(home=wh.home).cutoffs
    sections = judge_sections(wh, benchmark, cutoffs)
    metrics = wh.query_dicts("SELECT * FROM leaderboard WHERE benchmark = ? AND lang = 'all' AND subset = 'all'"
                             " ORDER BY setting, metric, model", [benchmark])
    environment = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]))
    html = environment.get_template("report.html.j2").render(
        benchmark=benchmark, judges=sections, metrics=metrics, missing=missing_features(wh, benchmark),
        splits=window_splits(wh, benchmark, cutoffs), gap=GAP_SUBSET,
        agreement=[row for row in stored_agreement(wh, benchmark) if row["lang"] == ALL],
        version=code_version(), generated=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        snapshot=snapshot_label(wh.snapshot()))
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, html)
    return sections


def evaluation_run(wh: Warehouse, benchmark: str) -> str | None:
    """The MLflow run id of the benchmark's latest completed evaluation, None when it has none in this warehouse."""
    return wh.scalar("SELECT mlflow_run_id FROM runs WHERE list_contains(?, flow) AND status = 'completed'"
                     " AND (params->>'benchmark') = ? AND mlflow_run_id IS NOT NULL ORDER BY started_at DESC LIMIT 1",
                     [list(EVALUATION_FLOWS), benchmark])


def log_report(tracking_uri: str, mlflow_run_id: str, out: Path, sections: list[JudgeSection]) -> None:
    """Attach the report and its plots (``plots/<judge>/<name>.svg``) to a run, finished or not."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri)
    client.log_artifact(mlflow_run_id, str(out))
    for section in sections:
        for name, svg in section.figures.items():
            if svg:
                client.log_text(mlflow_run_id, svg, f"plots/{section.name}/{name}")
