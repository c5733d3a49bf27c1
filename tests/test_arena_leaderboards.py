"""The leaderboards view: evaluation metrics and arena ratings in one table, predicted ratings marked as such."""

from __future__ import annotations

from pathlib import Path

from tasks.warehouse.db import Warehouse


def test_a_rating_predicted_from_features_is_marked_in_the_leaderboards_view(home: Path) -> None:
    home.mkdir(parents=True)
    with Warehouse(home) as wh:
        with wh.transaction() as cur:
            cur.execute("INSERT INTO leaderboard VALUES ('m', 'rag', 'all', 'all', 's1', 'token_f1', 0.5, 0.4, 0.6, 10,"
                        " 'strict', [], 'fp')")
            cur.execute("INSERT INTO arena_ratings VALUES ('m', 'judge', 'all', 's1', 0.7, 0.5, 0.9, 1, 1, 12, 'drop',"
                        " 1.0, 0.5, 'fp', FALSE)")
            cur.execute("INSERT INTO arena_ratings VALUES ('m', 'judge', 'all', 's2', -0.7, -0.9, -0.5, 2, 2, 12,"
                        " 'drop', 1.0, 0.5, 'fp', FALSE)")
            cur.execute("INSERT INTO arena_ratings VALUES ('m', 'judge', 'all', 's3', 0.1, -0.2, 0.4, 2, 2, 0, 'drop',"
                        " NULL, NULL, 'fp', TRUE)")
        rows = wh.query("SELECT setting, model, metric, value, rank_low, n, source, predicted FROM leaderboards"
                        " WHERE benchmark = 'm' ORDER BY setting, model")
    assert rows == [
        ("arena", "s1", "bt_rating", 0.7, 1, 12, "judge:judge", False),
        ("arena", "s2", "bt_rating", -0.7, 2, 12, "judge:judge", False),
        ("arena", "s3", "bt_rating", 0.1, 2, 0, "judge:judge", True),
        ("rag", "s1", "token_f1", 0.5, None, 10, "strict", False),
    ]
