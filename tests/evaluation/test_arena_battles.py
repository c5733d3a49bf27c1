"""Which battles the arena draws and rates: a sample that does not depend on who answered, a failure that is a loss,
and only this run's systems and languages in its ratings."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tasks.arena.battles import ArenaConfig, judge_battles
from tasks.arena.standings import rate
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer, fake_client

ANSWERS = {"s1": "The Velna [d1].", "s2": "The Orvik [d1].", "s3": "I don't know."}
QUALITY = {"Velna": 2, "Orvik": 1, "know": 0}
FAILED = {"s3": {"m:1", "m:3"}}  # s3's calls failed on these instances


def _judge(prompt: str) -> str:
    """Prefers the right river, then any river, then a refusal — in whichever position."""
    first = re.search(r"\[Answer A\]\n(.*)\n", prompt).group(1)
    second = re.search(r"\[Answer B\]\n(.*)\n", prompt).group(1)
    score = [next(v for k, v in QUALITY.items() if k in answer) for answer in (first, second)]
    return f"[[{'C' if score[0] == score[1] else 'A' if score[0] > score[1] else 'B'}]]"


def _respond(cur, instance: str, lang: str, model: str, answer: str, failed: bool) -> None:
    cur.execute("INSERT INTO responses VALUES ('m', ?, ?, 'rag', ?, ?, ?, ?, ?, ['d1'], 1, 1, 0.1, NULL,"
                " 'answer_mirage', 'fp', NULL, NULL, NULL, NULL, NULL)",
                [instance, model, lang, "call_failed" if failed else "ok", "endpoint unreachable" if failed else None,
                 None if failed else answer, None if failed else answer])


@pytest.fixture
def wh(tmp_path: Path, server: FakeLLMServer) -> Warehouse:
    documents = json.dumps([{"doc_id": "d1", "title": "Velna", "text": "The Velna is the river.", "role": "support"}])
    server.answer("[Answer A]", _judge)
    with Warehouse(tmp_path / "home") as warehouse:
        with warehouse.transaction() as cur:
            cur.execute("INSERT INTO qa_benchmarks VALUES ('m', 'mirage', ['en'], 'g', '{}', now())")
            for n in range(6):
                instance = f"m:{n}"
                cur.execute("INSERT INTO instances VALUES ('m', ?, ?, 'mirage', 'rag', 'en', ?, '', 'en', NULL, NULL,"
                            " ?, 0, 'fp', NULL, NULL, NULL)", [instance, instance, f"Which river, {n}?", documents])
                for model, answer in ANSWERS.items():
                    _respond(cur, instance, "en", model, answer, instance in FAILED.get(model, ()))
        yield warehouse


def _battles(wh: Warehouse) -> list[dict]:
    return wh.query_dicts("SELECT instance_id, model_a, model_b, winner, status FROM battles ORDER BY ALL")


def test_the_sample_does_not_depend_on_who_answered(wh: Warehouse, server: FakeLLMServer) -> None:
    client = fake_client(wh, server)
    config = ArenaConfig(queries_per_lang=3, seed=4)
    judge_battles(wh, client, "m", "en", ["s1", "s2"], "fake", config, "fp")
    alone = {row["instance_id"] for row in _battles(wh)}
    # s3 failed on two instances; before, the sample was drawn among the queries every system answered
    judge_battles(wh, client, "m", "en", ["s1", "s2", "s3"], "fake", config, "fp")
    assert {row["instance_id"] for row in _battles(wh)} == alone and len(alone) == 3


def test_a_system_without_an_answer_loses_to_each_system_that_answered(wh: Warehouse, server: FakeLLMServer) -> None:
    output = judge_battles(wh, fake_client(wh, server), "m", "en", ["s1", "s2", "s3"], "fake",
                           ArenaConfig(queries_per_lang=6), "fp")
    forfeits = [row for row in _battles(wh) if row["status"] == "forfeit"]
    # 2 failed queries x 2 rivals x 2 orders = 8 forfeits, each won by the system that answered, without a call;
    # the judge saw the other 6 x 6 - 8 = 28 ordered pairs
    assert len(forfeits) == 8 and len(server.calls) == 28
    assert all((row["winner"] == "a") == (row["model_b"] == "s3") for row in forfeits)
    assert {row["instance_id"] for row in forfeits} == FAILED["s3"]
    assert "no answer (a loss against each system that answered) on s3 2 queries" in output.message
    rate(wh, "m", "fake", ["s1", "s2", "s3"], ["en"], "half", 50, 0, "fp")
    rated = {r["model"]: r for r in wh.query_dicts("SELECT * FROM arena_ratings WHERE lang = 'all'")}
    assert {model: r["failed_queries"] for model, r in rated.items()} == {"s1": 0, "s2": 0, "s3": 2}
    assert rated["s1"]["n_battles"] == 36  # every pair of every sampled query, forfeits included


def test_only_this_runs_systems_and_languages_are_rated_and_earlier_battles_stay(wh: Warehouse,
                                                                                server: FakeLLMServer) -> None:
    client = fake_client(wh, server)
    judge_battles(wh, client, "m", "en", ["s1", "s2", "s3"], "fake", ArenaConfig(queries_per_lang=6), "fp")
    with wh.transaction() as cur:  # an earlier run's battles in another language, with a fourth system
        cur.executemany("INSERT INTO battles VALUES ('m', ?, 'de', 'fake', ?, ?, 'a', 'ok', NULL, NULL, NULL, 'old', NULL)",
                        [[f"de:{n}", "s4", "s1"] for n in range(5)])
    judge_battles(wh, client, "m", "en", ["s1", "s2"], "fake", ArenaConfig(queries_per_lang=6), "fp")
    # the s3 battles of the first run and the other language's stay in the table
    assert wh.scalar("SELECT count(*) FROM battles WHERE 's3' IN (model_a, model_b)") == 24
    assert wh.scalar("SELECT count(*) FROM battles WHERE lang = 'de'") == 5
    rate(wh, "m", "fake", ["s1", "s2"], ["en"], "drop", 20, 0, "fp")
    rows = wh.query("SELECT DISTINCT lang, model, n_battles FROM arena_ratings ORDER BY ALL")
    # 6 queries x 2 orders of (s1, s2): s1 always wins, so it is unbounded above and s2 below
    assert rows == [("all", "s1", 12), ("all", "s2", 12), ("en", "s1", 12), ("en", "s2", 12)]
    sides = dict(wh.query("SELECT model, unbounded FROM arena_ratings WHERE lang = 'all'"))
    assert sides == {"s1": "high", "s2": "low"}
    assert wh.scalar("SELECT count(*) FROM arena_ratings WHERE rating IS NULL") == 4


def test_the_judge_statistics_count_only_its_own_verdicts(wh: Warehouse, server: FakeLLMServer) -> None:
    """A judge that always picks the answer shown first, and cannot be read on one query: its statistics leave out
    the forfeits (s3 failed on two queries) and the unread replies, and count them."""
    server.answer("[Answer A]", lambda prompt: "[[A]]" if "river, 5?" not in prompt else "Both are fine.")
    judge_battles(wh, fake_client(wh, server), "m", "en", ["s1", "s2", "s3"], "fake", ArenaConfig(queries_per_lang=6),
                  "fp")
    output = rate(wh, "m", "fake", ["s1", "s2", "s3"], ["en"], "half", 50, 0, "fp")
    rows = wh.query_dicts("SELECT * FROM arena_ratings WHERE model = 's1' ORDER BY lang")
    # 6 queries x 6 ordered pairs = 36 battles: 8 forfeits (m:1, m:3 x 2 rivals of s3 x 2 orders), 6 unread (m:5),
    # 22 verdicts, all "A": 9 pairs on m:0, m:2, m:4 and (s1, s2) on m:1, m:3 = 11 pairs, each an order flip
    # → consistency 0/11 = 0.0, first shown chosen in 22 of 22 = 1.0 (with the forfeits: 4/15 and 26/30)
    assert [(r["lang"], r["consistency"], r["judged_pairs"], r["order_flips"], r["first_position_rate"],
             r["decisive_verdicts"], r["forfeits"], r["no_verdict"]) for r in rows] == [
        ("all", 0.0, 11, 11, 1.0, 22, 8, 6), ("en", 0.0, 11, 11, 1.0, 22, 8, 6)]
    assert ("judge consistency 0.00 over 11 pairs judged in both orders (11 order flips, rated as ties); first shown"
            " chosen in 1.00 of 22 decisive verdicts; left out: forfeits (no judge call) 8, battles without a"
            " verdict 6") in output.message
    # every s1-s2 battle is an order flip, two ties: the two are exactly tied and share one rank
    ranks = dict(wh.query("SELECT model, (rank_low, rank_high) FROM arena_ratings WHERE lang = 'all'"))
    assert ranks["s1"] == ranks["s2"]
