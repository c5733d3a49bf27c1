"""The surrogate judge on simulated arenas whose outcomes follow one feature: it must find it, never peek at a
held-out system, and place a system that was never judged between its neighbours."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from tasks.arena.bradley_terry import Battle, ratings, tournaments
from tasks.arena.surrogate import (
    ABLATIONS,
    VALIDATION,
    feature_cube,
    leave_groups_out,
    leave_languages_out,
    r2_interval,
    surrogate,
)

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


def _lang_ratings(battles: list[Battle]) -> dict[str, dict[str, float]]:
    """The judge's ratings within each language, as the ratings stage stores them."""
    return {lang: {system: m["rating"] for system, m in ratings(
        [b for b in battles if b.lang == lang], bootstrap=30, seed=0)["models"].items()} for lang in ("en", "de")}


def test_the_surrogate_finds_the_feature_that_drives_the_judge() -> None:
    battles, rows = _arena()
    judged = [b for b in battles if "s6" not in (b.model_a, b.model_b)]
    # s6 has features only (never judged), between s3 and s4 in quality
    rows += [(lang, query, "s6", feature, value if feature == "extra_answer_chars"
              else 0.5 + 0.2 * 0.6) for lang, query, system, feature, value in rows if system == "s3"]
    result = surrogate(feature_cube(rows), tournaments(judged, bootstrap=30, seed=0), judged, _lang_ratings(judged),
                       seed=0)
    loso = result["leave_systems_out"]
    assert loso["kendall_tau"] >= 0.6 and loso["r2_ci"][0] <= loso["r2_ci"][1] <= 1.0
    assert result["importances"]["citation_map_at_10"] > result["importances"]["extra_answer_chars"]
    assert result["pairwise"]["accuracy"] > 0.6 and result["pairwise"]["kendall_tau"] >= 0.6
    assert result["leave_languages_out"]["kendall_tau"] >= 0.6
    ablations = result["ablations"]
    assert ablations["only_citation"]["r2"] > ablations["only_extras"]["r2"]
    # every ablation is reported; those the computed features cannot make say why
    assert list(ablations) == [ablation.name for ablation in ABLATIONS]
    assert ablations["only_llm"] == {"features": [], "r2": None, "r2_ci": None,
                                     "reason": "no llm feature was computed"}
    assert ablations["without_language_and_support"]["r2"] is None
    assert ablations["without_language_and_support"]["reason"] == \
        "no language or support feature was computed: nothing removed"
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


ALL_FEATURES = ("target_language", "english_language", "citation_map_at_10", "citation_recall_at_10",
              "support_entailment", "support_neutral", "reranker_score", "answer_bleu", "answer_rouge_l",
              "answer_overlap_score", "fluency_score", "extra_answer_chars", "extra_code_switching", "extra_refusal")


def test_the_spec_ablations_use_the_feature_sets_it_names() -> None:
    """MIRAGE-BENCH: dropping language detection and support features; the LLM features alone."""
    battles, _ = _arena()
    rng = np.random.default_rng(1)
    rows = [(lang, f"{lang}{q}", system, feature, float(rng.random()))
            for lang in ("en", "de") for q in range(30) for system in QUALITY for feature in ALL_FEATURES]
    result = surrogate(feature_cube(rows), tournaments(battles, bootstrap=10, seed=0), battles,
                       _lang_ratings(battles), seed=0)
    ablations = result["ablations"]
    assert sorted(ablations["without_language_and_support"]["features"]) == sorted([
        "citation_map_at_10", "citation_recall_at_10", "reranker_score", "answer_bleu", "answer_rouge_l",
        "answer_overlap_score", "fluency_score", "extra_answer_chars", "extra_code_switching", "extra_refusal"])
    assert sorted(ablations["only_llm"]["features"]) == ["answer_overlap_score", "fluency_score"]
    assert ablations["only_reranker"]["features"] == ["reranker_score"]
    assert sorted(ablations["only_support"]["features"]) == ["support_entailment", "support_neutral"]
    assert len(ablations["without_support"]["features"]) == len(ALL_FEATURES) - 2
    assert all(a["r2"] is not None and a["reason"] is None for a in ablations.values())


