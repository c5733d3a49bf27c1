"""Bradley–Terry ratings from pairwise battles, with bootstrap intervals over queries and rank intervals.

P(i beats j) = σ(β_i − β_j).  The logits β are fitted by maximum likelihood
on *deduplicated, weighted* battles — one row per (query, winner, loser)
with its count — and centred to mean zero, on the natural-log scale.  A
vanishing ridge (``RIDGE``) keeps the fit finite when a system never loses
in a sample; it moves no rating by more than about 1e-5 on data where every
system wins and loses.  The fit is Newton's method (the iteratively
reweighted least squares of logistic regression) run on many weightings of
the same rows at once (:func:`fit_many`): the objective is smooth and
strictly convex, so from a warm start a handful of steps reach the optimum to
machine precision, and each step is a few array operations and one batched
solve of n × n systems for all weightings together.

Ties follow an explicit policy: ``drop`` ignores them, ``half`` counts a tie
as half a win for each side.

Intervals come from a seeded bootstrap of tournaments that resamples the
*queries* (a query's battles move together): each tournament reweights the
same rows by multinomial counts of their queries — all tournaments at once,
one sparse product from (tournament × row) weights to (tournament × ordered
pair) weights — and all tournaments are refitted together on the ordered
pairs alone (at most n(n−1) rows, whatever the number of battles),
warm-started from the full fit.  As in
MIRAGE-BENCH, a rating is the mean of the tournaments' logits and its 95%
interval their 2.5/97.5 percentiles; the rank interval is the 2.5/97.5
percentiles of the system's rank (1 = best; a system ranks below those
strictly ahead of it) over the tournaments — overlapping rank intervals are
systems the data cannot order.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy import sparse, special

from tasks.errors import ConfigError
from tasks.json_lines import read_json_lines

Ties = Literal["drop", "half"]
RIDGE = 1e-6
GTOL = 1e-9  # a fit stops when no logit's gradient exceeds this
MAX_STEPS = 100
MAX_HALVINGS = 40
WINNERS = ("a", "b", "tie")


@dataclass(frozen=True)
class Battle:
    """One judged comparison of two systems' answers to one query."""

    query_id: str
    lang: str
    model_a: str
    model_b: str
    winner: str  # a | b | tie


@dataclass(frozen=True)
class WeightedBattles:
    """Deduplicated battles: row r says ``winner[r]`` beat ``loser[r]`` ``weight[r]`` times on query ``query[r]``."""

    models: tuple[str, ...]
    winner: np.ndarray
    loser: np.ndarray
    weight: np.ndarray
    query: np.ndarray
    n_queries: int


def read_battles(path: Path) -> list[Battle]:
    """Every line of a battles file, checked; a bad line is an error naming it."""
    battles = []
    for number, record in read_json_lines(path, "battle"):
        where = f"{path} line {number}"
        for key in ("query_id", "model_a", "model_b", "winner"):
            if not isinstance(record.get(key), (str, int)) or isinstance(record.get(key), bool) \
                    or not str(record[key]).strip():
                raise ConfigError(f"{where}: {key} must be a non-empty string")
        if record["winner"] not in WINNERS:
            raise ConfigError(f"{where}: winner {record['winner']!r} is not one of a, b, tie")
        if record["model_a"] == record["model_b"]:
            raise ConfigError(f"{where}: a system cannot battle itself ({record['model_a']})")
        battles.append(Battle(str(record["query_id"]), str(record.get("lang") or ""), str(record["model_a"]),
                              str(record["model_b"]), record["winner"]))
    if not battles:
        raise ConfigError(f"{path}: no battles")
    return battles


