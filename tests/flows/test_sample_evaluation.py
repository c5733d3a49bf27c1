"""The demo's evaluation shows something: on the bundled XRAG-format sample, judged by the reference judge, the
leaderboard and the arena place oracle above extractive above abstain with intervals that do not overlap.

Only the model-free baselines run (the demo adds the local model, too slow for a test), through the real flows:
import, inference, pointwise judging, scoring, pairwise judging and Bradley–Terry.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flows.arena import ArenaParams, arena_flow
from flows.evaluate import EvaluateParams, evaluate_flow
from tasks.arena.battles import ArenaConfig
from tasks.imports.common import import_dataset
from tasks.sample.xrag_sample import LANGS, load_questions, write_xrag_sample
from tasks.warehouse.db import Warehouse

pytestmark = pytest.mark.usefixtures("prefect_api")

SYSTEMS = ["oracle", "extractive", "abstain"]  # best first


def _apart(better: tuple[float | None, float | None], worse: tuple[float | None, float | None]) -> bool:
    """Whether interval ``better`` lies wholly above ``worse``; None is an open side (unbounded)."""
    return better[0] is not None and worse[1] is not None and better[0] > worse[1]


def test_on_the_bundled_xrag_sample_oracle_beats_extractive_beats_abstain_with_intervals_apart(home: Path) -> None:
    home.mkdir(parents=True)
    with Warehouse(home) as wh:
        import_dataset(wh, "xrag", write_xrag_sample(home / "xrag-sample.jsonl"), "xs", None)
        per_lang = dict(wh.query("SELECT lang, count(*) FROM instances WHERE benchmark = 'xs' GROUP BY ALL"))
    questions = len(load_questions())
    assert questions >= 30 and per_lang == {lang: questions for lang in LANGS}  # tens of questions per language

    evaluate_flow(EvaluateParams(benchmark="xs", models=SYSTEMS, judges=["reference-judge"], home=str(home)))
    with Warehouse(home) as wh:
        board = {row[0]: row[1:] for row in wh.query(
            "SELECT model, value, ci_low, ci_high, n FROM leaderboard WHERE benchmark = 'xs' AND metric = 'accuracy'"
            " AND lang = 'all' AND subset = 'all' AND setting = 'multilingual_retrieval'")}
    # the oracle's every answer is the gold, in the question's language: 100%; abstain declines everything: 0%
    assert board["oracle"][0] == 100.0 and board["abstain"][0] == 0.0
    assert 0.0 < board["extractive"][0] < 100.0
    assert {model: row[3] for model, row in board.items()} == dict.fromkeys(SYSTEMS, 2 * questions)
    for better, worse in zip(SYSTEMS, SYSTEMS[1:]):
        assert _apart(board[better][1:3], board[worse][1:3]), (better, worse, board)

    arena_flow(ArenaParams(benchmark="xs", models=SYSTEMS, judge="reference-judge",
                           arena=ArenaConfig(queries_per_lang=questions), bootstrap=100, home=str(home)))
    with Warehouse(home) as wh:
        rated = {row[0]: row[1:] for row in wh.query(
            "SELECT model, rank_low, rank_high FROM arena_ratings WHERE benchmark = 'xs'"
            " AND judge = 'reference-judge' AND lang = 'all'")}
        statuses = dict(wh.query("SELECT status, count(*) FROM battles WHERE benchmark = 'xs' GROUP BY ALL"))
    # every question, each of the 3 pairs in both orders, every verdict read
    assert statuses == {"ok": 2 * questions * 3 * 2}
    # the rank intervals of the bootstrap are single, ordered ranks: no tournament swaps two of them (the oracle never
    # loses and abstain never wins, so their ratings are open on one side: the ranks are the intervals that compare)
    assert {model: rated[model] for model in SYSTEMS} == {"oracle": (1, 1), "extractive": (2, 2), "abstain": (3, 3)}

