"""What the demo prints of the window split: one row per model and benchmark, each window's value, interval and n."""

from __future__ import annotations

from pathlib import Path

from tasks.metrics.leaderboard import LEADERBOARD_COLUMNS
from tasks.sample.report import window_summary
from tasks.warehouse.db import Warehouse


def _row(benchmark: str, setting: str, lang: str, subset: str, model: str, metric: str, value: float | None,
         interval: tuple[float, float] | None, n: int) -> list:
    low, high = interval or (None, None)
    return [benchmark, setting, lang, subset, model, metric, value, low, high, n, "protocol", ["j"], "fp", n, 0, 0]


def test_the_window_summary_has_a_row_per_model_with_every_window_and_the_gap(tmp_path: Path) -> None:
    rows = [
        _row("x", "closed_book", "en", "window:before_cutoff", "m", "accuracy", 75.0, (50.0, 100.0), 4),
        _row("x", "closed_book", "en", "window:after_cutoff", "m", "accuracy", 50.0, (0.0, 100.0), 2),
        _row("x", "closed_book", "en", "window:unknown", "m", "accuracy", None, None, 0),
        _row("x", "closed_book", "en", "window:before-after", "m", "contamination_gap", 25.0, (-50.0, 100.0), 6),
        _row("x", "closed_book", "en", "all", "m", "accuracy", 66.7, (33.3, 100.0), 6),  # not a window row
        _row("x", "oracle", "en", "window:before_cutoff", "m", "accuracy", 100.0, (100.0, 100.0), 4),  # not closed book
        _row("y", "closed_book", "en", "window:unknown", "m", "accuracy", 0.0, (0.0, 0.0), 3),  # not asked for
    ]
    with Warehouse(tmp_path / "home") as wh:
        with wh.transaction() as cur:
            cur.executemany(f"INSERT INTO leaderboard ({', '.join(LEADERBOARD_COLUMNS)}) VALUES"
                            f" ({', '.join('?' * len(LEADERBOARD_COLUMNS))})", rows)
        columns, summary = window_summary(wh, ["x"])
    assert columns == ["benchmark", "model", "lang", "metric", "before_cutoff", "after_cutoff", "unknown",
                       "gap: before - after"]
    assert summary == [("x", "m", "en", "accuracy", "75.0 [50.0, 100.0] (n=4)", "50.0 [0.0, 100.0] (n=2)",
                        "n/a (n=0)", "25.0 [-50.0, 100.0] (n=6)")]