def test_leave_languages_out_predicts_each_languages_own_ratings_without_seeing_them() -> None:
    """The systems' order flips between languages and a feature follows each language's order: per-language
    targets make that learnable (overall ratings would be flat), and a held-out language's ratings never train."""
    systems = [f"s{n}" for n in range(6)]
    lang_ratings = {"en": {s: -1.0 + 0.4 * n for n, s in enumerate(systems)},
                    "de": {s: 1.0 - 0.4 * n for n, s in enumerate(systems)}}
    rng = np.random.default_rng(0)
    rows = [(lang, f"{lang}{q}", system, "citation_map_at_10", lang_ratings[lang][system] + rng.normal(0, 0.01))
            for lang in lang_ratings for q in range(10) for system in systems]
    cube = feature_cube(rows)
    result = leave_languages_out(cube, lang_ratings, seed=0)
    assert result["rows"] == [[s, "de"] for s in systems] + [[s, "en"] for s in systems]
    assert result["r2"] > 0.8 and result["kendall_tau"] > 0.8
    shifted = {"en": lang_ratings["en"], "de": {s: r + 5.0 * (s == "s2") for s, r in lang_ratings["de"].items()}}
    moved = leave_languages_out(cube, shifted, seed=0)
    assert moved["predicted"][:6] == pytest.approx(result["predicted"][:6])  # de, held out: never saw its ratings
    assert moved["predicted"][6:] != pytest.approx(result["predicted"][6:])  # en's forest trained on de
    assert leave_languages_out(cube, {"en": lang_ratings["en"]}, seed=0) is None  # one language: nothing to hold out


def test_r2_interval_over_resampled_groups() -> None:
    targets, predicted = np.array([0.0, 1.0]), np.array([0.25, 0.5])
    # resamples {a, a} and {b, b} have constant targets (no R²); {a, b} gives 1 - (0.0625 + 0.25) / 0.5 = 0.375
    assert r2_interval(targets, predicted, ["a", "b"], seed=0) == pytest.approx([0.375, 0.375])
    assert r2_interval(np.array([0.0, 1.0, 3.0]), np.array([0.0, 1.0, 3.0]), ["a", "b", "c"], seed=0) == [1.0, 1.0]
    assert r2_interval(np.array([2.0, 2.0]), np.array([1.0, 3.0]), ["a", "b"], seed=0) is None


def test_r2_is_undefined_when_the_judge_s_ratings_do_not_vary() -> None:
    # a judge that ties every pair rates all systems 0: scikit-learn would call a constant prediction R² 1.0
    features = np.array([[0.1], [0.5], [0.9]])
    result = leave_groups_out(features, np.zeros(3), ["a", "b", "c"], seed=0)
    assert (result["r2"], result["r2_ci"]) == (None, None)


def test_a_missing_feature_is_zero_with_a_missing_indicator_never_the_other_systems_mean() -> None:
    import warnings

    from tasks.arena.surrogate import FeatureCube

    nan = float("nan")
    # 2 queries × 3 systems × 2 features; system c never has feature 0, b lacks it on query 2, nobody has feature 1
    values = np.array([[[1.0, nan], [3.0, nan], [nan, nan]],
                       [[2.0, nan], [nan, nan], [nan, nan]]])
    cube = FeatureCube((("en", "1"), ("en", "2")), ("a", "b", "c"), ("f0", "f1"), values)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        design = cube.design()
        weighted = cube.design(np.array([3.0, 1.0]))
    assert cube.names() == ["f0", "f1", "f0:missing", "f1:missing"]
    # a: (1 + 2) / 2 and never missing; b: 3 over the query it has, missing on 1 of 2; c: 0, missing on both
    # (the old surrogate gave c the mean of a's and b's, (1.5 + 3) / 2 = 2.25, as if it had answered)
    assert design.tolist() == [[1.5, 0.0, 0.0, 1.0], [3.0, 0.0, 0.5, 1.0], [0.0, 0.0, 1.0, 1.0]]
    # weights 3 and 1: a (3·1 + 2) / 4; b 3, missing on 1 of 4 weight
    assert weighted[:, 0].tolist() == [1.25, 3.0, 0.0] and weighted[:, 2].tolist() == [0.0, 0.25, 1.0]
    # one battle's row (the pairwise variant): the value 0 and the indicator 1 where the response has none
    assert cube.battle_row(1, 1).tolist() == [0.0, 0.0, 1.0, 1.0]
    assert cube.battle_row(0, 0).tolist() == [1.0, 0.0, 0.0, 1.0]


