"""Per-query Jenks labels of the CLIR recipe (tasks.pairing.labels)."""

from __future__ import annotations

import random

import jenkspy
import pytest

from tasks.pairing.config import ClirConfig
from tasks.pairing.labels import label_hits, label_query, normalise

DEFAULT = ClirConfig()

# Five well-separated groups: any other 5-way partition would have to merge two
# groups at least 19 points apart, so Fisher-Jenks must find exactly these.
CLUSTERED = [100.0, 99.0, 70.0, 69.0, 50.0, 30.0, 29.0, 10.0, 9.0, 8.0]
CLUSTERED_LABELS = [5, 5, 4, 4, 3, 2, 2, 1, 1, 1]


def test_minmax_normalisation() -> None:
    assert normalise([2.0, 4.0, 6.0], "minmax") == pytest.approx([0.0, 0.5, 1.0])


def test_max_normalisation() -> None:
    assert normalise([2.0, 4.0, 6.0], "max") == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_minmax_of_equal_scores_is_all_one() -> None:
    assert normalise([3.5, 3.5, 3.5], "minmax") == [1.0, 1.0, 1.0]


def test_max_normalisation_rejects_non_positive_top_score() -> None:
    with pytest.raises(ValueError, match="query q7.*positive"):
        normalise([0.0, 0.0], "max", query_id="q7")


def test_non_finite_scores_are_rejected() -> None:
    with pytest.raises(ValueError, match="finite"):
        normalise([1.0, float("nan")], "minmax")


def test_five_clear_groups_get_labels_five_to_one() -> None:
    assert label_query(CLUSTERED, [False] * len(CLUSTERED), DEFAULT) == CLUSTERED_LABELS


def test_own_article_gets_six_and_stays_out_of_jenks() -> None:
    scores = [300.0, *CLUSTERED]
    is_self = [True] + [False] * len(CLUSTERED)
    assert label_query(scores, is_self, DEFAULT) == [6, *CLUSTERED_LABELS]


def test_own_article_inside_jenks_squeezes_the_others() -> None:
    # With 300 in the input, it fills the top class alone and the ten others share 4 classes.
    # Merging two neighbouring groups costs (sum of squared deviations):
    #   {70,69,50}: mean 63 -> 49+36+169 = 254
    #   {50,30,29}: mean 36.33 -> 13.67^2+6.33^2+7.33^2 ~ 280.7
    #   {30,29,10,9,8}: mean 17.2 -> ~506.8;  {100,99,70,69}: mean 84.5 -> 901
    # so {70,69,50} merge; classes from the top: {300} {100,99} {70,69,50} {30,29} {10,9,8}.
    config = ClirConfig(self_in_jenks=True)
    scores = [300.0, *CLUSTERED]
    is_self = [True] + [False] * len(CLUSTERED)
    assert label_query(scores, is_self, config) == [6, 4, 4, 3, 3, 3, 2, 2, 1, 1, 1]


def test_value_equal_to_a_break_belongs_to_the_lower_class() -> None:
    scores = [1.0, 0.9, 0.8, 0.2, 0.1, 0.0]
    # jenkspy's inner break is the highest value of the lower class itself ...
    assert jenkspy.jenks_breaks(scores, n_classes=2)[1] == pytest.approx(0.2)
    # ... so 0.2 must land in the lower class (label 4), not the upper one.
    assert label_query(scores, [False] * 6, ClirConfig(classes=2)) == [5, 5, 5, 4, 4, 4]


def test_exactly_as_many_distinct_values_as_classes() -> None:
    scores = [1.0, 0.75, 0.75, 0.5, 0.25, 0.0, 0.0]
    assert label_query(scores, [False] * 7, DEFAULT) == [5, 4, 4, 3, 2, 1, 1]


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ([3.0, 3.0, 2.0, 1.0], [5, 5, 4, 3]),  # 3 distinct values: 5, 4, 3 from the top
        ([7.0, 7.0, 1.0], [5, 5, 4]),
        ([4.2], [5]),
        ([2.0, 2.0, 2.0], [5, 5, 5]),
    ],
)
def test_fewer_distinct_values_than_classes_rank_from_the_top(scores: list[float], expected: list[int]) -> None:
    assert label_query(scores, [False] * len(scores), DEFAULT) == expected


def test_fewer_classes_still_end_at_five() -> None:
    labels = label_query(CLUSTERED, [False] * len(CLUSTERED), ClirConfig(classes=3))
    assert labels[0] == 5
    assert set(labels) == {3, 4, 5}


def test_only_the_own_article_was_retrieved() -> None:
    assert label_query([12.0], [True], DEFAULT) == [6]


def test_labels_are_monotone_and_ties_equal_on_random_queries() -> None:
    rng = random.Random(5)
    for _ in range(40):
        scores = [round(rng.uniform(0, 30), 1) for _ in range(rng.randint(1, 60))]
        labels = label_query(scores, [False] * len(scores), DEFAULT)
        assert all(1 <= label <= 5 for label in labels)
        for (s1, l1) in zip(scores, labels, strict=True):
            for (s2, l2) in zip(scores, labels, strict=True):
                if s1 == s2:
                    assert l1 == l2
                elif s1 > s2:
                    assert l1 >= l2
        assert max(labels) == 5


def test_normalisation_choice_does_not_change_labels() -> None:
    # Both maps are positive affine; Jenks' squared deviations only scale under them.
    rng = random.Random(11)
    for _ in range(20):
        scores = [rng.uniform(1, 40) for _ in range(30)]
        flags = [False] * 30
        assert label_query(scores, flags, ClirConfig(normalisation="max")) == label_query(scores, flags, DEFAULT)


def test_mismatched_lengths_are_rejected() -> None:
    with pytest.raises(ValueError, match="3 scores but 2"):
        label_query([1.0, 2.0, 3.0], [False, False], DEFAULT)


def test_two_own_articles_are_rejected() -> None:
    with pytest.raises(ValueError, match="more than one"):
        label_query([1.0, 2.0], [True, True], DEFAULT)


def test_label_hits_appends_own_article_outside_top_k() -> None:
    labelled = label_hits([11, 12, 13], [9.0, 5.0, 1.0], 99, DEFAULT, query_id="q")
    assert labelled == [(11, 5), (12, 4), (13, 3), (99, 6)]


def test_label_hits_without_forcing_leaves_missing_own_article_out() -> None:
    labelled = label_hits([11, 12], [9.0, 5.0], 99, ClirConfig(force_self_label=False))
    assert labelled == [(11, 5), (12, 4)]


def test_label_hits_does_not_append_own_article_already_retrieved() -> None:
    labelled = label_hits([11, 99, 12], [9.0, 50.0, 5.0], 99, DEFAULT)
    assert labelled == [(11, 5), (99, 6), (12, 4)]


def test_label_hits_rejects_repeated_documents() -> None:
    with pytest.raises(ValueError, match="twice"):
        label_hits([11, 11], [2.0, 1.0], None, DEFAULT, query_id="q1")
