"""A live family's leaderboard: the window split pooled over chosen months.

A monthly live release is one benchmark per month, named ``<family>-YYYY-MM``.  Pooling months re-reads each
month's judged responses and pools the questions (each month's questions stay distinct clusters), so the pooled
value, interval and gap are those of one benchmark holding every chosen month's questions, not an average of
monthly numbers.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from tasks.errors import ConfigError
from tasks.llm import load_registry
from tasks.metrics.leaderboard import ScoringConfig
from tasks.metrics.windows import Question, item_windows, window_scores
from tasks.qa.live import live_months
from tasks.recipe import recipe as recipe_of
from tasks.warehouse.db import Warehouse


def pooled_window_rows(wh: Warehouse, family: str, months: list[str] | None = None, models: list[str] | None = None,
                       config: ScoringConfig | None = None) -> list[dict[str, Any]]:
    """Leaderboard rows (the columns of ``leaderboard_rows``) of the window split pooled over ``months`` (all of the
    family's when None), per model scored on them, setting and language slice; an unknown month is a ConfigError naming the known."""
    config = config or ScoringConfig()
    known = live_months(wh, family)
    chosen = months or known
    if missing := sorted(set(chosen) - set(known)):
        raise ConfigError(f"live benchmark {family}: no month {', '.join(missing)} (months: {', '.join(known) or 'none'})")
    registry = load_registry(home=wh.home)
    pooled: dict[tuple[str, str, str, str], list[Question]] = defaultdict(list)
    judges_of: dict[str, set[str]] = defaultdict(set)
    for month in chosen:
        benchmark = f"{family}-{month}"
        recipe = wh.scalar("SELECT recipe FROM qa_benchmarks WHERE benchmark = ?", [benchmark])
        for model, judges in wh.query("SELECT model, any_value(judges) FROM leaderboard WHERE benchmark = ?"
                                      " GROUP BY model ORDER BY model", [benchmark]):
            if models and model not in models:
                continue
            cutoff = registry.get(model).cutoff_day if model in registry.names else None
            windows = item_windows(wh, benchmark, cutoff) or {}
            judges_of[model].update(judges)
            for (setting, lang), questions in recipe_of(recipe).window_questions(wh, benchmark, model, list(judges),
                                                                                 config, windows).items():
                pooled[(model, setting, lang, recipe)] += [replace(q, question_id=f"{month}/{q.question_id}")
                                                     for q in questions]
    rows = []
    for (model, setting, lang, recipe), questions in sorted(pooled.items()):
        for s in window_scores(questions, setting, recipe_of(recipe).headline, lang=lang, seed=config.seed,
                               resamples=config.resamples):
            rows.append({"benchmark": family, "setting": s.setting, "lang": s.lang, "subset": s.subset, "model": model,
                         "metric": s.metric, "value": s.value, "ci_low": s.ci_low, "ci_high": s.ci_high, "n": s.n,
                         "answered": None, "failed": None, "judge_failed": None,
                         "mode": f"pooled:{','.join(chosen)}", "judges": sorted(judges_of[model])})
    return rows
