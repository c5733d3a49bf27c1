"""What every benchmark shares: best-of-N wall-clock timing, stderr progress, the closing JSON line.

Benchmarks compare variants measured in the same run, so that their ratios
hold whatever the machine's load was; only the best of N runs is kept
because noise (other processes, cold caches) only ever makes a run slower.
The single JSON line on stdout is the machine-readable result (``make bench``
and trackers read it); everything meant for people goes to stderr.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

import orjson

T = TypeVar("T")


def say(message: str) -> None:
    """A progress or result line for people (stderr, so stdout stays one JSON line)."""
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Timing(Generic[T]):
    """The fastest of several runs: its wall-clock and CPU seconds, and what it returned.

    ``cpu_seconds`` counts this process and the child processes it waited for
    (a command-line tool and its helpers), not long-lived workers such as a
    Dask cluster's, whose CPU this process never sees.
    """

    seconds: float
    cpu_seconds: float
    result: T


def _cpu_seconds() -> float:
    spent = os.times()
    return spent.user + spent.system + spent.children_user + spent.children_system


def best_of(label: str, repeat: int, run: Callable[[], T], *, prepare: Callable[[], None] | None = None,
            warmup: int = 0) -> Timing[T]:
    """Run ``run`` ``repeat`` times and keep the fastest (wall clock, ``time.perf_counter``).

    ``prepare`` runs before each run, outside the timing (e.g. emptying an
    output directory the measured tool insists on creating). ``warmup`` runs
    go first and are not timed: a variant whose first run pays one-off costs
    (imports in fresh worker processes, first-use caches) would otherwise have
    one run fewer in the running for the fastest than a peer that pays none.
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    best: Timing[T] | None = None
    for attempt in range(1 - warmup, repeat + 1):  # attempts up to 0 are the warm-up runs
        if prepare is not None:
            prepare()
        cpu_start, start = _cpu_seconds(), time.perf_counter()
        result = run()
        elapsed, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
        if attempt < 1:
            say(f"  {label}: warm-up {attempt + warmup}/{warmup} {elapsed:.2f} s (not counted)")
            continue
        say(f"  {label}: run {attempt}/{repeat} {elapsed:.2f} s")
        if best is None or elapsed < best.seconds:
            best = Timing(elapsed, cpu, result)
    assert best is not None
    return best


def per_second(amount: float, seconds: float) -> float:
    """A throughput; zero time (a clock too coarse for a tiny input) reports as infinite, never a crash."""
    return amount / seconds if seconds > 0 else float("inf")


def emit(benchmark: str, metrics: Mapping[str, float | int | str | None], ratios: Mapping[str, float | None]) -> None:
    """Print the benchmark's one JSON result line on stdout."""
    line = {"benchmark": benchmark, "metrics": dict(metrics), "ratios": dict(ratios)}
    sys.stdout.write(orjson.dumps(line).decode() + "\n")
    sys.stdout.flush()