def test_validation_reads_the_features_of_the_judged_queries_only() -> None:
    # the same arena, once with the features of 30 more queries per language that the judge never saw, whose
    # citation MAP runs against the judge's order: validation and predictions must not move
    battles, rows = _arena()
    rng = np.random.default_rng(5)
    unseen = [(lang, f"unseen{lang}{q}", system, "citation_map_at_10", 0.5 - 0.2 * quality + rng.normal(0, 0.05))
              for lang in ("en", "de") for q in range(30) for system, quality in QUALITY.items()]
    fitted = tournaments(battles, bootstrap=10, seed=0)
    lang_ratings = _lang_ratings(battles)
    alone = surrogate(feature_cube(rows), fitted, battles, lang_ratings, seed=0)
    mixed = surrogate(feature_cube(rows + unseen), fitted, battles, lang_ratings, seed=0)
    for part in ("leave_systems_out", "leave_languages_out", "pairwise"):
        assert mixed[part] == alone[part], part
    assert mixed["ablations"] == alone["ablations"] and mixed["importances"] == alone["importances"]


def test_a_system_with_an_unbounded_rating_does_not_train_the_surrogate() -> None:
    battles, rows = _arena()
    # s6 beats every system on every query it plays: it never loses, so it has no finite rating to learn from
    battles += [Battle(f"en{q}", "en", "s6", other, "a") for q in range(30) for other in QUALITY]
    rows += [("en", f"en{q}", "s6", "citation_map_at_10", 0.9) for q in range(30)]
    fitted = tournaments(battles, bootstrap=10, seed=0)
    assert fitted.sides[fitted.models.index("s6")] == "high"
    result = surrogate(feature_cube(rows), fitted, battles, _lang_ratings(_arena()[0]), seed=0)
    assert result["unbounded"] == ["s6"] and "s6" not in result["systems"] and "s6" not in result["predicted"]
    assert len(result["leave_systems_out"]["predicted"]) == len(QUALITY)


@pytest.mark.parametrize(("systems", "unbounded"), [(("s0", "s1", "s2"), True), (("s0", "s1", "s2", "s3"), False)])
def test_too_few_systems_to_hold_out_get_no_validation_but_words(systems: tuple[str, ...], unbounded: bool) -> None:
    battles, rows = _arena()
    battles = [b for b in battles if b.model_a in systems and b.model_b in systems]
    rows = [row for row in rows if row[2] in systems]
    lang_ratings = _lang_ratings(battles)  # finite ones, as the stage passes them
    if unbounded:  # a fourth system that never loses: no finite rating, so it cannot be held out either
        battles += [Battle(f"en{q}", "en", "s6", other, "a") for q in range(30) for other in systems]
        rows += [("en", f"en{q}", "s6", "citation_map_at_10", 0.9) for q in range(30)]
    result = surrogate(feature_cube(rows), tournaments(battles, bootstrap=10, seed=0), battles, lang_ratings, seed=0)
    finite = len(systems)  # 3 of 4 (one unbounded), or 4: both below the five that validation needs
    assert result["not_validated"] == f"validation needs at least 5 systems with finite ratings; this run has {finite}"
    assert [result[part] for part in VALIDATION] == [None] * len(VALIDATION)
    assert result["systems"] == list(systems)


def test_five_systems_with_finite_ratings_are_validated() -> None:
    battles, rows = _arena()
    kept = ("s0", "s1", "s2", "s3", "s4")
    battles = [b for b in battles if b.model_a in kept and b.model_b in kept]
    cube = feature_cube([row for row in rows if row[2] in kept])
    result = surrogate(cube, tournaments(battles, bootstrap=10, seed=0), battles, _lang_ratings(battles), seed=0)
    assert result["not_validated"] is None and len(result["leave_systems_out"]["predicted"]) == 5
    assert set(result["importances"]) == {"citation_map_at_10", "extra_answer_chars", "citation_map_at_10:missing",
                                          "extra_answer_chars:missing"}
