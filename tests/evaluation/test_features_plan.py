"""Where the features stage computes a deterministic feature: one batch here, or tasks of ``CHUNK`` pairs on Dask."""

from __future__ import annotations

import gc
import pickle
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from tasks.features import compute
from tasks.features.deterministic import DETERMINISTIC, OVERLAP
from tasks.features.inputs import FeatureInput

ANSWERS = ("The bridge was opened in 1891.", "A bridge opened in 1891 over the river.", "It opened in 1890.",
           "The old bridge over the river opened in 1891.", "Nobody knows.")


def _inputs(count: int, langs: Sequence[str] = ("en",)) -> list[FeatureInput]:
    """``count`` responses of five systems to instances whose reference is the first answer, the instances'
    languages taking turns; the fourth system's call failed (no score, no pair to send)."""
    return [FeatureInput(str(n // 5), f"sys{n % 5}", langs[n // 5 % len(langs)], "When?",
                         "call_failed" if n % 5 == 3 else "ok", ANSWERS[n % 5], ANSWERS[n % 5], ANSWERS[n % 5],
                         ("d1",), frozenset({"d1"}), {}, ANSWERS[0], False, "ok", 0.9, 0.05, 0.0)
            for n in range(count)]


@pytest.fixture
def mapped(monkeypatch: pytest.MonkeyPatch) -> list[list[dict[str, int]]]:
    """Per map, the pairs each task sends by language (computed in this process), two tasks able to run at once."""
    calls: list[list[dict[str, int]]] = []

    def recording(fn: Callable[..., Any], items: Sequence[bytes], *, scatter: bool = False, **kwargs: Any) -> list[Any]:
        assert scatter  # megabytes of pairs go straight to the workers
        calls.append([{lang: len(pairs) for lang, pairs in pickle.loads(item).items()} for item in items])
        return [fn(item, **kwargs) for item in items]

    monkeypatch.setattr(compute, "map_parallel", recording)
    monkeypatch.setattr(compute, "parallelism", lambda: 2)
    return calls


def test_a_batch_too_small_for_two_tasks_runs_here_without_asking_for_the_cluster(
        monkeypatch: pytest.MonkeyPatch, mapped: list[list[dict[str, int]]]) -> None:
    monkeypatch.setattr(compute, "CHUNK", 10)
    monkeypatch.setattr(compute, "parallelism", lambda: pytest.fail("a small batch must not start the cluster"))
    inputs = _inputs(19)  # one response short of two tasks of 10
    assert compute.deterministic_values(inputs, "answer_bleu") == DETERMINISTIC["answer_bleu"](inputs)
    assert mapped == []


@pytest.mark.parametrize("name", sorted(OVERLAP))
def test_a_large_batch_goes_in_tasks_of_chunk_pairs_whose_scores_come_back_in_order(
        monkeypatch: pytest.MonkeyPatch, mapped: list[list[dict[str, int]]], name: str) -> None:
    monkeypatch.setattr(compute, "CHUNK", 3)
    # 30 responses of 6 instances, en/de/zh in turn: 24 answered (4 a language); tasks of 3, the last taking the rest
    inputs = _inputs(30, ("en", "de", "zh"))
    values = compute.deterministic_values(inputs, name)
    assert mapped == [[{"en": 3}, {"en": 3}, {"en": 2, "de": 1}, {"de": 3}, {"de": 3}, {"de": 1, "zh": 2},
                       {"zh": 3}, {"zh": 3}]]
    assert values == DETERMINISTIC[name](inputs)
    assert len({value.value for value in values}) > 2  # the answers score differently: order is checked


def test_pairs_short_of_a_task_join_the_last_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compute, "CHUNK", 4)
    pairs = {"en": [("a", "b")] * 6, "de": [("c", "d")] * 3}
    assert [{lang: len(some) for lang, some in task.items()} for task in compute._tasks(pairs)] == [
        {"en": 4}, {"en": 2, "de": 3}]
    assert [{lang: len(some) for lang, some in task.items()} for task in compute._tasks({"en": pairs["en"][:3]})] == [
        {"en": 3}]


def test_the_cheap_features_never_leave_the_process(monkeypatch: pytest.MonkeyPatch,
                                                    mapped: list[list[dict[str, int]]]) -> None:
    monkeypatch.setattr(compute, "CHUNK", 1)
    for name in sorted(set(DETERMINISTIC) - set(OVERLAP)):
        compute.deterministic_values(_inputs(10), name)
    assert mapped == []


def test_one_worker_computes_the_whole_batch_in_one_piece(monkeypatch: pytest.MonkeyPatch,
                                                          mapped: list[list[dict[str, int]]]) -> None:
    monkeypatch.setattr(compute, "CHUNK", 2)
    monkeypatch.setattr(compute, "parallelism", lambda: 1)
    compute.deterministic_values(_inputs(10), "answer_rouge_l")
    assert mapped == []


def test_the_collector_is_paused_for_a_batch_and_left_as_it_was() -> None:
    assert gc.isenabled()
    with compute.paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError), compute.paused_gc():
        raise ValueError("a failed batch")
    assert gc.isenabled()
    gc.disable()
    try:
        with compute.paused_gc():
            pass
        assert not gc.isenabled()  # someone else had turned it off: not ours to turn on
    finally:
        gc.enable()
