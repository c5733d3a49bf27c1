"""The arena split by knowledge cutoff: a battle counts in a window only when its question is there for both
systems; hand-computed Bradley–Terry fits per window, a system without a cutoff left out, and how the split is
shown."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import optimize, special

from tasks.arena.bradley_terry import Battle, ratings
from tasks.arena.pairwise import OrderedVerdict
from tasks.arena.standings import battle_window, rate, system_windows
from tasks.arena.table import window_tables
from tasks.llm.registry import MODELS_ENV
from tasks.warehouse.db import Warehouse
from tests.support.warehouse_docs import ingest_dump

# The question's supporting page: pages 1 and 2 are in the October dump (the first: "on or before" 2026-10-31),
# 3 and 4 are new in the November one (appeared after 2026-10-31), 99 is in no dump (undated).
PAGES = {"b1": 1, "b2": 1, "b3": 2, "b4": 2, "b5": 1, "a1": 3, "a2": 3, "a3": 4, "u1": 99, "c1": 1, "c2": 3}
# (question, shown first, shown second, winner). A and B have the cutoff 2026-10 (up to 2026-10-31), C none.
BATTLES = [
    ("b1", "A", "B", "a"), ("b2", "A", "B", "a"), ("b3", "B", "A", "b"), ("b4", "A", "B", "a"),  # before: A 4
    ("b5", "A", "B", "b"),  # before: B 1
    ("a1", "A", "B", "b"), ("a2", "B", "A", "a"), ("a3", "A", "B", "a"),  # after: B 2, A 1
    ("u1", "A", "B", "b"),  # undated: unknown for both, overall only
    ("c1", "C", "B", "a"), ("c2", "A", "C", "a"),  # C has no cutoff: overall only (C beats B, A beats C)
]


def _winner_loser(first: str, second: str, winner: str) -> tuple[str, str]:
    return (first, second) if winner == "a" else (second, first)


def _fit(pairs: list[tuple[str, str]]) -> dict[str, float]:
    """Bradley–Terry maximum-likelihood logits, mean zero, by direct minimisation (independent of the fit under
    test): minimise −Σ log σ(β_winner − β_loser) over β with the last logit fixed at 0, then centre."""
    systems = sorted({s for pair in pairs for s in pair})
    index = {s: n for n, s in enumerate(systems)}

    def loss(free: np.ndarray) -> float:
        beta = np.append(free, 0.0)
        return -sum(np.log(special.expit(beta[index[w]] - beta[index[l]])) for w, l in pairs)

    beta = np.append(optimize.minimize(loss, np.zeros(len(systems) - 1), method="BFGS", options={"gtol": 1e-10}).x,
                     0.0)
    return dict(zip(systems, beta - beta.mean(), strict=True))


@pytest.fixture
def wh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Warehouse:
    monkeypatch.delenv(MODELS_ENV, raising=False)
    home = tmp_path / "home"
    home.mkdir()
    (home / "models.yaml").write_text(
        "models:\n"
        "  - {name: A, backend: baseline, model: abstain, knowledge_cutoff: 2026-10}\n"
        "  - {name: B, backend: baseline, model: extractive, knowledge_cutoff: 2026-10}\n"
        "  - {name: C, backend: baseline, model: oracle}\n")
    with Warehouse(home) as warehouse:
        ingest_dump(warehouse, "en", "20261031", [(1, "One", None), (2, "Two", None)])
        ingest_dump(warehouse, "en", "20261130", [(1, "One", None), (2, "Two", None), (3, "Three", None),
                                                  (4, "Four", None)])
        with warehouse.transaction() as cur:
            cur.execute("INSERT INTO qa_benchmarks VALUES ('x', 'xrag', ['en', 'de'], 'g', '{}', now())")
            for item, page in PAGES.items():
                cur.execute("INSERT INTO qa_items (benchmark, item_id, recipe, lang, documents, status, generator,"
                            " fingerprint) VALUES ('x', ?, 'xrag', 'en', ?, 'ok', 'g', 'fp')",
                            [item, f'[{{"lang": "en", "page_id": {page}, "title": "t"}}]'])
                cur.execute("INSERT INTO instances (benchmark, instance_id, item_id, recipe, setting, lang, question,"
                            " answer, source_lang, documents, seed, fingerprint) VALUES ('x', ?, ?, 'xrag', 'rag',"
                            " 'de', 'Frage?', 'Berlin', 'en', '[]', 0, 'fp')", [f"{item}:de", item])
            cur.executemany("INSERT INTO battles VALUES ('x', ?, 'de', 'j', ?, ?, ?, 'ok', NULL, NULL, NULL, 'fp',"
                            " NULL)", [[f"{q}:de", first, second, winner] for q, first, second, winner in BATTLES])
        yield warehouse


def _stored(wh: Warehouse) -> dict[str, dict[str, dict]]:
    rows = wh.query_dicts("SELECT * FROM arena_ratings WHERE lang = 'all'")
    return {subset: {r["model"]: r for r in rows if r["subset"] == subset} for subset in {r["subset"] for r in rows}}


def test_window_ratings_are_fitted_on_the_battles_in_that_window_for_both_systems(wh: Warehouse) -> None:
    windows = system_windows(wh, "x", ["A", "B", "C"])
    assert set(windows) == {"A", "B"}  # C has no cutoff
    assert windows["A"]["b1:de"] == "before_cutoff" and windows["A"]["a1:de"] == "after_cutoff"
    assert windows["A"]["u1:de"] == "unknown"
    output = rate(wh, "x", "j", ["A", "B", "C"], ["de"], "drop", 200, 0, "fp", windows)
    stored = _stored(wh)
    assert set(stored) == {"all", "window:before_cutoff", "window:after_cutoff"}
    # two systems: β_A − β_B = ln(wins_A / wins_B), mean zero → A at +ln(w_A/w_B)/2
    #   before: A 4, B 1 → +ln 4 / 2 = ln 2 = +0.6931; after: A 1, B 2 → ln(1/2)/2 = −0.3466: B ahead
    before, after = stored["window:before_cutoff"], stored["window:after_cutoff"]
    assert before["A"]["rating"] == pytest.approx(np.log(2), abs=1e-4)
    assert before["B"]["rating"] == pytest.approx(-np.log(2), abs=1e-4)
    assert after["A"]["rating"] == pytest.approx(-np.log(2) / 2, abs=1e-4)
    assert after["B"]["rating"] == pytest.approx(np.log(2) / 2, abs=1e-4)
    assert (before["A"]["n_battles"], after["A"]["n_battles"]) == (5, 3)
    # overall: all 11 battles, C's and the undated one's included; A beat B 5 times, B beat A 4, C beat B, A beat C
    overall = stored["all"]
    expected = _fit([_winner_loser(first, second, winner) for _, first, second, winner in BATTLES])
    for system in ("A", "B", "C"):
        assert overall[system]["rating"] == pytest.approx(expected[system], abs=1e-4)
    assert overall["A"]["n_battles"] == 11
    # the orders differ: A ahead of B overall and before the cutoff, behind B after it
    assert overall["A"]["rating"] > overall["B"]["rating"] and after["B"]["rating"] > after["A"]["rating"]
    assert "C" not in before and "C" not in after
    # the window's intervals are the rating method's bootstrap on exactly the hand-filtered battles
    after_battles = [Battle(f"{q}:de", "de", first, second, winner) for q, first, second, winner in BATTLES
                     if q.startswith("a")]
    reference = ratings(after_battles, bootstrap=200, seed=0, ties="drop")["models"]
    assert [(after[s]["ci_low"], after[s]["ci_high"]) for s in "AB"] == [
        (reference[s]["ci_low"], reference[s]["ci_high"]) for s in "AB"]
    assert ("by window (question there for both systems): after_cutoff 3 battles, before_cutoff 5 battles;"
            " unknown cutoff, no window ratings: C") in output.message
    # the leaderboards view carries the window as the rating's subset
    assert dict(wh.query("SELECT subset, count(*) FROM leaderboards WHERE setting = 'arena' AND lang = 'all'"
                         " GROUP BY subset")) == {"all": 3, "window:before_cutoff": 2, "window:after_cutoff": 2}


def test_a_benchmark_without_dated_articles_has_no_window_ratings(wh: Warehouse) -> None:
    with wh.transaction() as cur:
        cur.execute("UPDATE qa_items SET documents = '[{\"lang\": \"en\", \"page_id\": 99, \"title\": \"t\"}]'")
    assert system_windows(wh, "x", ["A", "B", "C"]) is None
    output = rate(wh, "x", "j", ["A", "B", "C"], ["de"], "drop", 20, 0, "fp", None)
    assert set(_stored(wh)) == {"all"} and "by window" not in output.message


@pytest.mark.parametrize(("first", "second", "window"), [
    ("after_cutoff", "after_cutoff", "after_cutoff"),
    ("before_cutoff", "before_cutoff", "before_cutoff"),
    ("after_cutoff", "before_cutoff", None),  # cutoffs apart: one may have read the article, the other not
    ("unknown", "unknown", None),
    ("after_cutoff", None, None),  # the second system has no cutoff
])
def test_a_battle_counts_in_a_window_only_when_its_question_is_there_for_both(first: str, second: str | None,
                                                                             window: str | None) -> None:
    windows = {"A": {"q": first}} | ({"B": {"q": second}} if second else {})
    assert battle_window(OrderedVerdict("q", "de", "A", "B", "a"), windows) == window
    assert battle_window(OrderedVerdict("q", "de", "B", "A", "a"), windows) == window


def _row(model: str, subset: str, rating: float, predicted: bool = False) -> dict:
    return {"model": model, "subset": subset, "rating": rating, "ci_low": rating - 0.5, "ci_high": rating + 0.5,
            "rank_low": 1, "rank_high": 2, "unbounded": None, "failed_queries": 0, "n_battles": 5,
            "predicted": predicted}


def test_the_window_tables_name_the_systems_without_a_cutoff() -> None:
    overall = [_row("A", "all", 0.2), _row("B", "all", 0.0), _row("C", "all", -0.2), _row("D", "all", 0.1),
               _row("P", "all", 0.3, predicted=True)]
    windows = [_row("A", "window:after_cutoff", -0.3), _row("B", "window:after_cutoff", 0.3)]
    lines = window_tables(windows, overall, {"A", "B", "D"})
    assert lines[1] == "window:after_cutoff: rated on the battles whose question is after_cutoff for both systems"
    assert [line.split()[:3] for line in lines[3:5]] == [["1", "B", "+0.300"], ["2", "A", "-0.300"]]
    # D has a cutoff but no battle in a window; P's rating is predicted, never judged: not listed
    assert lines[-1] == "no window ratings: C (unknown cutoff), D"
    assert window_tables([], overall, {"A"}) == []
