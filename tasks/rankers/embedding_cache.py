"""A corpus's embeddings, encoded shard by shard into the lake so that a crash loses at most one shard.

While a corpus is encoded, every ``SHARD_DOCS`` documents' vectors are written
(atomically, with their doc ids) to ``<key>.parts/NNNNNN.npz`` beside the
cache file; a rerun reads the shards that are there, checks their ids against
the documents it is given (a shard of other documents is encoded again) and
encodes only the rest, like the dump readers resume at their last shard. When
the last shard is written the parts become the one ``<key>.npz`` the readers
load, and the parts are removed.

Texts are taken from the sequence ``PREPARE_DOCS`` at a time, the next step's
while the model encodes the current one (a thread): a lazy sequence, such as
the dense ranker's truncating one, then costs the GPU no idle time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from tqdm import tqdm
from upath import UPath

from tasks.warehouse.lake import write_atomic

log = logging.getLogger(__name__)

SHARD_DOCS = 16384
"""Documents per shard: seconds of GPU time, minutes of CPU time; large enough that each encode call sorts a good
number of texts by length (sentence-transformers batches similar lengths together)."""

PREPARE_DOCS = 1024
"""Texts prepared (sliced from the sequence) and encoded per step; several steps make a shard."""

Encoder = Callable[[Sequence[str]], np.ndarray]


def save_npz_atomic(path: UPath, **arrays: np.ndarray) -> None:
    """Write the arrays to ``path`` on the lake's filesystem, appearing only when complete (another process may
    read the cache)."""
    def savez(tmp: UPath) -> None:
        with tmp.open("wb") as handle:
            np.savez(handle, **arrays)

    write_atomic(path, savez)


def load_npz(path: UPath) -> tuple[np.ndarray, np.ndarray]:
    with path.open("rb") as handle, np.load(handle) as cached:
        return cached["ids"], cached["vectors"]


def parts_dir(cache: UPath) -> UPath:
    return cache.with_name(f"{cache.stem}.parts")


def encode_corpus(encode: Encoder, ids: np.ndarray, texts: Sequence[str], cache: UPath, *,
                  shard_docs: int = SHARD_DOCS, label: str = "encoding") -> np.ndarray:
    """The vectors of ``texts`` (row i: ``ids[i]``), written to ``cache`` as ``ids`` and ``vectors``.

    Shards left by an interrupted run are reused where their ids match; a progress bar counts documents.
    """
    parts = parts_dir(cache)
    out = np.zeros((0, 0), dtype=np.float32)  # filled shard by shard once the first tells the dimension
    resumed = 0
    with tqdm(total=len(texts), desc=label, unit="doc", disable=None) as bar, ThreadPoolExecutor(1) as prefetch:
        for number, start in enumerate(range(0, len(texts), shard_docs)):
            shard, stop = parts / f"{number:06d}.npz", min(start + shard_docs, len(texts))
            vectors = _resumed(shard, ids[start:stop])
            if vectors is None:
                steps = [np.asarray(v, dtype=np.float32) for v in _pipelined(encode, texts, start, stop, prefetch, bar)]
                vectors = np.concatenate(steps)
                save_npz_atomic(shard, ids=ids[start:stop], vectors=vectors)
            else:
                resumed += stop - start
                bar.update(stop - start)
            if number == 0:
                out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
            out[start:stop] = vectors
    if resumed:
        log.info("%s: %d of %d documents read from the shards of an interrupted run", label, resumed, len(texts))
    save_npz_atomic(cache, ids=ids, vectors=out)
    if parts.exists():
        parts.fs.rm(parts.path, recursive=True)
    return out


def _pipelined(encode: Encoder, texts: Sequence[str], start: int, stop: int, prefetch: ThreadPoolExecutor,
               bar: tqdm) -> Iterator[np.ndarray]:
    """The vectors of ``texts[start:stop]``, ``PREPARE_DOCS`` at a time, each step's texts sliced in ``prefetch``
    while the step before is encoded."""
    bounds = [(step, min(step + PREPARE_DOCS, stop)) for step in range(start, stop, PREPARE_DOCS)]
    pending = prefetch.submit(texts.__getitem__, slice(*bounds[0]))
    for number, (low, high) in enumerate(bounds):
        chunk = pending.result()
        if number + 1 < len(bounds):
            pending = prefetch.submit(texts.__getitem__, slice(*bounds[number + 1]))
        yield encode(chunk)
        bar.update(high - low)


def _resumed(shard: UPath, ids: np.ndarray) -> np.ndarray | None:
    """A shard's vectors if it exists, is readable and holds exactly ``ids``; else None (encode it again)."""
    if not shard.exists():
        return None
    try:
        stored_ids, vectors = load_npz(shard)
    except (OSError, ValueError, KeyError) as exc:
        log.warning("%s is unreadable (%s); encoding its documents again", shard, exc)
        return None
    if not np.array_equal(stored_ids, ids):
        log.warning("%s holds other documents than those now at its place; encoding them again", shard)
        return None
    return vectors
