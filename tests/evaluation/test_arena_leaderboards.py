"""The leaderboards view: evaluation metrics and arena ratings in one table, predicted ratings marked as such."""

from __future__ import annotations

from pathlib import Path

from tasks.arena.standings import RATING_COLUMNS
from tasks.warehouse.db import Warehouse

COLUMNS = RATING_COLUMNS.split(", unbounded,")[0] + ")"  # the columns every arena_ratings row has
OUTCOME_COLUMNS = RATING_COLUMNS.split(", judged_pairs,")[0] + ")"  # and the arena's outcomes (sql/017)


def test_a_rating_predicted_from_features_is_marked_in_the_leaderboards_view(home: Path) -> None:
    home.mkdir(parents=True)
    with Warehouse(home) as wh:
        with wh.transaction() as cur:
            cur.execute("INSERT INTO leaderboard (benchmark, setting, lang, subset, model, metric, value, ci_low,"
                        " ci_high, n, mode, judges, fingerprint) VALUES ('m', 'rag', 'all', 'all', 's1', 'token_f1',"
                        " 0.5, 0.4, 0.6, 10, 'strict', [], 'fp')")
            cur.executemany(f"INSERT INTO arena_ratings {COLUMNS} VALUES ('m', 'judge', 'all', ?, ?, ?, ?, ?, ?, ?,"
                            " 'drop', ?, ?, 'fp', ?)",
                            [["s1", 0.7, 0.5, 0.9, 1, 1, 12, 1.0, 0.5, False],
                             ["s2", -0.7, -0.9, -0.5, 2, 2, 12, 1.0, 0.5, False],
                             ["s3", 0.1, -0.2, 0.4, 2, 2, 0, None, None, True]])
        rows = wh.query("SELECT setting, model, metric, value, rank_low, n, source, predicted FROM leaderboards"
                        " WHERE benchmark = 'm' ORDER BY setting, model")
    assert rows == [
        ("arena", "s1", "bt_rating", 0.7, 1, 12, "judge:judge", False),
        ("arena", "s2", "bt_rating", -0.7, 2, 12, "judge:judge", False),
        ("arena", "s3", "bt_rating", 0.1, 2, 0, "judge:judge", True),
        ("rag", "s1", "token_f1", 0.5, None, 10, "strict", False),
    ]


def test_an_arena_rating_shows_its_unanswered_queries_and_its_open_side_in_the_leaderboards_view(home: Path) -> None:
    home.mkdir(parents=True)
    with Warehouse(home) as wh:
        with wh.transaction() as cur:
            cur.executemany(f"INSERT INTO arena_ratings {OUTCOME_COLUMNS} VALUES ('m', 'judge', 'all', ?, ?, ?, ?, ?,"
                            " ?, ?, 'drop', ?, ?, 'fp', ?, ?, ?)",
                            [["s1", None, None, None, 1, 1, 12, 1.0, 0.5, False, "high", 0],
                             ["s2", 0.2, -0.1, None, 2, 2, 12, 1.0, 0.5, False, "high", 1],
                             ["s3", -0.2, -0.5, 0.1, 3, 3, 12, 1.0, 0.5, False, None, 4]])
        rows = wh.query("SELECT model, value, ci_high, failed, answered, unbounded FROM leaderboards"
                        " WHERE benchmark = 'm' ORDER BY model")
    assert rows == [("s1", None, None, 0, None, "high"), ("s2", 0.2, None, 1, None, "high"),
                    ("s3", -0.2, 0.1, 4, None, None)]
