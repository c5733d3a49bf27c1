"""sacreBLEU's sentence BLEU (``exp`` smoothing, effective order) of many pairs at once, from their statistics.

``BLEU.compute_bleu`` scores one pair per call and builds a ``BLEUScore``
with its formatted strings each time, which costs more than the
arithmetic; over a batch it was a sixth of BLEU's time.  Here the same
arithmetic runs on arrays: every step whose result IEEE 754 fixes
(products, quotients, powers of two, comparisons) in numpy, and the rest
with the very functions sacreBLEU calls — ``math.log``, ``math.exp`` and
the built-in ``sum`` of each pair's logarithms in order — so each score is
``compute_bleu``'s to the last bit (``tests/evaluation/test_features_bleu_scores.py``
compares them on every small case and on random ones).
"""

from __future__ import annotations

import math

import numpy as np

#: the smoothing these scores are, sacreBLEU's default for sentence BLEU (``_bleu`` builds its scorers with it)
SMOOTHING = "exp"


def sentence_bleu_scores(correct: np.ndarray, hypothesis_lengths: np.ndarray,
                         reference_lengths: np.ndarray) -> list[float]:
    """``BLEU.compute_bleu(correct[p], totals, hypothesis_lengths[p], reference_lengths[p], "exp",
    effective_order=True, max_ngram_order=correct.shape[1]).score`` of every pair ``p``.

    ``correct`` holds the clipped matches per order (int64, pairs × orders);
    a pair's total for order n is the hypothesis's n-gram count.
    """
    orders = np.arange(1, correct.shape[1] + 1)
    totals = np.maximum(hypothesis_lengths[:, None] - orders + 1, 0)
    # compute_bleu stops at the first order without n-grams: the effective order is the last one with some
    effective = np.minimum(hypothesis_lengths, correct.shape[1])
    counted = orders <= effective[:, None]
    missed = correct == 0
    with np.errstate(divide="ignore", invalid="ignore"):  # orders past the effective one are never read
        # a counted order without a match takes 100 / (2^k · total), k counting such orders so far (mteval's smoothing)
        precisions = np.where(missed, 100.0 / (2.0 ** np.cumsum(missed & counted, axis=1) * totals),
                              100.0 * correct / totals)
    logs = np.fromiter((sum(map(math.log, row[:order])) for row, order in zip(precisions.tolist(), effective.tolist())),
                       dtype=np.float64, count=len(precisions))
    matched = correct.any(axis=1)  # compute_bleu scores a pair without any match 0
    scores = np.zeros(len(logs))
    exponents = (logs[matched] / effective[matched]).tolist()
    scores[matched] = np.fromiter(map(math.exp, exponents), dtype=np.float64, count=len(exponents))
    short = matched & (hypothesis_lengths < reference_lengths)  # the brevity penalty's pairs (all have a length)
    penalties = (1 - reference_lengths[short] / hypothesis_lengths[short]).tolist()
    scores[short] = np.fromiter(map(math.exp, penalties), dtype=np.float64, count=len(penalties)) * scores[short]
    return scores.tolist()
