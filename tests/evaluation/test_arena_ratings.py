"""Bradley–Terry ratings from battle files: hand-computable fits, tie policies, intervals, rank groups, bad lines."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from tasks.arena.bradley_terry import Battle, fit, rateable, ratings, tournaments, weighted_battles
from tasks.errors import ConfigError


def _battles(a: str, b: str, wins: int, losses: int, ties: int = 0, *, first_query: int = 0) -> list[Battle]:
    """``wins`` queries where a beats b, then ``losses`` where b wins, then ``ties``; one battle per query."""
    outcomes = ["a"] * wins + ["b"] * losses + ["tie"] * ties
    return [Battle(str(first_query + n), "en", a, b, winner) for n, winner in enumerate(outcomes)]


def _fit(battles: list[Battle], ties: str) -> dict[str, float]:
    rows = weighted_battles(battles, ties)  # type: ignore[arg-type]
    return dict(zip(rows.models, fit(len(rows.models), rows.winner, rows.loser, rows.weight), strict=True))


def test_two_systems_fit_the_log_odds_of_their_record_centred_on_zero() -> None:
    # 3 wins to 1: σ(β_A − β_B) = 3/4, so β_A − β_B = ln 3, and mean zero puts them at ±ln(3)/2
    beta = _fit(_battles("A", "B", 3, 1), "drop")
    assert beta["A"] == pytest.approx(math.log(3) / 2, abs=1e-4)
    assert beta["B"] == pytest.approx(-math.log(3) / 2, abs=1e-4)


def test_the_tie_policy_decides_what_a_tie_is_worth() -> None:
    battles = _battles("A", "B", 100, 50, 50)
    # drop: 100 to 50 → ln 2; half: 125 to 75 → ln(5/3)
    assert _fit(battles, "drop")["A"] * 2 == pytest.approx(math.log(2), abs=1e-4)
    assert _fit(battles, "half")["A"] * 2 == pytest.approx(math.log(5 / 3), abs=1e-4)


def test_three_systems_on_a_consistent_record_recover_their_logits() -> None:
    # records generated from β = (1, 0, −1) in expectation: P = σ(1) ≈ 0.731 for one step, σ(2) ≈ 0.881 for two.
    # With 1000 battles per pair the counts are exactly the expected ones rounded, so the MLE is close to β.
    battles = (_battles("A", "B", 731, 269) + _battles("B", "C", 731, 269, first_query=1000)
               + _battles("A", "C", 881, 119, first_query=2000))
    beta = _fit(battles, "drop")
    assert [beta["A"], beta["B"], beta["C"]] == pytest.approx([1.0, 0.0, -1.0], abs=0.01)


def test_intervals_resample_queries_and_equal_systems_share_a_rank_group() -> None:
    battles = (_battles("strong", "weak", 150, 50) + _battles("strong", "twin", 150, 50, first_query=200)
               + _battles("weak", "twin", 50, 50, first_query=400))
    result = ratings(battles, bootstrap=200, seed=0)
    models = result["models"]
    assert result["n_battles"] == 500 and result["ties"] == 0
    assert sum(m["rating"] for m in models.values()) == pytest.approx(0.0, abs=1e-9)
    strong = models["strong"]
    assert strong["ci_low"] < strong["rating"] < strong["ci_high"]
    assert (strong["rank_low"], strong["rank_high"]) == (1, 1)
    # weak and twin are equal on the record: the data cannot order them
    assert (models["weak"]["rank_low"], models["weak"]["rank_high"]) == (2, 3)
    assert (models["twin"]["rank_low"], models["twin"]["rank_high"]) == (2, 3)
    assert ratings(battles, bootstrap=200, seed=0) == result  # seeded
    assert ratings(battles, bootstrap=200, seed=1) != result


def test_the_command_reads_a_file_and_prints_the_documented_json(tmp_path: Path) -> None:
    path = tmp_path / "battles.jsonl"
    lines = [{"query_id": q.query_id, "lang": "de", "model_a": q.model_a, "model_b": q.model_b, "winner": q.winner}
             for q in _battles("A", "B", 150, 50, 20)]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["score", "arena", "--battles", str(path), "--bootstrap", "50", "--ties", "half",
                                      "--json"])
    assert result.exit_code == 0, result.output
    printed = json.loads(result.output)
    assert set(printed) == {"models", "n_battles", "ties", "order_flips", "judge"}
    assert (printed["n_battles"], printed["ties"], printed["order_flips"]) == (220, 20, 0)
    # each query judged in one order only: no pair to be consistent on (null); A, always shown first, won 150 of the
    # 200 decisive verdicts: 0.75
    assert printed["judge"] == {"judged_pairs": 0, "consistency": None, "decisive_verdicts": 200,
                                "first_position_rate": 0.75,
                                "order_flips": 0, "forfeits": 0, "no_verdict": 0}
    assert set(printed["models"]["A"]) == {"rating", "ci_low", "ci_high", "rank_low", "rank_high", "unbounded"}
    # half: 160 to 60 → the gap is the maximum-likelihood ln(8/3), not a bootstrap mean near it
    gap = printed["models"]["A"]["rating"] - printed["models"]["B"]["rating"]
    assert gap == pytest.approx(math.log(8 / 3), abs=1e-5)
    assert printed["models"]["A"]["unbounded"] is None


def test_the_command_shows_a_system_that_never_lost_as_unbounded(tmp_path: Path) -> None:
    """5–0: no finite maximum-likelihood rating exists for A; both outputs say so instead of a number."""
    path = tmp_path / "battles.jsonl"
    path.write_text("".join(json.dumps({"query_id": str(q), "lang": "de", "model_a": "A", "model_b": "B",
                                        "winner": "a"}) + "\n" for q in range(5)), encoding="utf-8")
    printed = CliRunner().invoke(app, ["score", "arena", "--battles", str(path), "--bootstrap", "20", "--json"])
    assert printed.exit_code == 0, printed.output
    models = json.loads(printed.output)["models"]
    assert (models["A"]["rating"], models["A"]["unbounded"]) == (None, "high")
    assert (models["B"]["rating"], models["B"]["unbounded"]) == (None, "low")
    readable = CliRunner().invoke(app, ["score", "arena", "--battles", str(path), "--bootstrap", "20"])
    assert readable.exit_code == 0, readable.output
    lines = readable.output.splitlines()
    assert lines[1].strip().startswith("judge consistency n/a over 0 pairs")  # one order per query: nothing to compare
    assert lines[2].split()[:2] == ["A", "+∞"] and lines[3].split()[:2] == ["B", "−∞"]  # best first


def test_a_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "battles.jsonl"
    path.write_text('{"query_id": "1", "model_a": "A", "model_b": "B", "winner": "a"}\n'
                    '{"query_id": "2", "model_a": "A", "model_b": "B", "winner": "A"}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["score", "arena", "--battles", str(path), "--json"])
    assert result.exit_code == 2 and "battles.jsonl line 2: winner 'A' is not one of a, b, tie" in result.output
    with pytest.raises(ConfigError, match="no decisive battles"):
        ratings([Battle("1", "en", "A", "B", "tie")], ties="drop")
    assert np.isfinite(_fit(_battles("A", "B", 5, 0), "drop")["A"])  # the arithmetic stays finite (see below)


def test_the_fit_matches_an_independent_maximisation_of_the_exact_likelihood() -> None:
    # raw battles, no deduplication, no ridge, Nelder–Mead on the plain log-likelihood with β_C pinned to 0
    from scipy.optimize import minimize

    battles = (_battles("A", "B", 7, 3, 2) + _battles("B", "C", 4, 5, first_query=20)
               + _battles("A", "C", 6, 2, 1, first_query=40) + _battles("C", "A", 1, 0, first_query=60))
    decisive = [(b.model_a, b.model_b) if b.winner == "a" else (b.model_b, b.model_a)
                for b in battles if b.winner != "tie"]
    index = {"A": 0, "B": 1, "C": 2}

    def negative_log_likelihood(free: np.ndarray) -> float:
        beta = np.array([free[0], free[1], 0.0])
        return sum(math.log1p(math.exp(-(beta[index[w]] - beta[index[l]]))) for w, l in decisive)

    free = minimize(negative_log_likelihood, np.zeros(2), method="Nelder-Mead",
                    options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 20000}).x
    independent = np.array([free[0], free[1], 0.0])
    independent -= independent.mean()
    ours = _fit(battles, "drop")
    assert [ours["A"], ours["B"], ours["C"]] == pytest.approx(list(independent), abs=1e-6)


def test_all_tournaments_fitted_at_once_each_reach_their_own_optimum() -> None:
    # 5 systems, every ordered pair a row; 12 weightings of the rows, as bootstrap tournaments give them: random
    # counts, one where system 0 never loses (only the ridge keeps it finite), one with half the rows weightless
    from scipy.optimize import minimize

    from tasks.arena.bradley_terry import RIDGE, fit_many

    rng = np.random.default_rng(3)
    n = 5
    winner, loser = np.array([(i, j) for i in range(n) for j in range(n) if i != j]).T
    weights = rng.poisson(4, size=(12, winner.size)).astype(float)
    weights[0, loser == 0] = 0.0
    weights[1, rng.random(winner.size) < 0.5] = 0.0
    logits = fit_many(n, winner, loser, weights)

    def objective(beta: np.ndarray, weight: np.ndarray) -> tuple[float, np.ndarray]:
        margin = beta[winner] - beta[loser]
        pull = weight / (1.0 + np.exp(margin))
        return (float(weight @ np.logaddexp(0.0, -margin)) + RIDGE / 2 * float(beta @ beta),
                RIDGE * beta + np.bincount(loser, pull, n) - np.bincount(winner, pull, n))

    for t, weight in enumerate(weights):
        # the objective is strictly convex: a zero gradient is its one optimum
        assert np.abs(objective(logits[t], weight)[1]).max() < 1e-8
        assert logits[t].sum() == pytest.approx(0.0, abs=1e-9)
        if t > 0:  # where every system wins and loses, a general-purpose solver finds the same logits
            other = minimize(objective, np.zeros(n), args=(weight,), jac=True, method="BFGS", options={"gtol": 1e-10}).x
            assert logits[t] == pytest.approx(other - other.mean(), abs=1e-6)
    assert logits[0, 0] > 8  # never lost: far ahead, yet finite


def test_the_rating_is_the_maximum_likelihood_fit_not_the_mean_of_the_tournaments() -> None:
    # 90 wins to 10 over 100 queries: the MLE gap is ln(90/10) = ln 9, so A = ln(9)/2 ≈ 1.0986. The logit of a
    # resampled share is convex above 1/2, so the tournaments' mean sits above it (by ≈ 0.02 here): the old rating
    battles = _battles("A", "B", 90, 10)
    mean_of_tournaments = tournaments(battles, bootstrap=1000, seed=0).logits[:, 0].mean()
    assert mean_of_tournaments - math.log(9) / 2 > 0.01
    rated = ratings(battles, bootstrap=1000, seed=0)["models"]["A"]
    assert rated["rating"] == pytest.approx(math.log(9) / 2, abs=1e-6)
    assert rated["ci_low"] < rated["rating"] < rated["ci_high"] and rated["unbounded"] is None


def test_a_system_that_never_loses_is_unbounded_not_a_ridge_made_number() -> None:
    two = ratings(_battles("A", "B", 5, 0), bootstrap=50)["models"]
    assert two["A"] == {"rating": None, "ci_low": None, "ci_high": None, "rank_low": 1, "rank_high": 1,
                        "unbounded": "high"}
    assert two["B"] == {"rating": None, "ci_low": None, "ci_high": None, "rank_low": 2, "rank_high": 2,
                        "unbounded": "low"}
    # A beats B and C every time; B and C share a record of 30 to 10 (every resample keeps both sides winning):
    # A is above them, B and C are rated among themselves: ±ln(3)/2, ranks 2 and 3 after A's 1
    three = ratings(_battles("A", "B", 20, 0) + _battles("A", "C", 20, 0, first_query=100)
                    + _battles("B", "C", 30, 10, first_query=200), bootstrap=100)["models"]
    assert (three["A"]["rating"], three["A"]["unbounded"], three["A"]["rank_low"], three["A"]["rank_high"]) == \
        (None, "high", 1, 1)
    assert three["B"]["rating"] == pytest.approx(math.log(3) / 2, abs=1e-5)
    assert three["C"]["rating"] == pytest.approx(-math.log(3) / 2, abs=1e-5)
    assert (three["B"]["rank_low"], three["C"]["rank_high"]) == (2, 3) and three["B"]["unbounded"] is None
    # a group that trades wins inside but never loses to the third: the group is rated, the third is below it
    group = ratings(_battles("A", "B", 3, 1) + _battles("A", "C", 4, 0, first_query=10)
                    + _battles("B", "C", 4, 0, first_query=20), bootstrap=50)["models"]
    assert group["A"]["rating"] == pytest.approx(math.log(3) / 2, abs=1e-5)
    assert (group["C"]["rating"], group["C"]["unbounded"], group["C"]["rank_low"]) == (None, "low", 3)


def test_an_interval_the_tournaments_leave_open_says_which_side() -> None:
    # 9 to 1 over 10 queries: a resample misses the one loss with probability 0.9^10 ≈ 0.35 > 2.5%, so the
    # interval is open above for A and below for B; the ratings are still the MLE ±ln(9)/2
    rated = ratings(_battles("A", "B", 9, 1), bootstrap=200)["models"]
    assert rated["A"]["rating"] == pytest.approx(math.log(9) / 2, abs=1e-5)
    assert (rated["A"]["ci_high"], rated["A"]["unbounded"]) == (None, "high") and rated["A"]["ci_low"] is not None
    assert (rated["B"]["ci_low"], rated["B"]["unbounded"]) == (None, "low")


def test_a_pair_whose_two_orders_pick_opposite_winners_is_a_tie() -> None:
    # q0, q1: A wins shown first and shown second (4 wins); q2: B wins in both orders (2 wins);
    # q3: the shown-first answer wins both times (A as A, then B as A): an order flip, so two ties
    def both(query: str, first: str, second: str) -> list[Battle]:
        return [Battle(query, "en", "A", "B", first), Battle(query, "en", "B", "A", second)]

    battles = both("q0", "a", "b") + both("q1", "a", "b") + both("q2", "b", "a") + both("q3", "a", "a")
    # drop: 4 to 2 → ln 2 (counting the flip as a win each, as before, gave 5 to 3 → ln(5/3));
    # half: 4 + 1 to 2 + 1 → ln(5/3)
    assert _fit(battles, "drop")["A"] * 2 == pytest.approx(math.log(2), abs=1e-5)
    assert _fit(battles, "half")["A"] * 2 == pytest.approx(math.log(5 / 3), abs=1e-5)
    result = ratings(battles, bootstrap=20, ties="half")
    assert (result["ties"], result["order_flips"]) == (0, 1)
    # nothing but a flip: no decisive battle left when ties are dropped, half a win each when they count
    assert not rateable(both("q3", "a", "a"), "drop") and rateable(both("q3", "a", "a"), "half")



#: x, y and z answered every query alike; w only knew the last one. The gold answers decide.
GOLD = ["Paris", "1889", "the Seine", "Gustave Eiffel", "330 m", "iron", "1887", "France", "72", "three", "Lyon",
        "the Rhine"]
SAME = GOLD[:11] + ["the Danube"]
ANSWERS = {"w": ["I do not know"] * 11 + ["the Rhine"], "x": SAME, "y": list(SAME), "z": list(SAME)}


def _answer_battles(path: Path) -> Path:
    """Every pair on every query in both orders, judged by the answers alone: the one with the gold answer wins, and
    two that both have it (or both miss it) tie — so x, y and z always tie, and each meets w alike."""
    def verdict(query: int, first: str, second: str) -> str:
        right = [GOLD[query] in answer for answer in (first, second)]
        return "tie" if right[0] == right[1] else "a" if right[0] else "b"

    lines = [{"query_id": f"q{q}", "lang": "en", "model_a": a, "model_b": b,
              "winner": verdict(q, ANSWERS[a][q], ANSWERS[b][q])}
             for q in range(12) for a in ANSWERS for b in ANSWERS if a != b]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("ties", ["drop", "half"])
def test_systems_with_identical_answers_share_one_rank(tmp_path: Path, ties: str) -> None:
    printed = CliRunner().invoke(app, ["score", "arena", "--battles", str(_answer_battles(tmp_path / "b.jsonl")),
                                       "--bootstrap", "200", "--ties", ties, "--json"])
    assert printed.exit_code == 0, printed.output
    models = json.loads(printed.output)["models"]
    # x, y, z are one system three times: one rating (to rounding), and no tournament puts one ahead of another.
    # w wins only q11: a tournament without it leaves w below them all; one with it rates w below them unless q11
    # is 6 or more of its 12 draws (probability ≈ 2e-4, far below the 2.5% that would move an interval end). So
    # nothing is ever ahead of the three: rank 1 for each, and w is 4th in every tournament
    assert models["x"]["rating"] == pytest.approx(models["y"]["rating"], abs=1e-9)
    assert models["x"]["rating"] == pytest.approx(models["z"]["rating"], abs=1e-9)
    assert [(models[s]["rank_low"], models[s]["rank_high"]) for s in "wxyz"] == [(4, 4), (1, 1), (1, 1), (1, 1)]


def test_hand_made_mirror_records_share_a_rank_and_twins_without_a_battle_between_them_too() -> None:
    # p and q have the same record against r (3 wins, 1 loss each) and split their own 2 to 2: equal ratings,
    # so one rank interval; r, below both in the fit, can rank anywhere in a resample
    battles = (_battles("p", "r", 3, 1) + _battles("q", "r", 3, 1, first_query=10)
               + _battles("p", "q", 2, 2, first_query=20))
    models = ratings(battles, bootstrap=200, seed=0)["models"]
    assert models["p"]["rating"] == pytest.approx(models["q"]["rating"], abs=1e-9)
    assert (models["p"]["rank_low"], models["p"]["rank_high"]) == (models["q"]["rank_low"], models["q"]["rank_high"])
    # w beats a, b and c every time, they beat v every time and only tie one another: with ties dropped a, b and c
    # never met decisively, so none has a finite rating; all three rank anywhere between w (1st) and v (5th): 2–4
    # (before, the first by name was rated 0 and ranked 2nd, the other two 1–5)
    quality = {"w": 2, "a": 1, "b": 1, "c": 1, "v": 0}
    battles = [Battle(str(n), "en", s, t, "a" if quality[s] > quality[t] else "b" if quality[t] > quality[s] else "tie")
               for n in range(10) for s in quality for t in quality if s != t]
    models = ratings(battles, bootstrap=50, ties="drop")["models"]
    assert {s: (m["unbounded"], m["rank_low"], m["rank_high"]) for s, m in models.items()} == {
        "w": ("high", 1, 1), "a": ("both", 2, 4), "b": ("both", 2, 4), "c": ("both", 2, 4), "v": ("low", 5, 5)}
