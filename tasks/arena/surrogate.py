"""The surrogate judge: predict the judge's leaderboard from cheap features, and say how well that works.

MIRAGE-BENCH's idea, so that new systems are placed without paying the judge: per bootstrap tournament a
random forest from the systems' mean features to that tournament's logits (a system with features but no
battles gets the forests' mean, their 2.5/97.5 percentiles as interval), validated only where
``MIN_VALIDATED`` systems have finite ratings, by folds that never split a system or a language.  Every
variant sees each feature's mean *and* its missing share — a gap is never filled with the other systems'
mean — and only over queries the judge saw; a system with an unbounded rating has no target and trains
nothing.

See ``docs/arena.md``, "Surrogate judge".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import kendalltau
from sklearn.ensemble import RandomForestRegressor
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import r2_score
from sklearn.model_selection import LeaveOneGroupOut

from tasks.arena.bradley_terry import Battle, Tournaments

GROUPS = {
    "language": ("target_language", "english_language"),
    "citation": ("citation_map_at_10", "citation_recall_at_10"),
    "support": ("support_entailment", "support_neutral"),
    "reranker": ("reranker_score",),
    "overlap": ("answer_bleu", "answer_rouge_l"),
    "llm": ("answer_overlap_score", "fluency_score"),
    "extras": ("extra_answer_chars", "extra_code_switching", "extra_refusal"),
}
TREES = 100
R2_BOOTSTRAP = 1000
#: systems with finite ratings that validation needs: with n systems, even the held-out predictions ordering them
#: exactly as the judge does (Kendall τ = 1) happens by chance with probability 2/n! (two-sided) — 0.017 for five,
#: 0.083 for four — so below five no R², τ or importance could tell a surrogate from luck
MIN_VALIDATED = 5
#: the report's entries that only validation fills
VALIDATION = ("leave_systems_out", "leave_languages_out", "pairwise", "importances", "ablations")


@dataclass(frozen=True)
class Ablation:
    """A feature set to validate: every feature but the ``groups`` (``only`` false), or the ``groups`` alone."""

    groups: tuple[str, ...]
    only: bool

    @property
    def name(self) -> str:
        return ("only_" if self.only else "without_") + "_and_".join(self.groups)

    def columns(self, features: Sequence[str]) -> list[int]:
        """The indices of ``features`` this ablation keeps."""
        named = {feature for group in self.groups for feature in GROUPS[group]}
        return [n for n, feature in enumerate(features) if (feature in named) == self.only]


#: each group without and alone (``only_llm``: the LLM grades alone), and the spec's "without language and support"
ABLATIONS = (*(Ablation((group,), only) for group in GROUPS for only in (False, True)),
             Ablation(("language", "support"), only=False))


@dataclass(frozen=True)
class FeatureCube:
    """``values[q, s, f]``: feature ``f`` of system ``s``'s response to query ``q`` (NaN where there is none)."""

    queries: tuple[tuple[str, str], ...]  # (lang, instance id)
    systems: tuple[str, ...]
    features: tuple[str, ...]
    values: np.ndarray

    def design(self, weights: np.ndarray | None = None, columns: Sequence[int] | None = None) -> np.ndarray:
        """Systems × (2 × features): each feature's mean over the (weighted) queries where the system has it (0
        where it has none), then each feature's missing indicator — the share of the weight it has no value on."""
        cube = self.values if columns is None else self.values[:, :, list(columns)]
        present = ~np.isnan(cube)
        w = np.ones(len(self.queries)) if weights is None else weights
        totals = np.einsum("q,qsf->sf", w, np.where(present, cube, 0.0))
        counts = np.einsum("q,qsf->sf", w, present.astype(float))
        means = np.divide(totals, counts, out=np.zeros_like(totals), where=counts > 0)
        weight = float(w.sum())
        missing = 1.0 - counts / weight if weight > 0 else np.ones_like(counts)
        return np.hstack([means, missing])

    def names(self, columns: Sequence[int] | None = None) -> list[str]:
        """The columns of :meth:`design`: the features, then ``<feature>:missing`` for each."""
        kept = [self.features[n] for n in (range(len(self.features)) if columns is None else columns)]
        return kept + [f"{feature}:missing" for feature in kept]

    def battle_row(self, query: int, system: int) -> np.ndarray:
        """One response's features (0 where missing) and missing indicators (0 or 1), as :meth:`design` orders them."""
        values = self.values[query, system]
        return np.concatenate([np.nan_to_num(values), np.isnan(values).astype(float)])


def feature_cube(rows: Sequence[tuple[str, str, str, str, float | None]]) -> FeatureCube:
    """From (lang, instance id, system, feature, value) rows."""
    queries = tuple(sorted({(lang, query) for lang, query, *_ in rows}))
    systems = tuple(sorted({row[2] for row in rows}))
    features = tuple(sorted({row[3] for row in rows}))
    index_q = {q: n for n, q in enumerate(queries)}
    index_s = {s: n for n, s in enumerate(systems)}
    index_f = {f: n for n, f in enumerate(features)}
    values = np.full((len(queries), len(systems), len(features)), np.nan)
    for lang, query, system, feature, value in rows:
        if value is not None:
            values[index_q[(lang, query)], index_s[system], index_f[feature]] = value
    return FeatureCube(queries, systems, features, values)


