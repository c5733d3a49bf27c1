"""Bradley–Terry ratings from pairwise battles, with bootstrap intervals over queries and rank intervals.

P(i beats j) = σ(β_i − β_j); β is fitted by maximum likelihood (Newton's method on deduplicated, weighted
rows, many weightings at once: :func:`fit_many`) and centred to mean zero, natural-log scale.  The rating
is the fit on all battles; the bootstrap over queries only gives the intervals.  Ratings closer than
``TIE`` are equal (identical battles must share a rank, not be ordered by rounding).  Systems without a
finite maximum-likelihood rating (a group that never loses or never wins: :func:`unbounded_sides`) get
none: they are ranked above or below the rated core, and an interval end that the tournaments leave
infinite is open.

See ``docs/arena.md``, "Ratings".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np
from scipy import sparse, special
from scipy.sparse import csgraph

from tasks.errors import ConfigError
from tasks.json_lines import read_json_lines

Ties = Literal["drop", "half"]
RIDGE = 1e-6
GTOL = 1e-9  # a fit stops when no logit's gradient exceeds this
MAX_STEPS = 100
MAX_HALVINGS = 40
#: ratings closer than this are tied (:func:`ahead`): 1000 x GTOL, so a logit the fit leaves within GTOL / curvature
#: of its optimum (curvature: the sum of w·p(1−p) over its battles, above 1e-3 for any system with a battle that is
#: not a foregone conclusion) never separates from its twin, while a difference of 1e-6 in logits (a win
#: probability moved by 2.5e-7) is nothing any number of battles could show
TIE = 1e-6
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


def order_flips(battles: Sequence[Battle]) -> set[int]:
    """The positions of battles whose pair was judged on the same query in the other order too, each order once, with
    the verdicts picking opposite winners (each system won once, in the same position): both become ties."""
    by_order: dict[tuple[str, str, str, str], list[int]] = defaultdict(list)
    for n, battle in enumerate(battles):
        by_order[(battle.lang, battle.query_id, battle.model_a, battle.model_b)].append(n)
    flipped = set()
    for (lang, query, a, b), here in by_order.items():
        there = by_order.get((lang, query, b, a), [])
        if len(here) == 1 and len(there) == 1 and battles[here[0]].winner != "tie" \
                and battles[here[0]].winner == battles[there[0]].winner:  # "a" both times: the first shown won
            flipped.add(here[0])
    return flipped


def weighted_battles(battles: Sequence[Battle], ties: Ties) -> WeightedBattles:
    """The battles as weighted rows under the tie policy (order flips are ties); a query is its (language, query
    id)."""
    if ties not in get_args(Ties):
        raise ConfigError(f"ties policy {ties!r}: choose {' or '.join(get_args(Ties))}")
    models = tuple(sorted({b.model_a for b in battles} | {b.model_b for b in battles}))
    index = {model: n for n, model in enumerate(models)}
    queries = {key: n for n, key in enumerate(sorted({(b.lang, b.query_id) for b in battles}))}
    flipped = order_flips(battles)
    counts: dict[tuple[int, int, int], float] = defaultdict(float)
    for position, battle in enumerate(battles):
        query, a, b = queries[(battle.lang, battle.query_id)], index[battle.model_a], index[battle.model_b]
        winner = "tie" if position in flipped else battle.winner
        if winner == "a":
            counts[(query, a, b)] += 1.0
        elif winner == "b":
            counts[(query, b, a)] += 1.0
        elif ties == "half":
            counts[(query, a, b)] += 0.5
            counts[(query, b, a)] += 0.5
    rows = np.array(list(counts), dtype=np.int64).reshape(-1, 3)
    return WeightedBattles(models, rows[:, 1], rows[:, 2], np.fromiter(counts.values(), float, len(counts)), rows[:, 0],
                           len(queries))


def rateable(battles: Sequence[Battle], ties: Ties) -> bool:
    """Whether the battles leave anything to fit under the tie policy (order flips are ties)."""
    return bool(battles) and weighted_battles(battles, ties).weight.size > 0


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


Side = Literal["high", "low", "both"]
#: a logit that stands for an unbounded side: +∞ above, −∞ below, NaN (anywhere) for a system with no decisive battle
SIDE_LOGIT = {"high": np.inf, "low": -np.inf, "both": np.nan}


def unbounded_sides(beat: np.ndarray) -> tuple[list[Side | None], list[tuple[int, int] | None], int]:
    """Which systems have no finite maximum-likelihood rating (see the module notes), from ``beat[i, j]``: how
    much i won against j.  Returns each system's side (None: in the core), the rank band of each system outside
    the core (None for the core's) and the rank just above the core's first (the core ranks from there)."""
    n = len(beat)
    sides: list[Side | None] = [None] * n
    bands: list[tuple[int, int] | None] = [None] * n
    remaining = np.arange(n)
    top, bottom = 0, n  # ranks already given away at the top and the bottom
    while len(remaining) > 1:
        sub = beat[np.ix_(remaining, remaining)]
        count, labels = csgraph.connected_components(sparse.csr_matrix(sub > 0), directed=True, connection="strong")
        if count == 1:
            break
        sizes = np.bincount(labels)
        largest = np.flatnonzero(sizes == sizes.max())
        high, low, apart = [], [], []
        for component in range(count):
            inside = labels == component
            if len(largest) == 1 and component == largest[0]:
                continue  # the one largest group stays: the others are placed relative to it
            won, lost = sub[inside][:, ~inside].sum() > 0, sub[~inside][:, inside].sum() > 0
            if won != lost:
                (high if won else low).append(remaining[inside])
            elif not won:  # no decisive battle with the others (a group that wins and loses is in between)
                apart.append(remaining[inside])
        if not high and not low:  # the groups left never met decisively: the largest one, if one is, is the core;
            # several as large are all apart (preferring one, by name say, would split systems with identical battles)
            for group in apart:  # below every group peeled off above, above every one peeled off below
                for system in group:
                    sides[system], bands[system] = "both", (top + 1, bottom)
            break
        for group in high:
            for system in group:
                sides[system], bands[system] = "high", (top + 1, top + sum(map(len, high)))
        for group in low:
            for system in group:
                sides[system], bands[system] = "low", (bottom - sum(map(len, low)) + 1, bottom)
        top, bottom = top + sum(map(len, high)), bottom - sum(map(len, low))
        remaining = np.setdiff1d(remaining, np.concatenate(high + low))
    return sides, bands, top


def _beat_matrices(n_models: int, winner: np.ndarray, loser: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``beat[t, i, j]``: how much i won against j under weighting t (rows may repeat a pair)."""
    beat = np.zeros((len(weights), n_models, n_models))
    np.add.at(beat, (slice(None), winner, loser), weights)
    return beat


@dataclass(frozen=True)
class Tournaments:
    """The fit and its bootstrap over the systems ``models``.

    ``rating``: the maximum-likelihood logits on all battles (NaN outside the core); ``sides``: each system's
    unbounded side on all battles (None in the core); ``bands``: the rank band of a system outside the core;
    ``draws[t, q]``: how often query ``q`` (of ``queries``, as (lang, query_id)) is in tournament ``t``;
    ``logits[t]``: the systems' logits in it — ±∞ for a system unbounded above/below there, NaN where it had
    nothing decisive, the finite ones centred over the tournament's finite systems.
    """

    models: tuple[str, ...]
    queries: tuple[tuple[str, str], ...]
    draws: np.ndarray
    logits: np.ndarray
    rating: np.ndarray
    sides: tuple[Side | None, ...]
    bands: tuple[tuple[int, int] | None, ...]
    core_top: int  # the core's ranks start after this many systems unbounded above it


def _tournament_logits(fitted: np.ndarray, beat: np.ndarray) -> np.ndarray:
    """One tournament's core logits: ±∞ / NaN where its battles leave a system unbounded, the rest re-centred."""
    sides, _, _ = unbounded_sides(beat)
    logits = fitted.copy()
    for system, side in enumerate(sides):
        logits[system] = SIDE_LOGIT.get(side, logits[system])
    finite = np.isfinite(logits)
    if finite.any():
        logits[finite] -= logits[finite].mean()
    return logits


def tournaments(battles: Sequence[Battle], *, bootstrap: int = 200, seed: int = 0, ties: Ties = "drop") -> Tournaments:
    """Fit the battles and every bootstrap tournament (see the module notes)."""
    if bootstrap < 1:
        raise ConfigError(f"--bootstrap must be at least 1, got {bootstrap}")
    rows = weighted_battles(battles, ties)
    n_models = len(rows.models)
    if rows.weight.size == 0:
        raise ConfigError("no decisive battles to rate (every battle was a tie and ties are dropped)")
    sides, bands, top = unbounded_sides(_beat_matrices(n_models, rows.winner, rows.loser, rows.weight[None, :])[0])
    core = np.array([n for n, side in enumerate(sides) if side is None], dtype=np.int64)
    position = np.full(n_models, -1)
    position[core] = np.arange(len(core))
    kept = (position[rows.winner] >= 0) & (position[rows.loser] >= 0)  # battles inside the core
    winner, loser, weight, query = (position[rows.winner[kept]], position[rows.loser[kept]], rows.weight[kept],
                                    rows.query[kept])
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(rows.n_queries, np.full(rows.n_queries, 1.0 / rows.n_queries), size=bootstrap)
    rating = np.full(n_models, np.nan)
    logits = np.full((bootstrap, n_models), np.nan)
    for system, side in enumerate(sides):
        if side is not None:
            logits[:, system] = SIDE_LOGIT[side]
    if len(core) == 1:
        rating[core] = logits[:, core] = 0.0
    elif len(core) > 1:
        full = fit(len(core), winner, loser, weight)
        rating[core] = full
        pairs, pair_of_row = np.unique(np.stack([winner, loser], axis=1), axis=0, return_inverse=True)
        to_pairs = sparse.csr_matrix((np.ones(pair_of_row.size), (np.arange(pair_of_row.size), pair_of_row.ravel())),
                                     shape=(pair_of_row.size, len(pairs)))
        pair_weights = np.asarray(to_pairs.T @ (weight[:, None] * draws[:, query].T)).T  # tournaments × pairs
        fitted = fit_many(len(core), pairs[:, 0], pairs[:, 1], pair_weights, start=full)
        beats = _beat_matrices(len(core), pairs[:, 0], pairs[:, 1], pair_weights)
        logits[:, core] = [_tournament_logits(fitted[t], beats[t]) for t in range(bootstrap)]
    queries = tuple(sorted({(b.lang, b.query_id) for b in battles}))
    return Tournaments(rows.models, queries, draws, logits, rating, tuple(sides), tuple(bands), top)


def ahead(x: Any, y: Any) -> Any:
    """Whether rating ``x`` is ahead of ``y`` by more than ``TIE`` (elementwise for arrays); an infinite rating is
    ahead of every finite one and tied with its equal."""
    return x > y + TIE


def _percentile(values: np.ndarray, q: float) -> np.ndarray:
    """Column percentiles of values that may be ±∞: a percentile that falls between a finite value and an infinite
    one is infinite (linear interpolation toward infinity reaches it)."""
    finite = np.where(np.isfinite(values), values, np.nan)
    big = np.nanmax(np.abs(finite)) * 4 + 1.0 if np.isfinite(finite).any() else 1.0
    result = np.percentile(np.clip(values, -big, big), q, axis=0)
    return np.where(result >= big, np.inf, np.where(result <= -big, -np.inf, result))


def _bound(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def ratings(battles: Sequence[Battle], *, bootstrap: int = 200, seed: int = 0, ties: Ties = "drop") -> dict[str, Any]:
    """``{"models": {name: {rating, ci_low, ci_high, rank_low, rank_high, unbounded}}, "n_battles", "ties",
    "order_flips"}``.

    ``rating`` is the maximum-likelihood logit on all battles; None (with ``ci_low`` and ``ci_high``) for a
    system outside the core, whose side ``unbounded`` gives.  For a system in the core, an interval end that the
    tournaments leave open is None and ``unbounded`` names that side ("high", "low" or "both"); else None.
    ``ties`` counts the battles judged a tie, ``order_flips`` the pairs whose two orders disagreed (each counted
    as two ties under the policy).
    """
    fitted = tournaments(battles, bootstrap=bootstrap, seed=seed, ties=ties)
    logits = fitted.logits
    # NaN (nothing decisive in that tournament) is anywhere: −∞ where it helps its rivals, +∞ where it helps itself
    optimistic, pessimistic = np.where(np.isnan(logits), np.inf, logits), np.where(np.isnan(logits), -np.inf, logits)
    core = [n for n, side in enumerate(fitted.sides) if side is None]
    # rank 1 = best: one plus the number of systems ahead in that tournament (by more than TIE), within the core
    best = 1 + ahead(pessimistic[:, None, core], optimistic[:, core, None]).sum(axis=2)
    worst = 1 + ahead(optimistic[:, None, core], pessimistic[:, core, None]).sum(axis=2) \
        - ahead(optimistic[:, core], pessimistic[:, core])  # not ahead of itself
    low, high = _percentile(pessimistic, 2.5), _percentile(optimistic, 97.5)
    rank_low, rank_high = np.percentile(best, 2.5, axis=0), np.percentile(worst, 97.5, axis=0)
    models = {}
    for m, model in enumerate(fitted.models):
        band = fitted.bands[m]
        if band is None:
            c = core.index(m)
            band = (fitted.core_top + int(np.floor(rank_low[c])), fitted.core_top + int(np.ceil(rank_high[c])))
            ends = (np.isfinite(low[m]), np.isfinite(high[m]))
            side = {(True, True): None, (True, False): "high", (False, True): "low"}.get(ends, "both")
            models[model] = {"rating": float(fitted.rating[m]), "ci_low": _bound(low[m]), "ci_high": _bound(high[m])}
        else:
            side = fitted.sides[m]
            models[model] = {"rating": None, "ci_low": None, "ci_high": None}
        models[model] |= {"rank_low": band[0], "rank_high": band[1], "unbounded": side}
    return {"models": models, "n_battles": len(battles), "ties": sum(b.winner == "tie" for b in battles),
            "order_flips": len(order_flips(battles)) // 2}
