"""Bradley–Terry ratings from battle files: hand-computable fits, tie policies, intervals, rank groups, bad lines."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from flows.cli import app
from tasks.arena.bradley_terry import Battle, fit, ratings, weighted_battles
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
    assert set(printed) == {"models", "n_battles", "ties"} and (printed["n_battles"], printed["ties"]) == (220, 20)
    assert set(printed["models"]["A"]) == {"rating", "ci_low", "ci_high", "rank_low", "rank_high"}
    # half: 160 to 60 → the gap is about ln(8/3) (the bootstrap mean, so not exactly)
    gap = printed["models"]["A"]["rating"] - printed["models"]["B"]["rating"]
    assert gap == pytest.approx(math.log(8 / 3), abs=0.05)


def test_a_bad_line_is_named(tmp_path: Path) -> None:
    path = tmp_path / "battles.jsonl"
    path.write_text('{"query_id": "1", "model_a": "A", "model_b": "B", "winner": "a"}\n'
                    '{"query_id": "2", "model_a": "A", "model_b": "B", "winner": "A"}\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["score", "arena", "--battles", str(path), "--json"])
    assert result.exit_code == 2 and "battles.jsonl line 2: winner 'A' is not one of a, b, tie" in result.output
    with pytest.raises(ConfigError, match="no decisive battles"):
        ratings([Battle("1", "en", "A", "B", "tie")], ties="drop")
    assert np.isfinite(_fit(_battles("A", "B", 5, 0), "drop")["A"])  # a system that never loses stays finite


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