def _forest(seed: int) -> RandomForestRegressor:
    return RandomForestRegressor(n_estimators=TREES, random_state=seed, min_samples_leaf=1)


def _tau(predicted: Sequence[float], actual: Sequence[float]) -> float | None:
    if len(actual) < 2:
        return None
    value = kendalltau(predicted, actual).statistic
    return None if np.isnan(value) else float(value)


def leave_groups_out(features: np.ndarray, targets: np.ndarray, groups: Sequence[str], seed: int) -> dict[str, Any]:
    """R² (with its interval) and Kendall τ of out-of-group predictions (each group predicted by a forest that
    never saw it)."""
    predicted = np.zeros(len(targets))
    for train, test in LeaveOneGroupOut().split(features, targets, groups):
        predicted[test] = _forest(seed).fit(features[train], targets[train]).predict(features[test])
    # ratings that do not vary (a judge that ties everything) leave R² undefined: never scikit-learn's 1.0 or 0.0
    r2 = float(r2_score(targets, predicted)) if float(((targets - targets.mean()) ** 2).sum()) > 1e-12 else None
    return {"r2": r2, "r2_ci": r2_interval(targets, predicted, groups, seed),
            "kendall_tau": _tau(predicted, targets), "predicted": predicted.tolist()}


def r2_interval(targets: np.ndarray, predicted: np.ndarray, groups: Sequence[str], seed: int) -> list[float] | None:
    """The 2.5/97.5 percentiles of R² over seeded resamples of the groups (multinomial weights on their rows).

    A resample whose targets are all equal has no R² and is left out; None when every resample is such.
    """
    names = sorted(set(groups))
    draws = np.random.default_rng(seed).multinomial(len(names), np.full(len(names), 1.0 / len(names)),
                                                    size=R2_BOOTSTRAP)
    weights = draws[:, [names.index(group) for group in groups]]  # resamples × rows
    centre = (weights @ targets) / weights.sum(axis=1)
    residual = weights @ (targets - predicted) ** 2
    spread = (weights * (targets[None, :] - centre[:, None]) ** 2).sum(axis=1)
    defined = spread > 1e-12
    if not defined.any():
        return None
    return np.percentile(1.0 - residual[defined] / spread[defined], [2.5, 97.5]).tolist()


def surrogate(cube: FeatureCube, fitted: Tournaments, battles: Sequence[Battle],
              lang_ratings: dict[str, dict[str, float]], *, seed: int = 0) -> dict[str, Any]:
    """Everything the module notes describe, as one JSON-ready dict; ``lang_ratings[lang][system]`` are the judge's
    finite ratings within each language (the leave-languages-out targets).

    ``not_validated`` says in words why there is no validation (fewer than ``MIN_VALIDATED`` systems with finite
    ratings), None when there is; the validation's entries (``leave_systems_out``, ``leave_languages_out``,
    ``pairwise``, ``importances``, ``ablations``) are None without it.
    """
    judged = [s for s in fitted.models if s in cube.systems and np.isfinite(fitted.rating[fitted.models.index(s)])]
    rows = [cube.systems.index(s) for s in judged]
    columns = [fitted.models.index(s) for s in judged]
    query_of = {q: n for n, q in enumerate(cube.queries)}
    # the tournaments' query weights, on the cube's queries (queries without features weigh nothing)
    weights = np.zeros((len(fitted.draws), len(cube.queries)))
    arena = np.zeros(len(cube.queries))  # the judged sample itself: each arena query once
    for n, query in enumerate(fitted.queries):
        if query in query_of:
            weights[:, query_of[query]] = fitted.draws[:, n]
            arena[query_of[query]] = 1.0
    unjudged = [s for s in cube.systems if s not in fitted.models]
    predictions = []
    for t in range(len(fitted.draws)):
        targets = fitted.logits[t, columns]
        finite = np.isfinite(targets)
        if finite.sum() >= 2:  # a tournament that leaves fewer systems rated has nothing to learn
            design = cube.design(weights[t])
            forest = _forest(seed + t).fit(design[rows][finite], targets[finite])
            predictions.append(forest.predict(design))
    spread = np.array(predictions).reshape(len(predictions), len(cube.systems))
    predicted = {system: {"rating": float(spread[:, n].mean()),
                          "ci_low": float(np.percentile(spread[:, n], 2.5)),
                          "ci_high": float(np.percentile(spread[:, n], 97.5)), "predicted": True}
                 for n, system in enumerate(cube.systems) if system in unjudged and len(spread)}
    report = {"systems": judged, "features": list(cube.features),
              "unbounded": [s for s in fitted.models if s in cube.systems and s not in judged], "predicted": predicted}
    if len(judged) < MIN_VALIDATED:
        return report | {"not_validated": f"validation needs at least {MIN_VALIDATED} systems with finite ratings;"
                                          f" this run has {len(judged)}"} | dict.fromkeys(VALIDATION)
    overall = cube.design(arena)[rows]
    ratings = fitted.rating[columns]
    importances = _forest(seed).fit(overall, ratings).feature_importances_
    return report | {
        "not_validated": None,
        "leave_systems_out": leave_groups_out(overall, ratings, judged, seed),
        "leave_languages_out": leave_languages_out(cube, lang_ratings, seed, arena),
        "pairwise": _pairwise(cube, battles, judged, ratings, arena),
        "importances": dict(zip(cube.names(), importances.tolist(), strict=True)),
        "ablations": {ablation.name: _ablation(cube, ablation, rows, arena, ratings, judged, seed)
                      for ablation in ABLATIONS},
    }


