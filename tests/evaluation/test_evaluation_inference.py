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
from tests.support.fake_llm_server import FakeLLMServer, Fault, fake_client, prompt_of

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
                        " 'fp', NULL, NULL, NULL)",
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


def test_only_a_whole_abstention_is_no_without_the_judge_an_answer_holding_a_refusal_phrase_is_judged(
    wh: Warehouse, server: FakeLLMServer,
) -> None:
    server.answer("Velna Bridge open?", "I don't know why it took so long, but it opened in 1871.")
    server.answer("Tarsk Cathedral", "**None**")
    server.answer("Mirra", "No answer was given by the survey office.")
    client = fake_client(wh, server)
    answer_instances(wh, client, "e", "closed_book", "en", "fake", InferenceConfig(), "fp")
    asked = len(server.calls)
    # a lax judge: says yes to whatever it is asked
    server.answer("You check answers against a reference text.", "<supported>yes</supported>")
    judge_responses(wh, client, "e", "closed_book", "en", "fake", "fake", "support", JudgeConfig(), "fpj")
    verdicts = {r["instance_id"]: (r["verdict"], r["reason"])
                for r in wh.query_dicts("SELECT * FROM judgements WHERE benchmark = 'e'")}
    # the two answers holding "i don't know" / "no answer" went to the judge, which decided; "None" did not
    assert verdicts == {"de:7:closed_book:en": ("yes", None), "de:9:closed_book:en": ("yes", None),
                        "de:8:closed_book:en": ("no", "an abstention: no, without asking the judge")}
    assert len(server.calls) - asked == 2


# (instance_id, setting, lang, question, documents)
XRAG_DOCUMENTS = [{"doc_id": "q1-0", "title": "", "date": "2024-06-03", "role": "support",
                   "text": "Die Velna-Brücke wurde 1871 eröffnet."},
                  {"doc_id": "q1-1", "title": "Pellow Tunnel", "date": None, "role": "support",
                   "text": "The Pellow Tunnel opened in 1868."}]
XRAG_INSTANCES = [
    ("q1|monolingual_retrieval|de", "monolingual_retrieval", "de", "Was wurde zuerst eröffnet?", XRAG_DOCUMENTS),
    ("q1|closed_book|en", "closed_book", "en", "Which opened first, the bridge or the tunnel?", []),
]


def _xrag_instances(wh: Warehouse) -> None:
    with wh.transaction() as cur:
        for instance_id, setting, lang, question, documents in XRAG_INSTANCES:
            cur.execute("INSERT INTO instances VALUES ('x', ?, 'q1', 'xrag', ?, ?, ?, 'Der Tunnel, 1868.', 'de', NULL,"
                        " NULL, ?, 0, 'fp', NULL, NULL, NULL)", [instance_id, setting, lang, question, json.dumps(documents)])


def test_xrag_shows_dated_articles_reads_the_answer_tag_and_no_retrieval_none_is_never_correct(
    wh: Warehouse, server: FakeLLMServer,
) -> None:
    _xrag_instances(wh)
    server.answer("Was wurde zuerst", "The first article dates the bridge to 1871 and the second dates the tunnel to"
                                      " 1868. So the tunnel opened three years before the bridge did.\n"
                                      "<answer>Der Pellow-Tunnel wurde zuerst eröffnet.</answer>")
    server.answer("the bridge or the tunnel", "I cannot tell from memory. <answer>None</answer>")
    client = fake_client(wh, server)
    for setting, lang in (("monolingual_retrieval", "de"), ("closed_book", "en")):
        answer_instances(wh, client, "x", setting, lang, "fake", InferenceConfig(), "fp")
    retrieval, closed = (prompt_of(server.calls_about(needle)[0].body) for needle in ("Was wurde", "or the tunnel"))
    assert "Article 1 (2024-06-03):\nDie Velna-Brücke" in retrieval  # the date when the document has one
    assert "Article 2 — Pellow Tunnel:\n" in retrieval  # and no date when it has none
    assert "German" in retrieval and "only what the articles say" in retrieval and "None" not in retrieval
    assert "write None as the whole answer" in closed and "<answer>" in closed
    answers = {r["setting"]: r["answer"] for r in wh.query_dicts("SELECT * FROM responses WHERE benchmark = 'x'")}
    assert answers == {"monolingual_retrieval": "Der Pellow-Tunnel wurde zuerst eröffnet.", "closed_book": "None"}
    # the language rule reads the tagged answer (German), not the English reasoning before it nor the tags
    assert wh.query("SELECT language_status, detected_lang FROM responses WHERE setting = 'monolingual_retrieval'") == [
        ("ok", "de")]
    asked = len(server.calls)
    server.answer("Reference answer:", "<correct>yes</correct>")  # a lax judge
    for setting, lang in (("monolingual_retrieval", "de"), ("closed_book", "en")):
        judge_responses(wh, client, "x", setting, lang, "fake", "fake", "correct", JudgeConfig(), "fpj")
    verdicts = {r["instance_id"]: r["verdict"] for r in wh.query_dicts("SELECT * FROM judgements WHERE benchmark = 'x'")}
    assert verdicts == {"q1|monolingual_retrieval|de": "yes", "q1|closed_book|en": "no"}
    assert len(server.calls) - asked == 1  # "None" was not put to the judge


def test_a_base_model_gets_completion_prompts_and_what_it_repeats_of_the_prompt_is_not_its_reply(
    wh: Warehouse, server: FakeLLMServer,
) -> None:
    _xrag_instances(wh)
    passages = [{"doc_id": "a#1", "title": "Velna", "text": "The Velna rises in the Kelda hills."},
                {"doc_id": "b#2", "title": "Mirra", "text": "The Mirra rises in the Ost hills."}]
    with wh.transaction() as cur:
        cur.execute("INSERT INTO instances VALUES ('m', 'q9', 'q9', 'mirage', 'rag', 'en', 'Where does the Velna rise?',"
                    " '', 'en', NULL, NULL, ?, 0, 'fp', NULL, NULL, NULL)", [json.dumps(passages)])
    # the endpoint ignores the stop sequences: the model runs on into the template
    server.answer("Was wurde", "Der Pellow-Tunnel.</answer>\nQuestion: Was wurde zuletzt eröffnet?")
    server.answer("Velna rise?", "It rises in the Kelda hills [a#1].\n##Answer: In the Kelda hills [a#1]\n"
                                 "Question: Where does the Mirra rise?\n\nPassages:\n[b#2] Mirra - The Mirra rises.")
    client = fake_client(wh, server, mode="completion")
    answer_instances(wh, client, "x", "monolingual_retrieval", "de", "fake", InferenceConfig(), "fp")
    answer_instances(wh, client, "m", "rag", "en", "fake", InferenceConfig(), "fp")
    bodies = [call.body for call in server.calls]
    assert len(bodies) == 2 and all("messages" not in body for body in bodies)  # completion prompts only
    xrag = next(body for body in bodies if "Was wurde" in body["prompt"])
    assert xrag["prompt"].endswith("Answer:") and xrag["stop"] == ["</answer>", "\n"]
    rows = {r["benchmark"]: r for r in wh.query_dicts("SELECT * FROM responses")}
    assert (rows["x"]["status"], rows["x"]["answer"]) == ("ok", "Der Pellow-Tunnel.")
    mirage = rows["m"]
    assert (mirage["status"], mirage["answer"], mirage["citations"]) == ("ok", "In the Kelda hills [a#1]", ["a#1"])
    assert mirage["raw_text"].endswith("The Mirra rises.")  # the reply is stored as it came