def weighted_battles(battles: Sequence[Battle], ties: Ties) -> WeightedBattles:
    """The battles as weighted rows under the tie policy; a query is its (language, query id)."""
    if ties not in ("drop", "half"):
        raise ConfigError(f"ties policy {ties!r}: choose drop or half")
    models = tuple(sorted({b.model_a for b in battles} | {b.model_b for b in battles}))
    index = {model: n for n, model in enumerate(models)}
    queries = {key: n for n, key in enumerate(sorted({(b.lang, b.query_id) for b in battles}))}
    counts: dict[tuple[int, int, int], float] = defaultdict(float)
    for battle in battles:
        query, a, b = queries[(battle.lang, battle.query_id)], index[battle.model_a], index[battle.model_b]
        if battle.winner == "a":
            counts[(query, a, b)] += 1.0
        elif battle.winner == "b":
            counts[(query, b, a)] += 1.0
        elif ties == "half":
            counts[(query, a, b)] += 0.5
            counts[(query, b, a)] += 0.5
    rows = np.array(list(counts), dtype=np.int64).reshape(-1, 3)
    return WeightedBattles(models, rows[:, 1], rows[:, 2], np.fromiter(counts.values(), float, len(counts)), rows[:, 0],
                           len(queries))


def fit(n_models: int, winner: np.ndarray, loser: np.ndarray, weight: np.ndarray,
        start: np.ndarray | None = None) -> np.ndarray:
    """Maximum-likelihood logits (mean zero) of weighted battle rows."""
    return fit_many(n_models, winner, loser, weight[None, :], start)[0]


