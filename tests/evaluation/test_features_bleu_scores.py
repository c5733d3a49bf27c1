"""The batched sentence BLEU is sacreBLEU's ``compute_bleu`` to the last bit, on every small case and random ones."""

from __future__ import annotations

import itertools
import random

import numpy as np
from sacrebleu.metrics import BLEU

from tasks.features.bleu_scores import SMOOTHING, sentence_bleu_scores

ORDERS = 4


def _totals(hypothesis_length: int) -> list[int]:
    return [max(hypothesis_length - shift, 0) for shift in range(ORDERS)]


def _expected(correct: list[int], hypothesis_length: int, reference_length: int) -> float:
    return BLEU.compute_bleu(list(correct), _totals(hypothesis_length), hypothesis_length, reference_length,
                             smooth_method=SMOOTHING, effective_order=True, max_ngram_order=ORDERS).score


def _check(cases: list[tuple[list[int], int, int]]) -> None:
    correct, hypothesis_lengths, reference_lengths = (np.array(column, dtype=np.int64) for column in zip(*cases))
    assert sentence_bleu_scores(correct, hypothesis_lengths, reference_lengths) == [_expected(*case) for case in cases]


def test_every_small_case() -> None:
    # hypotheses of 0-7 tokens against references of 0-10, every possible count of matches per order
    _check([(list(correct), hypothesis_length, reference_length)
            for hypothesis_length in range(8) for reference_length in range(11)
            for correct in itertools.product(*(range(total + 1) for total in _totals(hypothesis_length)))])


def test_random_long_cases() -> None:
    rng = random.Random(5)
    cases = []
    for _ in range(3000):
        hypothesis_length = rng.randint(1, 300)
        share = rng.random()  # how much of the hypothesis matches: from nothing to all of it
        cases.append(([rng.randint(0, total) if rng.random() < share else 0 for total in _totals(hypothesis_length)],
                      hypothesis_length, rng.randint(0, 400)))
    _check(cases)


def test_no_pairs() -> None:
    _check_empty = sentence_bleu_scores(np.zeros((0, ORDERS), dtype=np.int64), np.zeros(0, dtype=np.int64),
                                        np.zeros(0, dtype=np.int64))
    assert _check_empty == []
