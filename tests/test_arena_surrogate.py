"""The surrogate judge on simulated arenas whose outcomes follow one feature: it must find it, never peek at a
held-out system, and place a system that was never judged between its neighbours."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tasks.arena.bradley_terry import Battle, tournaments
from tasks.arena.surrogate import feature_cube, leave_groups_out, surrogate

QUALITY = {"s0": -1.5, "s1": -0.9, "s2": -0.3, "s3": 0.3, "s4": 0.9, "s5": 1.5}


def _arena(seed: int = 0) -> tuple[list[Battle], list[tuple]]:
    """Two languages x 30 queries; battles follow QUALITY; citation MAP tracks it, the length feature is noise."""
    rng = np.random.default_rng(seed)
    battles, rows = [], []
    for lang in ("en", "de"):
        for q in range(30):
            query = f"{lang}{q}"
            for system, quality in QUALITY.items():
                rows.append((lang, query, system, "citation_map_at_10", 0.5 + 0.2 * quality + rng.normal(0, 0.05)))
                rows.append((lang, query, system, "extra_answer_chars", float(rng.integers(20, 400))))
            for a, b in itertools.permutations(QUALITY, 2):
                p = 1.0 / (1.0 + np.exp(QUALITY[b] - QUALITY[a]))
                battles.append(Battle(query, lang, a, b, "a" if rng.random() < p else "b"))
    return battles, rows


def test_the_surrogate_finds_the_feature_that_drives_the_judge() -> None:
    battles, rows = _arena()
    judged = [b for b in battles if "s6" not in (b.model_a, b.model_b)]
    # s6 has features only (never judged), between s3 and s4 in quality
    rows += [(lang, query, "s6", feature, value if feature == "extra_answer_chars"
              else 0.5 + 0.2 * 0.6) for lang, query, system, feature, value in rows if system == "s3"]
    result = surrogate(feature_cube(rows), tournaments(judged, bootstrap=30, seed=0), judged, seed=0)
    assert result["leave_systems_out"]["kendall_tau"] >= 0.6
    assert result["importances"]["citation_map_at_10"] > result["importances"]["extra_answer_chars"]
    assert result["pairwise"]["accuracy"] > 0.6 and result["pairwise"]["kendall_tau"] >= 0.6
    assert result["leave_languages_out"]["kendall_tau"] >= 0.6
    assert result["ablations"]["only_citation"] > result["ablations"]["only_extras"]
    s6 = result["predicted"]["s6"]
    assert s6["predicted"] and s6["ci_low"] <= s6["rating"] <= s6["ci_high"]
    assert list(result["predicted"]) == ["s6"]  # judged systems keep their judged ratings


def test_grouped_validation_never_trains_on_the_held_out_system() -> None:
    features = np.array([[0.0], [1.0], [2.0], [3.0]])
    targets = np.array([0.0, 1.0, 2.0, 3.0])
    systems = ["a", "b", "c", "d"]
    before = leave_groups_out(features, targets, systems, seed=0)["predicted"]
    shifted = targets.copy()
    shifted[2] = 100.0  # only c's own target changes: c's out-of-fold prediction must not move
    after = leave_groups_out(features, shifted, systems, seed=0)["predicted"]
    assert after[2] == pytest.approx(before[2])
    assert after[1] != pytest.approx(before[1])  # b's forest saw c's target, so b's prediction may move
