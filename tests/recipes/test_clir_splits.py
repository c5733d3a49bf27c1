"""Topic-disjoint, backfill-stable splits (tasks.pairing.splits) and padding of base queries (tasks.pairing.padding)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tasks.pairing.config import ClirConfig
from tasks.pairing.padding import pad
from tasks.pairing.splits import assign_splits, global_split, topic_position

SMALL = ClirConfig(split_sizes={"train": 40, "dev": 5, "test1": 5, "test2": 5})


def _qids(start: int, stop: int) -> list[str]:
    return [f"Q{n}" for n in range(start, stop)]


# Overlapping topic sets, as directions sharing a query language or a document language have.
DIRECTIONS = {
    ("en", "de"): _qids(0, 400),
    ("en", "fr"): _qids(100, 500),
    ("de", "fr"): _qids(200, 260),
    ("fr", "de"): _qids(50, 700),
}


def _split_of_each_qid(assigned: dict) -> dict[str, set[str]]:
    seen: dict[str, set[str]] = {}
    for splits in assigned.values():
        for name, qids in splits.items():
            for qid in qids:
                seen.setdefault(qid, set()).add(name)
    return seen


def test_no_topic_is_in_two_different_splits_anywhere() -> None:
    seen = _split_of_each_qid(assign_splits(DIRECTIONS, SMALL))
    assert seen, "expected some topics in splits"
    assert all(len(names) == 1 for names in seen.values())


def test_sizes_respect_the_caps_and_fill_them_when_there_are_enough_queries() -> None:
    assigned = assign_splits(DIRECTIONS, SMALL)
    for direction, splits in assigned.items():
        for name, qids in splits.items():
            assert len(qids) <= SMALL.split_sizes[name]
            assert len(set(qids)) == len(qids)
            assert set(qids) <= set(DIRECTIONS[direction])
    # en→de has 400 topics: on average 400 * 5/55 ≈ 36 per test split and 291 train, well over the caps.
    assert {name: len(qids) for name, qids in assigned[("en", "de")].items()} == SMALL.split_sizes


def test_every_chosen_topic_is_in_its_global_split() -> None:
    for splits in assign_splits(DIRECTIONS, SMALL).values():
        for name, qids in splits.items():
            assert all(global_split(qid, SMALL) == name for qid in qids)


def test_small_direction_takes_what_it_has_and_leaves_the_rest_to_full() -> None:
    assigned = assign_splits({("xx", "yy"): _qids(0, 30)}, SMALL)[("xx", "yy")]
    chosen = [qid for qids in assigned.values() for qid in qids]
    assert len(chosen) == len(set(chosen)) <= 30
    # Under the caps nothing is dropped: every topic that falls in a split is chosen.
    expected = {qid for qid in _qids(0, 30) if global_split(qid, SMALL) is not None}
    assert set(chosen) == expected


def test_deterministic_for_a_seed_and_different_for_another_seed() -> None:
    assert assign_splits(DIRECTIONS, SMALL) == assign_splits(DIRECTIONS, SMALL)
    other = SMALL.model_copy(update={"split_seed": 14})
    assert assign_splits(DIRECTIONS, other) != assign_splits(DIRECTIONS, SMALL)


def test_repeated_queries_in_a_direction_count_once() -> None:
    once = assign_splits({("en", "de"): _qids(0, 100)}, SMALL)
    twice = assign_splits({("en", "de"): _qids(0, 100) * 2}, SMALL)
    assert once == twice


def test_adding_a_language_moves_no_existing_topic() -> None:
    before = assign_splits(DIRECTIONS, SMALL)
    backfilled = dict(DIRECTIONS)
    backfilled[("ja", "de")] = _qids(0, 900)
    backfilled[("en", "ja")] = _qids(300, 800)
    after = assign_splits(backfilled, SMALL)
    for direction in DIRECTIONS:
        assert after[direction] == before[direction]
    old_split = {qid: next(iter(names)) for qid, names in _split_of_each_qid(before).items()}
    for qid, names in _split_of_each_qid(after).items():
        assert len(names) == 1
        if qid in old_split:
            assert names == {old_split[qid]}


def test_topic_position_does_not_depend_on_the_process_hash_seed() -> None:
    code = "from tasks.pairing.splits import topic_position; print(repr(topic_position('Q42', 13)))"
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True,
            env={**os.environ, "PYTHONHASHSEED": hash_seed},
        ).stdout.strip()
        for hash_seed in ("1", "2")
    }
    assert outputs == {repr(topic_position("Q42", 13))}


def test_default_fractions_follow_the_split_sizes() -> None:
    config = ClirConfig()
    counts: dict[str | None, int] = {}
    for n in range(13_000):
        name = global_split(f"Q{n}", config)
        counts[name] = counts.get(name, 0) + 1
    # 10000:1000:1000:1000 of 13,000 topics; a binomial sd is under 50 for each.
    assert counts.get(None, 0) == 0
    assert counts["train"] == pytest.approx(10_000, abs=250)
    for name in ("dev", "test1", "test2"):
        assert counts[name] == pytest.approx(1_000, abs=150)


def test_changing_the_train_fraction_keeps_every_test_topic() -> None:
    narrow = ClirConfig(split_fractions={"train": 0.3, "dev": 0.1, "test1": 0.1, "test2": 0.1})
    wide = ClirConfig(split_fractions={"train": 0.6, "dev": 0.1, "test1": 0.1, "test2": 0.1})
    for n in range(2_000):
        qid = f"Q{n}"
        if global_split(qid, narrow) in ("test1", "test2"):
            assert global_split(qid, wide) == global_split(qid, narrow)


def test_fractions_must_name_the_same_splits() -> None:
    with pytest.raises(ValueError, match="differ"):
        ClirConfig(split_fractions={"train": 0.5})


# --- padding of 'base' queries (tasks.pairing.padding) -----------------------


RESULTS = [(7, 3), (5, 6), (9, 1)]


def test_padding_fills_to_k_with_fresh_label_zero_documents() -> None:
    pool = list(range(1, 21))
    rows = pad(RESULTS, pool, 10, 13, "q1")
    assert len(rows) == 10
    assert rows[:3] == [(5, 6, False), (7, 3, False), (9, 1, False)]
    padding = rows[3:]
    assert all(label == 0 and is_pad for _, label, is_pad in padding)
    ids = [doc_id for doc_id, _, _ in rows]
    assert len(set(ids)) == 10
    assert {doc_id for doc_id, _, _ in padding} <= set(pool) - {5, 7, 9}


def test_padding_is_reproducible_per_query() -> None:
    pool = list(range(1, 5_001))
    first = pad(RESULTS, pool, 100, 13, "q1")
    assert pad(RESULTS, pool, 100, 13, "q1") == first
    assert pad(RESULTS, pool, 100, 13, "q2") != first
    assert pad(RESULTS, pool, 100, 14, "q1") != first


def test_padding_from_a_large_pool_is_distinct_and_fresh() -> None:
    pool = list(range(100_000))
    rows = pad([(doc_id, 2) for doc_id in range(50)], pool, 100, 13, "big")
    ids = [doc_id for doc_id, _, _ in rows]
    assert len(set(ids)) == 100
    assert not {doc_id for doc_id, _, is_pad in rows if is_pad} & set(range(50))


def test_an_appended_own_article_adds_to_k_judgements_and_removes_none() -> None:
    # K = 3 hits labelled 5, 2, 1, then the own article (label 6) appended because retrieval missed it:
    # all four judgements stay, best label first, and there is no room left for padding.
    hits_and_own = [(3, 5), (8, 2), (4, 1), (6, 6)]
    assert pad(hits_and_own, [10, 11, 12], 3, 13, "q") == [(6, 6, False), (3, 5, False), (8, 2, False), (4, 1, False)]


def test_more_judgements_than_k_are_all_kept_in_label_then_id_order() -> None:
    results = [(4, 1), (3, 5), (8, 2), (2, 5), (6, 6)]
    expected = [(6, 6, False), (2, 5, False), (3, 5, False), (8, 2, False), (4, 1, False)]
    assert pad(results, [10, 11], 3, 13, "q") == expected


def test_exactly_k_judgements_get_no_padding() -> None:
    assert pad([(1, 6), (2, 3)], [10, 11, 12], 2, 13, "q") == [(1, 6, False), (2, 3, False)]


def test_small_pool_pads_as_far_as_it_can() -> None:
    rows = pad(RESULTS, [5, 7, 9, 40, 41], 10, 13, "q")
    assert len(rows) == 5
    assert {doc_id for doc_id, _, is_pad in rows if is_pad} == {40, 41}


def test_pool_of_repeated_ids_does_not_loop_forever() -> None:
    rows = pad([], [1] * 1_000 + [2], 3, 13, "q")
    assert sorted(doc_id for doc_id, _, _ in rows) == [1, 2]


def test_repeated_results_are_rejected() -> None:
    with pytest.raises(ValueError, match="q9.*twice"):
        pad([(1, 2), (1, 3)], [5, 6], 4, 13, "q9")
