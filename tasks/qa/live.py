"""A monthly live release: the window of the articles new in the latest ingested dump, and the month's name.

A release is one benchmark per month, named ``<family>-YYYY-MM`` (the family is ``<recipe>-live`` unless a name is
given), so a new month never touches an earlier one and ``leaderboard --benchmark <family>`` pools them.  The window
is resolved when the build starts, from the dates of the dumps ingested for the benchmark's languages, and is then
recorded like a literal one.  See docs/live-benchmarks.md.
"""

from __future__ import annotations

import json
import re
from datetime import timedelta

from tasks.errors import ConfigError
from tasks.qa.window import Window
from tasks.warehouse.db import Warehouse

_MONTH = re.compile(r"\d{4}-\d{2}")


def live_months(wh: Warehouse, family: str) -> list[str]:
    """The months (YYYY-MM) of the benchmarks named ``<family>-YYYY-MM``, in order."""
    prefix = f"{family}-"
    return sorted(name[len(prefix):] for (name,) in wh.query(
        "SELECT benchmark FROM qa_benchmarks WHERE starts_with(benchmark, ?)", [prefix])
        if _MONTH.fullmatch(name[len(prefix):]))


def newest_month(wh: Warehouse, family: str) -> str:
    """The benchmark of ``family``'s newest month (what the monthly chain assembles after building it)."""
    months = live_months(wh, family)
    if not months:
        raise ConfigError(f"live benchmark {family}: no month built yet (no benchmark named {family}-YYYY-MM)")
    return f"{family}-{months[-1]}"


def latest_window(wh: Warehouse, langs: list[str]) -> Window:
    """The articles new in each language's latest ingested dump: from the day after the latest of the previous dumps
    to the latest dump, both inclusive.

    Every language needs two dated dumps, and each language's latest dump must come after every language's previous
    one, or the window would take one language's older news or miss another's; the error names the language.
    """
    dumps = dict(wh.query("SELECT lang, list(dump_date ORDER BY dump_date DESC) FROM appearance_dumps"
                          " WHERE list_contains(?, lang) GROUP BY lang", [langs]))
    for lang in langs:
        dates = dumps.get(lang, [])
        if len(dates) < 2:
            held = f"only the dump of {dates[0].isoformat()}" if dates else "no dated dump"
            raise ConfigError(
                f"live build: {lang} has {held} ingested, so there is no earlier dump to compare with and no article "
                f"can be shown new; ingest another dump of {lang} (`babelbench corpus ingest --lang {lang} --date "
                "YYYYMMDD`) or give the window by hand (--window SINCE[:UNTIL])")
    previous = max(dumps[lang][1] for lang in langs)
    for lang in langs:
        if dumps[lang][0] <= previous:
            raise ConfigError(
                f"live build: {lang}'s latest dump ({dumps[lang][0].isoformat()}) is not after another language's "
                f"previous dump ({previous.isoformat()}); ingest {lang}'s newer dump (`babelbench corpus ingest "
                f"--lang {lang}`) or give the window by hand (--window SINCE[:UNTIL])")
    return Window(since=previous + timedelta(days=1), until=max(dates[0] for dates in dumps.values()))


def live_release(wh: Warehouse, recipe: str, langs: list[str], benchmark: str | None = None) -> tuple[str, Window]:
    """The name and window of this month's live build: ``<recipe>-live-YYYY-MM`` (the month of the latest dump) unless
    ``benchmark`` is given.  A benchmark of that name built with another window (or none) is never overwritten: the
    build of the same month again is the only rebuild allowed."""
    window = latest_window(wh, langs)
    name = benchmark or f"{recipe}-live-{window.until:%Y-%m}"
    stored = wh.scalar("SELECT config FROM qa_benchmarks WHERE benchmark = ?", [name])
    if stored is not None:
        recorded = json.loads(stored)  # a build's parameters; recorded before recipes were plugins: under its name
        built = (recorded.get("config") or recorded.get(recipe) or {}).get("window")
        earlier = Window.model_validate(built) if built is not None else None
        if earlier != window:
            raise ConfigError(
                f"live build: benchmark {name} exists, built with the window {earlier or 'none'}; the window of the"
                f" latest dumps is {window}, and a live build never overwrites another one: name the benchmark"
                " (--benchmark) or ingest the next month's dump")
    return name, window