def fit_many(n_models: int, winner: np.ndarray, loser: np.ndarray, weights: np.ndarray,
             start: np.ndarray | None = None) -> np.ndarray:
    """``logits[t]``: the maximum-likelihood logits (mean zero) of the rows (``winner[r]`` beat ``loser[r]``)
    weighted by ``weights[t]``, for every weighting t at once.

    Newton's method on the ridge-penalised negative log-likelihood of every
    weighting together.  Its Hessian is singular only along the all-ones
    direction (adding a constant to every logit changes no probability),
    where the ridge alone curves it; the steps solve with ``11ᵀ`` added,
    which changes nothing else and keeps mean-zero logits mean-zero.  A step
    that would not lower a weighting's objective is halved until it does,
    and a weighting stops once its gradient is below ``GTOL``.
    """
    weights = np.asarray(weights, dtype=float)
    count, rows = weights.shape
    n = n_models
    beta = (np.zeros((count, n)) if start is None
            else np.tile(np.asarray(start, dtype=float) - np.mean(start), (count, 1)))
    incidence = sparse.csr_matrix((np.repeat([1.0, -1.0], rows),
                                   (np.tile(np.arange(rows), 2), np.concatenate([winner, loser]))), shape=(rows, n))
    # a row of curvature c adds c to the Hessian at (w, w) and (l, l) and subtracts it at (w, l) and (l, w)
    cells = sparse.csr_matrix((np.repeat([1.0, 1.0, -1.0, -1.0], rows),
                               (np.tile(np.arange(rows), 4),
                                np.concatenate([winner * n + winner, loser * n + loser,
                                                winner * n + loser, loser * n + winner]))), shape=(rows, n * n))
    shift = RIDGE * np.eye(n) + np.ones((n, n))

    def objective(beta: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each weighting's objective at its logits, and the margins β_winner − β_loser of every row."""
        margins = np.asarray(incidence @ beta.T).T
        return (weights * np.logaddexp(0.0, -margins)).sum(axis=1) + 0.5 * RIDGE * (beta * beta).sum(axis=1), margins

    value, margins = objective(beta, weights)
    active = np.arange(count)  # the weightings still moving
    for _ in range(MAX_STEPS):
        chosen = weights[active]
        lost = special.expit(-margins)  # 1 − σ(margin), without the cancellation of computing it so
        gradient = RIDGE * beta[active] - np.asarray(incidence.T @ (chosen * lost).T).T
        open_ = np.abs(gradient).max(axis=1) > GTOL
        if not open_.any():
            break
        active, chosen, gradient, margins, lost = (active[open_], chosen[open_], gradient[open_], margins[open_],
                                                   lost[open_])
        curvature = chosen * special.expit(margins) * lost
        hessian = np.asarray(cells.T @ curvature.T).T.reshape(-1, n, n) + shift
        step = -np.linalg.solve(hessian, gradient[:, :, None])[:, :, 0]
        scale = np.ones(len(active))
        for _halving in range(MAX_HALVINGS):
            trial = beta[active] + scale[:, None] * step
            trial_value, trial_margins = objective(trial, chosen)
            worse = trial_value > value[active]
            if not worse.any():
                break
            scale[worse] /= 2.0
        # a step no halving makes better is below the objective's rounding: that weighting is at its optimum
        moving = ~worse
        beta[active[moving]] = trial[moving]
        value[active[moving]] = trial_value[moving]
        active, margins = active[moving], trial_margins[moving]
        if not len(active):
            break
    return beta - beta.mean(axis=1, keepdims=True)


@dataclass(frozen=True)
class Tournaments:
    """The bootstrap: ``draws[t, q]`` is how often query ``q`` (of ``queries``, as (lang, query_id)) is in
    tournament ``t``, and ``logits[t]`` the systems' fitted logits (order of ``models``) in it."""

    models: tuple[str, ...]
    queries: tuple[tuple[str, str], ...]
    draws: np.ndarray
    logits: np.ndarray


def tournaments(battles: Sequence[Battle], *, bootstrap: int = 200, seed: int = 0, ties: Ties = "drop") -> Tournaments:
    """Fit every bootstrap tournament (see the module notes)."""
    if bootstrap < 1:
        raise ConfigError(f"--bootstrap must be at least 1, got {bootstrap}")
    rows = weighted_battles(battles, ties)
    n_models = len(rows.models)
    if rows.weight.size == 0:
        raise ConfigError("no decisive battles to rate (every battle was a tie and ties are dropped)")
    full = fit(n_models, rows.winner, rows.loser, rows.weight)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(rows.n_queries, np.full(rows.n_queries, 1.0 / rows.n_queries), size=bootstrap)
    pairs, pair_of_row = np.unique(np.stack([rows.winner, rows.loser], axis=1), axis=0, return_inverse=True)
    to_pairs = sparse.csr_matrix((np.ones(pair_of_row.size), (np.arange(pair_of_row.size), pair_of_row.ravel())),
                                 shape=(pair_of_row.size, len(pairs)))
    pair_weights = np.asarray(to_pairs.T @ (rows.weight[:, None] * draws[:, rows.query].T)).T  # tournaments × pairs
    logits = fit_many(n_models, pairs[:, 0], pairs[:, 1], pair_weights, start=full)
    queries = tuple(sorted({(b.lang, b.query_id) for b in battles}))
    return Tournaments(rows.models, queries, draws, logits)


def ratings(battles: Sequence[Battle], *, bootstrap: int = 200, seed: int = 0, ties: Ties = "drop") -> dict[str, Any]:
    """``{"models": {name: {rating, ci_low, ci_high, rank_low, rank_high}}, "n_battles", "ties"}``."""
    fitted = tournaments(battles, bootstrap=bootstrap, seed=seed, ties=ties)
    logits = fitted.logits
    # rank 1 = best: one plus the number of systems strictly ahead in that tournament
    ranks = 1 + (logits[:, None, :] > logits[:, :, None]).sum(axis=2)
    low, high = np.percentile(logits, [2.5, 97.5], axis=0)
    rank_low, rank_high = np.percentile(ranks, [2.5, 97.5], axis=0)
    return {
        "models": {model: {"rating": float(logits[:, m].mean()), "ci_low": float(low[m]), "ci_high": float(high[m]),
                           "rank_low": int(np.floor(rank_low[m])), "rank_high": int(np.ceil(rank_high[m]))}
                   for m, model in enumerate(fitted.models)},
        "n_battles": len(battles),
        "ties": sum(b.winner == "tie" for b in battles),
    }
