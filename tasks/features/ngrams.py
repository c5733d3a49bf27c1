"""BLEU's clipped n-gram matches of many (hypothesis, reference) pairs at once, counted with numpy.

sacreBLEU counts each segment's n-grams in a ``Counter`` of tuples and
clips them pair by pair in Python; over a batch that is most of BLEU's cost
after tokenising.  Here every n-gram of every distinct token sequence is an
integer: its tokens' vocabulary ids as the digits of a number in base
vocabulary size (its (n-1)-gram prefix's number times the base plus its
last token's id), so counting and clipping are one sort and searches over
integer arrays per order, and each n-gram of each text is counted once
however many pairs share the text.  The numbers are renumbered densely
(``np.unique``, a second sort) only when the next step would overflow int64,
which takes vocabularies of tens of thousands of words.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

import numpy as np


def clipped_matches(sequences: Sequence[Sequence[str]], hypotheses: np.ndarray, references: np.ndarray,
                    max_order: int) -> np.ndarray:
    """``matches[p, n - 1]``: the sum, over the distinct n-grams of hypothesis ``hypotheses[p]``, of
    ``min(its count there, its count in sequence references[p])`` — sacreBLEU's ``correct`` for order n.

    ``hypotheses`` and ``references`` index ``sequences`` (token lists); the result is an int64 array
    of shape ``(len(hypotheses), max_order)``.
    """
    tokens = list(chain.from_iterable(sequences))
    vocabulary = {token: n for n, token in enumerate(dict.fromkeys(tokens))}
    ids = np.fromiter(map(vocabulary.__getitem__, tokens), dtype=np.int64, count=len(tokens))
    lengths = np.fromiter(map(len, sequences), dtype=np.int64, count=len(sequences))
    owner = np.repeat(np.arange(len(sequences)), lengths)  # the sequence each token position belongs to
    ends = np.cumsum(lengths)[owner]  # where that sequence ends
    matches = np.zeros((len(hypotheses), max_order), dtype=np.int64)
    grams = ids  # grams[i]: the number of the n-gram starting at position i (it may run into the next sequence)
    for order in range(1, max_order + 1):
        if order > 1:
            grams = _fitting(grams, len(vocabulary))[:-1] * len(vocabulary) + ids[order - 1:]
        within = np.arange(len(grams)) + order <= ends[:len(grams)]
        matches[:, order - 1] = _clipped(owner[:len(grams)][within], grams[within], len(sequences),
                                         hypotheses, references)
    return matches


def _fitting(numbers: np.ndarray, factor: int) -> np.ndarray:
    """``numbers``, renumbered densely in their order when any of them times ``factor`` would overflow int64."""
    if not len(numbers) or (int(numbers.max()) + 1) * factor <= np.iinfo(np.int64).max:
        return numbers
    return np.unique(numbers, return_inverse=True)[1]


def _clipped(owner: np.ndarray, grams: np.ndarray, count: int, hypotheses: np.ndarray,
             references: np.ndarray) -> np.ndarray:
    """One order's clipped matches per pair, from the (sequence, n-gram number) of every n-gram occurrence."""
    if not len(grams):
        return np.zeros(len(hypotheses), dtype=np.int64)
    grams = _fitting(grams, count)
    width = int(grams.max()) + 1
    keys, counts = _counted(owner * width + grams)  # sorted by sequence, then n-gram
    starts = np.searchsorted(keys, np.arange(count + 1) * width)  # sequence s owns keys[starts[s]:starts[s + 1]]
    sizes = starts[hypotheses + 1] - starts[hypotheses]
    pair = np.repeat(np.arange(len(hypotheses)), sizes)  # one row per distinct n-gram of each pair's hypothesis
    rows = np.arange(len(pair)) - np.repeat(np.cumsum(sizes) - sizes, sizes) + np.repeat(starts[hypotheses], sizes)
    wanted = references[pair] * width + keys[rows] % width  # the same n-gram in the pair's reference
    found = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
    clipped = np.where(keys[found] == wanted, np.minimum(counts[rows], counts[found]), 0)
    return np.bincount(pair, weights=clipped, minlength=len(hypotheses)).astype(np.int64)


def _counted(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, return_counts=True)``, sorted by timsort (``kind="stable"``) instead of introsort.

    The keys come sequence by sequence, each sequence's keys above the one
    before's, so they are already a string of short sorted runs where timsort
    only merges: half the time of ``np.unique``'s sort on a batch's n-grams.
    """
    ordered = np.sort(keys, kind="stable")
    first = np.empty(len(ordered), dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    starts = np.flatnonzero(first)
    return ordered[starts], np.diff(starts, append=len(ordered))
