"""XRAG's leaderboard rows from stored responses and verdicts: a failed response, a judge that failed and an
answer whose language went unchecked are all counted, and none of them raises a score (numbers by hand below).

The rows are written as inference and judging store them (a failed response has ``no_response`` judgements;
a judge whose call failed has a row without a verdict; a judge whose cell never ran has no row at all).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tasks.metrics.leaderboard import ScoringConfig, score_model
from tasks.warehouse.db import Warehouse

SETTING = "multilingual_retrieval"
PANEL = ["j1", "j2", "j3"]
# (item, lang) → (response status, language_status, detected language, {judge: verdict or a failed status})
RESPONSES = {
    ("q1", "en"): ("ok", "ok", "en", {"j1": "yes", "j2": "yes", "j3": "yes"}),           # correct (the baseline)
    ("q1", "de"): ("ok", "ok", "de", {"j1": "yes", "j2": "yes", "j3": "call_failed"}),   # 2 of 3 yes: correct
    ("q2", "de"): ("ok", "ok", "de", {"j1": "yes", "j2": "parse_failed"}),               # 1 of 3 yes: incorrect
    ("q2", "zh"): ("call_failed", None, None, {j: "no_response" for j in PANEL}),        # failed: incorrect
    ("q3", "zh"): ("ok", "unchecked", None, {"j1": "yes", "j2": "yes", "j3": "no"}),     # correct; not checked
    ("q3", "de"): ("ok", "ok", "en", {"j1": "yes", "j2": "yes", "j3": "yes"}),           # wrong language: incorrect
}


@pytest.fixture
def xrag_home(home: Path) -> Path:
    home.mkdir(parents=True)
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('x', 'xrag', ['en', 'de', 'zh'], 'g', '{}', now())")
        for (item, lang), (status, language_status, detected, verdicts) in RESPONSES.items():
            instance = f"{item}:{SETTING}:{lang}"
            cur.execute("INSERT INTO instances (benchmark, instance_id, item_id, recipe, setting, lang, question, answer,"
                        " source_lang, documents, seed, fingerprint) VALUES ('x', ?, ?, 'xrag', ?, ?, 'Q?', 'A', 'en',"
                        " '[]', 0, 'fp')", [instance, item, SETTING, lang])
            cur.execute("INSERT INTO responses (benchmark, instance_id, model, setting, lang, status, reason, answer,"
                        " citations, template, fingerprint, language_status, detected_lang)"
                        " VALUES ('x', ?, 'm', ?, ?, ?, ?, ?, [], 't', 'fp', ?, ?)",
                        [instance, SETTING, lang, status, None if status == "ok" else "endpoint unreachable",
                         "an answer" if status == "ok" else None, language_status, detected])
            for judge, said in verdicts.items():
                verdict = said if said in ("yes", "no") else None
                cur.execute("INSERT INTO judgements (benchmark, instance_id, model, judge, kind, verdict, status,"
                            " fingerprint) VALUES ('x', ?, 'm', ?, 'correct', ?, ?, 'fp')",
                            [instance, judge, verdict, "ok" if verdict else said])
    return home


def _rows(home: Path) -> dict[tuple[str, str], tuple]:
    with Warehouse(home) as wh:
        rows = wh.query("SELECT lang, metric, value, n, answered, failed, judge_failed FROM leaderboard"
                        " WHERE benchmark = 'x' AND model = 'm' AND subset = 'all'")
    return {(lang, metric): tuple(rest) for lang, metric, *rest in rows}


def test_failed_responses_missing_verdicts_and_unchecked_languages_are_counted_and_never_credited(
        xrag_home: Path) -> None:
    with Warehouse(xrag_home) as wh:
        out = score_model(wh, "x", "xrag", "m", PANEL, ScoringConfig(resamples=50), "fp")
    rows = _rows(xrag_home)
    # German: q1 ✓ (2 of 3), q2 ✗ (1 of 3: the missing verdicts are not yes), q3 ✗ (English answer): 1 of 3;
    # all three answered, two with an incomplete panel (q1, q2)
    assert rows[("de", "accuracy")] == (pytest.approx(100 / 3), 3, 3, 0, 2)
    # Chinese: q2 failed (in the denominator, incorrect), q3 ✓
    assert rows[("zh", "accuracy")] == (pytest.approx(50.0), 2, 1, 1, 0)
    # all: German and Chinese only (English is the baseline row): 2 correct of 5
    assert rows[("all", "accuracy")] == (pytest.approx(40.0), 5, 4, 1, 2)
    assert rows[("en", "accuracy")] == (pytest.approx(100.0), 1, 1, 0, 0)
    # shares of the 4 answered responses of the pool: q3 in Chinese went unchecked, q3 in German is in English
    assert rows[("all", "unchecked")][:2] == (pytest.approx(25.0), 4)
    assert rows[("all", "wrong_language")][:2] == (pytest.approx(25.0), 4)
    with Warehouse(xrag_home) as wh:  # the counts are in the view every leaderboard reads, too
        assert wh.query("SELECT answered, failed, judge_failed FROM leaderboards WHERE benchmark = 'x' AND lang = 'zh'"
                        " AND subset = 'all' AND metric = 'accuracy'") == [(1, 1, 0)]
    assert "1 of 6 responses failed (call_failed: endpoint unreachable)" in out.message
    assert "2 answer(s) lack a judge's verdict" in out.message and "1 answer(s) whose language could not be told" \
        in out.message


def test_with_judge_failures_excluded_only_the_answer_the_missing_verdicts_decide_leaves_the_denominator(
        xrag_home: Path) -> None:
    with Warehouse(xrag_home) as wh:
        score_model(wh, "x", "xrag", "m", PANEL, ScoringConfig(resamples=50, judge_failures="exclude"), "fp")
    rows = _rows(xrag_home)
    # q2 de is left out (its missing verdicts decide it); q1 de is decided (2 of 3) and stays; the failed q2 zh stays
    assert rows[("de", "accuracy")][:2] == (pytest.approx(50.0), 2)
    assert rows[("all", "accuracy")] == (pytest.approx(50.0), 4, 4, 1, 2)  # 2 of 4, the counts unchanged
