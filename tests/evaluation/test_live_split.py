"""The leaderboard split by knowledge cutoff: hand-computed windows and scores, and the gap's paired bootstrap."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from tasks.errors import ConfigError
from tasks.llm.registry import MODELS_ENV
from tasks.metrics.leaderboard import ScoringConfig, score_model
from tasks.metrics.live import pooled_window_rows
from tasks.metrics.windows import GAP_METRIC, GAP_SUBSET, Question, item_windows, question_window, window_scores
from tasks.qa.live import live_months
from tasks.warehouse.db import Warehouse
from tests.support.warehouse_docs import ingest_dump

OCT, NOV = date(2026, 10, 31), date(2026, 11, 30)
SETTING = "multilingual_retrieval"


@pytest.mark.parametrize(("cutoff", "articles", "window"), [
    (None, [(NOV, OCT)], "unknown"),  # no cutoff
    (OCT, [], "unknown"),  # no supporting article known
    (OCT, [(OCT, None), (NOV, OCT)], "before_cutoff"),  # one article was there by the cutoff
    (OCT, [(NOV, OCT), (NOV, OCT)], "after_cutoff"),  # both appeared after the October dump, the cutoff's day
    (date(2026, 10, 15), [(NOV, OCT)], "after_cutoff"),
    (date(2026, 11, 15), [(NOV, OCT)], "unknown"),  # appeared between Oct 31 and Nov 30: either side of Nov 15
    (OCT, [(NOV, OCT), (None, None)], "unknown"),  # an undated article
])
def test_a_question_window_from_its_articles_dates(cutoff: date | None, articles: list, window: str) -> None:
    assert question_window(cutoff, articles) == window


# q1: articles 1 (Oct) and 3 (new in Nov); q2: 3 and 4 (both new in Nov); q3: 2 (Oct); q4: 4; q5: an unknown page
ITEMS = {"q1": [1, 3], "q2": [3, 4], "q3": [2], "q4": [4], "q5": [99]}
VERDICTS = {"q1": "yes", "q2": "no", "q3": "yes", "q4": "yes", "q5": "no"}


def _benchmark(wh: Warehouse, name: str, asked: tuple[tuple[str, str], ...] = ((SETTING, "de"),)) -> None:
    """Benchmark ``name``: the five items above, each asked once per (setting, language) of ``asked`` (German in
    multilingual retrieval unless told) and answered by model m, judged by j."""
    with wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES (?, 'xrag', ['en', 'de'], 'g', '{}', now())", [name])
        for item, pages in ITEMS.items():
            documents = "[" + ", ".join(f'{{"lang": "en", "page_id": {p}, "title": "t"}}' for p in pages) + "]"
            cur.execute("INSERT INTO qa_items (benchmark, item_id, recipe, lang, documents, status, generator,"
                        " fingerprint) VALUES (?, ?, 'xrag', 'en', ?, 'ok', 'g', 'fp')", [name, item, documents])
            for setting, lang in asked:
                instance = f"{item}:{setting}:{lang}"
                cur.execute("INSERT INTO instances (benchmark, instance_id, item_id, recipe, setting, lang, question,"
                            " answer, source_lang, documents, seed, fingerprint) VALUES (?, ?, ?, 'xrag', ?, ?,"
                            " 'Frage?', 'Berlin', 'en', '[]', 0, 'fp')", [name, instance, item, setting, lang])
                cur.execute("INSERT INTO responses (benchmark, instance_id, model, setting, lang, status, answer,"
                            " citations, template, fingerprint) VALUES (?, ?, 'm', ?, ?, 'ok', 'Berlin', [], 't',"
                            " 'fp')", [name, instance, setting, lang])  # the gold answer itself: in its language
                cur.execute("INSERT INTO judgements (benchmark, instance_id, model, judge, kind, verdict, status,"
                            " fingerprint) VALUES (?, ?, 'm', 'j', 'correct', ?, 'ok', 'fp')",
                            [name, instance, VERDICTS[item]])


def _dumps(wh: Warehouse) -> None:
    ingest_dump(wh, "en", "20261031", [(1, "One", None), (2, "Two", None)])
    ingest_dump(wh, "en", "20261130", [(1, "One", None), (2, "Two", None), (3, "Three", None), (4, "Four", None)])


def _window_rows(rows: list[tuple]) -> dict[str, tuple]:
    return {subset: (metric, value, n) for subset, metric, value, n in rows if subset.startswith("window:")}


def _leaderboard(tmp_path: Path, cutoff: date | None) -> dict[str, tuple]:
    with Warehouse(tmp_path / "home") as wh:
        _dumps(wh)
        _benchmark(wh, "x")
        score_model(wh, "x", "xrag", "m", ["j"], ScoringConfig(resamples=200), "fp", item_windows(wh, "x", cutoff))
        return _window_rows(wh.query("SELECT subset, metric, value, n FROM leaderboard WHERE setting = ?", [SETTING]))


def test_months_of_a_live_family_pool_their_questions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODELS_ENV, raising=False)
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "models.yaml").write_text(
        "models:\n  - {name: m, backend: baseline, model: abstain, knowledge_cutoff: 2026-10}\n")
    with Warehouse(tmp_path / "home") as wh:
        _dumps(wh)
        for name in ("live-2026-10", "live-2026-11", "live-extra"):
            _benchmark(wh, name)
            score_model(wh, name, "xrag", "m", ["j"], ScoringConfig(resamples=200), "fp")
        assert live_months(wh, "live") == ["2026-10", "2026-11"]  # live-extra is no month
        pooled = pooled_window_rows(wh, "live", None, None, ScoringConfig(resamples=200))
        only = pooled_window_rows(wh, "live", ["2026-11"], None, ScoringConfig(resamples=200))
        with pytest.raises(ConfigError, match="no month 2026-12"):
            pooled_window_rows(wh, "live", ["2026-12"])
    rows = _window_rows([(r["subset"], r["metric"], r["value"], r["n"]) for r in pooled])
    assert rows == {
        "window:before_cutoff": ("accuracy", 100.0, 4),  # q1 and q3 of both months: 4 of 4
        "window:after_cutoff": ("accuracy", 50.0, 4),  # q2 no, q4 yes, twice: 2 of 4
        "window:unknown": ("accuracy", 0.0, 2),
        GAP_SUBSET: (GAP_METRIC, 50.0, 8),
    }
    assert {r["mode"] for r in pooled} == {"pooled:2026-10,2026-11"}
    assert next(r["n"] for r in only if r["subset"] == "window:before_cutoff") == 2  # one month alone


def test_a_model_with_a_cutoff_is_split_by_hand(tmp_path: Path) -> None:
    rows = _leaderboard(tmp_path, OCT)  # cutoff 2026-10 (covers all of October)
    assert rows == {
        "window:before_cutoff": ("accuracy", 100.0, 2),  # q1 yes, q3 yes: 2 of 2
        "window:after_cutoff": ("accuracy", 50.0, 2),  # q2 no, q4 yes: 1 of 2
        "window:unknown": ("accuracy", 0.0, 1),  # q5 no
        GAP_SUBSET: (GAP_METRIC, 50.0, 4),  # 100 - 50 points, over the 4 dated questions
    }


def test_xrag_s_english_baseline_is_split_apart_from_the_pooled_languages(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "home") as wh:
        _dumps(wh)
        _benchmark(wh, "x", (("closed_book", "en"), (SETTING, "en"), (SETTING, "de")))
        score_model(wh, "x", "xrag", "m", ["j"], ScoringConfig(resamples=200), "fp", item_windows(wh, "x", OCT))
        rows = wh.query("SELECT setting, lang, subset, value, n FROM leaderboard WHERE starts_with(subset, 'window:')"
                        " AND subset <> ?", [GAP_SUBSET])
    split = {(setting, lang, subset): (value, n) for setting, lang, subset, value, n in rows}
    # closed book is asked in English only: its split is the English row's, with no pooled `all` row
    assert split[("closed_book", "en", "window:before_cutoff")] == (100.0, 2)  # q1 yes, q3 yes
    assert split[("closed_book", "en", "window:after_cutoff")] == (50.0, 2)  # q2 no, q4 yes
    assert ("closed_book", "all", "window:after_cutoff") not in split
    # retrieval asked in English and German: English apart, `all` pools German alone (2 of 2 before, as above)
    assert split[(SETTING, "en", "window:before_cutoff")] == split[(SETTING, "all", "window:before_cutoff")] == (100.0, 2)


def test_a_model_without_a_cutoff_is_all_unknown(tmp_path: Path) -> None:
    rows = _leaderboard(tmp_path, None)
    assert rows["window:unknown"] == ("accuracy", 60.0, 5)  # 3 yes of 5
    assert rows["window:before_cutoff"] == rows["window:after_cutoff"] == ("accuracy", None, 0)
    assert rows[GAP_SUBSET] == (GAP_METRIC, None, 0)


def test_the_gap_interval_matches_scipys_paired_bootstrap() -> None:
    # 30 questions before the cutoff (24 correct: 80%), 20 after (9 correct: 45%): a gap of 35 points
    before = [Question(f"b{i}", "before_cutoff", float(i < 24), 1.0) for i in range(30)]
    after = [Question(f"a{i}", "after_cutoff", float(i < 9), 1.0) for i in range(20)]
    gap = window_scores(before + after, "s", "accuracy", seed=1, resamples=20000)[-1]
    assert gap.value == pytest.approx(35.0)
    hits = np.array([q.hits for q in before + after])
    is_before = np.array([q.window == "before_cutoff" for q in before + after])

    def difference(h: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
        return 100 * ((h * b).sum(axis) / b.sum(axis) - (h * ~b).sum(axis) / (~b).sum(axis))

    reference = stats.bootstrap((hits, is_before), difference, paired=True, vectorized=True, method="percentile",
                                n_resamples=20000, rng=np.random.default_rng(7)).confidence_interval
    # two independent Monte Carlo runs of the same percentile interval: they agree to well under a point
    assert gap.ci_low == pytest.approx(reference.low, abs=1.0)
    assert gap.ci_high == pytest.approx(reference.high, abs=1.0)
    assert gap.ci_low < 35.0 < gap.ci_high
