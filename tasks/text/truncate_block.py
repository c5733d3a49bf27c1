"""The CLIRMatrix length rule over a block of texts at once, for index builds (``tasks.text.truncate`` per text).

Kept apart from ``tasks.text.truncate`` so that the processes that cut one text at a time (the rankers) do not
load Numba.
"""

from __future__ import annotations

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tasks.text.languages import rule_for
from tasks.text.truncate import _RUN_COUNT_CHARS_PER_WORD, _RUN_MARKS, truncate

# 1 for the bytes of ASCII letters and digits, for the compiled run count of a block of texts.
_WORD_BYTES = np.frombuffer(_RUN_MARKS, dtype=np.uint8) == ord("a")


def truncated(texts: pa.Array, lang: str) -> pa.Array:
    """``truncate`` of every text of a block of texts (a large string array without nulls), as a string array.

    An index build cuts every document; most short ones have nothing to cut. For a space-separated language,
    the test that proves an ASCII text short (at most ``limit`` runs of letters and digits, see
    ``_cut_ascii_words``) runs here over the block's bytes, compiled and without the GIL, so that a build's
    threads share it; only the texts it does not clear go through ``truncate`` one by one.
    """
    rule = rule_for(lang)
    if rule.truncate_unit == "tokens" and rule.segmenter == "whitespace":
        limit = rule.truncate_limit
        offsets = np.frombuffer(texts.buffers()[1], dtype=np.int64)[texts.offset:texts.offset + len(texts) + 1]
        data = texts.buffers()[2]
        whole = _short_ascii(offsets, np.frombuffer(data, dtype=np.uint8) if data is not None else
                             np.zeros(0, dtype=np.uint8), limit, limit * _RUN_COUNT_CHARS_PER_WORD, _WORD_BYTES)
    else:
        whole = np.zeros(len(texts), dtype=np.bool_)
    if whole.all():
        return texts
    cut = pa.array(~whole)
    cut_texts = [truncate(text, lang) for text in pc.filter(texts, cut).to_pylist()]
    return pc.replace_with_mask(texts, cut, pa.array(cut_texts, texts.type))


@numba.njit(nogil=True, cache=True)
def _short_ascii(offsets: np.ndarray, data: np.ndarray, limit: int, most_bytes: int,
                 word_bytes: np.ndarray) -> np.ndarray:
    """Which texts (UTF-8, between consecutive ``offsets`` in ``data``) are ASCII, at most ``most_bytes`` long, and
    have at most ``limit`` runs of letters and digits: ``_cut_ascii_words``' test for a text to keep whole."""
    short = np.zeros(offsets.shape[0] - 1, dtype=np.bool_)
    for text in range(offsets.shape[0] - 1):
        start, end = offsets[text], offsets[text + 1]
        if end - start > most_bytes:
            continue
        runs, in_run, ascii_only = 0, False, True
        for position in range(start, end):
            byte = data[position]
            if byte >= 128:
                ascii_only = False
                break
            if word_bytes[byte]:
                if not in_run:
                    runs += 1
                    in_run = True
            else:
                in_run = False
        short[text] = ascii_only and runs <= limit
    return short
