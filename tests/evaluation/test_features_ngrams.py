"""BLEU's clipped n-gram matches where n-gram numbers outgrow int64 and are renumbered (large vocabularies)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from sacrebleu.metrics.helpers import extract_all_word_ngrams

from tasks.features.ngrams import _counted, clipped_matches


def _sacrebleu_matches(hypothesis: list[str], reference: list[str], max_order: int) -> list[int]:
    ours, _ = extract_all_word_ngrams(" ".join(hypothesis), 1, max_order)
    theirs, _ = extract_all_word_ngrams(" ".join(reference), 1, max_order)
    correct = [0] * max_order
    for gram, count in ours.items():
        correct[len(gram) - 1] += min(count, theirs.get(gram, 0))
    return correct


def test_clipped_matches_stay_exact_when_n_gram_numbers_would_overflow_int64() -> None:
    # 100,000 words: a 4-gram's number would reach 10^20, and 10,000 sequences times a 3-gram's (10^15) overflow too
    rng = random.Random(4)
    words = iter(f"w{n}" for n in range(100_000))
    sequences = [[next(words) if rng.random() < 0.7 else rng.choice("ab") for _ in range(10)] for _ in range(10_000)]
    sequences.append(list(words))  # the rest of the vocabulary, so that its largest ids occur
    hypotheses = np.array([rng.randrange(len(sequences)) for _ in range(300)])
    references = np.array([hypothesis if n % 3 == 0 else rng.randrange(len(sequences))
                           for n, hypothesis in enumerate(hypotheses)])  # a third against themselves: every order
    expected = [_sacrebleu_matches(sequences[h], sequences[r], 5) for h, r in zip(hypotheses, references, strict=True)]
    assert clipped_matches(sequences, hypotheses, references, 5).tolist() == expected


@pytest.mark.parametrize("size", [0, 1, 7, 20_000])
def test_counted_keys_are_numpys_unique_with_counts(size: int) -> None:
    rng = np.random.default_rng(size)
    for high in (2, 50, 1 << 30):
        # keys as a batch gives them (sequence by sequence, each sequence's above the one before's), and plain random
        owner = np.sort(rng.integers(0, max(1, size // 10), size))
        for keys in (owner * high + rng.integers(0, high, size), rng.integers(0, high, size)):
            expected_keys, expected_counts = np.unique(keys, return_counts=True)
            keys_found, counts_found = _counted(keys)
            assert keys_found.tolist() == expected_keys.tolist()
            assert counts_found.tolist() == expected_counts.tolist()