def _ablation(cube: FeatureCube, ablation: Ablation, rows: list[int], arena: np.ndarray, ratings: np.ndarray,
              judged: list[str], seed: int) -> dict[str, Any]:
    """Leave-systems-out R² (with interval) on the ablation's features (with their missing indicators), or why it
    was not computed."""
    columns = ablation.columns(cube.features)
    kept = [cube.features[n] for n in columns]
    groups = " or ".join(ablation.groups)
    if not columns:
        reason = f"no {groups} feature was computed" if ablation.only else f"no feature outside {groups}"
        return {"features": kept, "r2": None, "r2_ci": None, "reason": reason}
    if len(columns) == len(cube.features):
        return {"features": kept, "r2": None, "r2_ci": None,
                "reason": f"no {groups} feature was computed: nothing removed"}
    result = leave_groups_out(cube.design(arena, columns)[rows], ratings, judged, seed)
    reason = None if result["r2"] is not None else "the judge's ratings do not vary, so R² is undefined"
    return {"features": kept, "r2": result["r2"], "r2_ci": result["r2_ci"], "reason": reason}


def leave_languages_out(cube: FeatureCube, lang_ratings: dict[str, dict[str, float]], seed: int,
                        arena: np.ndarray | None = None) -> dict[str, Any] | None:
    """(system, language) rows: features over the language's arena queries (``arena``: weights of the cube's
    queries, all of them by default), the system's rating in that language as target; None with fewer than two
    languages rated."""
    langs = sorted({lang for lang, _ in cube.queries} & set(lang_ratings))
    if len(langs) < 2:
        return None
    arena = np.ones(len(cube.queries)) if arena is None else arena
    features, targets, groups, cells = [], [], [], []
    for lang in langs:
        design = cube.design(arena * np.array([q[0] == lang for q in cube.queries], dtype=float))
        for system, rating in sorted(lang_ratings[lang].items()):
            if system in cube.systems:
                features.append(design[cube.systems.index(system)])
                targets.append(rating)
                groups.append(lang)
                cells.append([system, lang])
    result = leave_groups_out(np.array(features), np.array(targets), groups, seed)
    return result | {"rows": cells}


def _pairwise(cube: FeatureCube, battles: Sequence[Battle], judged: list[str], ratings: np.ndarray,
              arena: np.ndarray) -> dict[str, Any]:
    """Battles as feature differences (missing indicators included) → win; leave-systems-out accuracy and the τ
    of the implied scores."""
    query_of = {q: n for n, q in enumerate(cube.queries)}
    rows, wins, pairs = [], [], []
    for battle in battles:
        q = query_of.get((battle.lang, battle.query_id))
        if battle.winner == "tie" or q is None or battle.model_a not in judged or battle.model_b not in judged:
            continue
        a, b = cube.systems.index(battle.model_a), cube.systems.index(battle.model_b)
        rows.append(cube.battle_row(q, a) - cube.battle_row(q, b))
        wins.append(battle.winner == "a")
        pairs.append((battle.model_a, battle.model_b))
    if len(set(wins)) < 2:
        return {"battles": len(rows), "accuracy": None, "kendall_tau": None}
    features, outcome = np.array(rows), np.array(wins)
    design = cube.design(arena)
    correct = tested = 0
    scores = np.zeros(len(judged))
    for n, held_out in enumerate(judged):
        test = np.array([held_out in pair for pair in pairs])
        if test.all() or not test.any() or len(set(outcome[~test])) < 2:
            continue
        model = LogisticRegression(max_iter=1000).fit(features[~test], outcome[~test])
        correct += int((model.predict(features[test]) == outcome[test]).sum())
        tested += int(test.sum())
        scores[n] = float(design[cube.systems.index(held_out)] @ model.coef_[0])
    return {"battles": len(rows), "accuracy": correct / tested if tested else None,
            "kendall_tau": _tau(scores, ratings)}
