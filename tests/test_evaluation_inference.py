"""Inference and pointwise judging over stored instances, against a loopback OpenAI-compatible endpoint.

The endpoint answers what each test scripts; the tests follow every instance
to its ``responses`` row and every response to its ``judgements`` row, and
count the requests the endpoint received.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.inference.prompting import InferenceConfig
from tasks.inference.respond import answer_instances
from tasks.judging.pointwise import JudgeConfig, judge_responses
from tasks.llm import Budget, BudgetLedger
from tasks.warehouse.db import Warehouse
from tests.fake_llm_server import FakeLLMServer, Fault, fake_client, prompt_of

# (instance_id, setting, lang, question, hint, judge_context)
INSTANCES = [
    ("de:7:closed_book:de", "closed_book", "de", "Wann wurde die Velna-Brücke eröffnet?", None,
     "Die Velna-Brücke wurde 1871 eröffnet."),
    ("de:7:closed_book:en", "closed_book", "en", "When did the Velna Bridge open?", None,
     "The Velna Bridge opened in 1871."),
    ("de:7:hint_source_title:en", "hint_source_title", "en", "When did the Velna Bridge open?",
     {"kind": "source_title", "source_lang": "de", "title": "Velna-Brücke"}, "The Velna Bridge opened in 1871."),
    ("de:8:closed_book:en", "closed_book", "en", "Who designed the Tarsk Cathedral?", None,
     "The Tarsk Cathedral was designed by Maren Tolk."),
    ("de:9:closed_book:en", "closed_book", "en", "How long is the Mirra?", None, "The Mirra is 86 km long."),
]


def _instances(wh: Warehouse) -> None:
    with wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('e', 'eclektic', ['de', 'en'], 'g', '{}', now())")
        for instance_id, setting, lang, question, hint, context in INSTANCES:
            item = ":".join(instance_id.split(":")[:2])
            cur.execute("INSERT INTO instances VALUES ('e', ?, ?, 'eclektic', ?, ?, ?, 'gold', 'de', ?, ?, '[]', 0,"
                        " 'fp', NULL)",
                        [instance_id, item, setting, lang, question, json.dumps(hint) if hint else None, context])


def _responses(wh: Warehouse) -> dict[str, dict]:
    return {r["instance_id"]: r for r in wh.query_dicts("SELECT * FROM responses WHERE benchmark = 'e'")}


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    with Warehouse(tmp_path / "home") as warehouse:
        _instances(warehouse)
        yield warehouse


def test_every_instance_is_a_response_row_with_its_status_and_where_it_came_from(wh: Warehouse,
                                                                                 server: FakeLLMServer) -> None:
    server.answer("Velna Bridge open?", "It opened in **1871**.")
    server.script("Tarsk Cathedral", Fault.with_status(400, "context length exceeded"))
    server.answer("Mirra", "   ")  # an empty reply: nothing to read
    client = fake_client(wh, server)
    answer_instances(wh, client, "e", "closed_book", "en", "fake", InferenceConfig(), "fp1")
    answer_instances(wh, client, "e", "hint_source_title", "en", "fake", InferenceConfig(), "fp2")
    rows = _responses(wh)
    assert set(rows) == {i[0] for i in INSTANCES if i[2] == "en"}  # the de cell was not asked
    bridge = rows["de:7:closed_book:en"]
    assert (bridge["status"], bridge["answer"], bridge["raw_text"]) == ("ok", "It opened in **1871**.",
                                                                         "It opened in **1871**.")
    assert bridge["template"] == "answer_closed_book" and bridge["citations"] == []
    assert wh.scalar("SELECT count(*) FROM llm_calls WHERE request_hash = ?", [bridge["request_hash"]]) == 1
    failed = rows["de:8:closed_book:en"]
    assert failed["status"] == "call_failed" and "context length exceeded" in failed["reason"]
    assert failed["answer"] is None and failed["raw_text"] is None
    assert rows["de:9:closed_book:en"]["status"] == "parse_failed"
    # the closed book shows the bare question; the title hint names the source language and article
    prompts = {prompt_of(call.body) for call in server.calls}
    assert "When did the Velna Bridge open?" in prompts
    hinted = next(p for p in prompts if "Velna-Brücke" in p)
    assert "German" in hinted and hinted.endswith("When did the Velna Bridge open?")


def test_each_response_stores_the_language_it_was_written_in(wh: Warehouse, server: FakeLLMServer) -> None:
    server.answer("Velna-Brücke", "The Velna Bridge was opened to traffic in the year 1871.")  # English, asked in German
    server.answer("Velna Bridge open?", "Die Brücke wurde im Jahr 1871 eröffnet. It was a big event for the town.")
    client = fake_client(wh, server)
    answer_instances(wh, client, "e", "closed_book", "de", "fake", InferenceConfig(), "fp")
    answer_instances(wh, client, "e", "closed_book", "en", "fake", InferenceConfig(), "fp")
    rows = _responses(wh)
    german_question = rows["de:7:closed_book:de"]
    assert (german_question["language_status"], german_question["detected_lang"]) == ("ok", "en")
    assert german_question["english_prob"] > 0.5 > german_question["target_prob"]
    assert german_question["switched_share"] == 1.0
    english_question = rows["de:7:closed_book:en"]
    assert english_question["detected_lang"] == "de" and english_question["switched_share"] == 0.5
    failed = rows["de:8:closed_book:en"]  # the echo server's reply holds no answer: nothing to identify
    assert failed["status"] == "parse_failed" and failed["language_status"] is None


def test_a_budget_stopped_cell_resumes_without_sending_a_request_twice(wh: Warehouse, server: FakeLLMServer) -> None:
    server.answer("?", "Maren Tolk")
    client = fake_client(wh, server)
    answer_instances(wh, client, "e", "closed_book", "en", "fake", InferenceConfig(), "fp",
                     budget=BudgetLedger(Budget(max_calls=2)))
    statuses = sorted(r["status"] for r in _responses(wh).values())
    assert statuses == ["ok", "ok", "skipped_budget"] and len(server.calls) == 2
    answer_instances(wh, client, "e", "closed_book", "en", "fake", InferenceConfig(), "fp")
    assert sorted(r["status"] for r in _responses(wh).values()) == ["ok", "ok", "ok"]
    bodies = [json.dumps(call.body, sort_keys=True) for call in server.calls]
    assert len(bodies) == 3 and len(set(bodies)) == 3  # the two paid answers came from the call cache


def test_sampling_parameters_reach_the_endpoint_and_key_the_cache(wh: Warehouse, server: FakeLLMServer) -> None:
    server.answer("?", "1871")
    client = fake_client(wh, server)
    answer_instances(wh, client, "e", "closed_book", "de", "fake", InferenceConfig(temperature=0.7, seed=3), "fp")
    answer_instances(wh, client, "e", "closed_book", "de", "fake", InferenceConfig(temperature=0.7, seed=4), "fp")
    assert [(call.body["temperature"], call.body["seed"]) for call in server.calls] == [(0.7, 3), (0.7, 4)]


def test_the_support_judge_reads_the_context_not_the_gold_and_failed_responses_are_not_judged(
    wh: Warehouse, server: FakeLLMServer,
) -> None:
    server.answer("Velna Bridge open?", "It opened in 1871.")
    server.script("Tarsk Cathedral", Fault.with_status(400, "refused"))
    server.answer("Mirra", "I don't know.")
    client = fake_client(wh, server)
    answer_instances(wh, client, "e", "closed_book", "en", "fake", InferenceConfig(), "fp")
    asked = len(server.calls)
    server.answer("Answer: It opened in 1871.", "The text says 1871.\n**Verdict:** <supported>YES</supported>")
    server.answer("Answer: I don't know.", "<supported>yes</supported>")  # a lax judge: never asked about a refusal
    judge_responses(wh, client, "e", "closed_book", "en", "fake", "fake", "support", JudgeConfig(), "fpj")
    verdicts = {r["instance_id"]: (r["verdict"], r["status"])
                for r in wh.query_dicts("SELECT * FROM judgements WHERE benchmark = 'e'")}
    assert verdicts == {"de:7:closed_book:en": ("yes", "ok"), "de:9:closed_book:en": ("no", "ok"),
                        "de:8:closed_book:en": (None, "no_response")}
    judge_prompts = [prompt_of(call.body) for call in server.calls[asked:]]
    assert len(judge_prompts) == 1  # neither the failed response nor the refusal was sent to the judge
    assert all("gold" not in p for p in judge_prompts)  # the gold answer is never shown
    assert any("The Velna Bridge opened in 1871." in p for p in judge_prompts)  # the context is
