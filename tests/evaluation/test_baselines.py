"""The model-free baselines: abstain declines; extractive copies the likeliest sentence from the shown passages;
oracle answers with the gold; the reference judge compares with it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tasks.arena.battles import ArenaConfig, judge_battles
from tasks.baselines.backend import BaselineBackend
from tasks.errors import ConfigError
from tasks.inference.gold import Gold, check_gold_readers, gold_for, gold_shown_to
from tasks.inference.prompting import InferenceConfig, instance_request
from tasks.inference.reading import answer_section, citations
from tasks.inference.respond import answer_instances
from tasks.judging.pointwise import JudgeConfig, judge_responses
from tasks.llm import ChatMessage, LLMClient, LLMRequest, ModelSpec
from tasks.llm.cache import request_hash
from tasks.llm.registry import Registry, default_registry
from tasks.warehouse.db import Warehouse

EXTRACTIVE = ModelSpec(name="extractive", backend="baseline", model="extractive", mode="chat")
DOCUMENTS = ('[{"doc_id": "36897421#2", "title": "Velna", "role": "support",'
             ' "text": "The Velna rises in the Kelda hills. It is 212 km long."},'
             ' {"doc_id": "555#0", "title": "Tarsk", "role": "distractor", "text": "Tarsk is a town on the coast."}]')


def _reply(instance: dict) -> str:
    _, request = instance_request(EXTRACTIVE, {"setting": "rag"} | instance, InferenceConfig())
    return asyncio.run(BaselineBackend(EXTRACTIVE).complete(request)).text


def test_on_a_mirage_prompt_it_cites_the_passage_sharing_most_words_with_the_question() -> None:
    reply = _reply({"recipe": "mirage", "question": "Where does the Velna rise?", "lang": "en",
                    "documents": DOCUMENTS, "prompt_hint": None})
    # the Velna passage shares "the" and "velna" with the question, the Tarsk one only "the": its first sentence, cited
    assert answer_section(reply) == "The Velna rises in the Kelda hills. [36897421#2]"
    assert citations(reply) == ["36897421#2"] and reply.startswith("##Reason:")


def test_with_plain_documents_it_answers_the_sentence_alone_and_closed_book_it_declines() -> None:
    documents = '[{"lang": "en", "page_id": 7, "title": "Tarsk", "text": "Tarsk is a town on the coast. It has a port."}]'
    assert _reply({"recipe": "xrag", "question": "Which town lies on the coast?", "lang": "en",
                   "documents": documents, "prompt_hint": None}) == "Tarsk is a town on the coast."
    assert _reply({"recipe": "mkqa", "question": "Who wrote it?", "lang": "en", "documents": "[]",
                   "prompt_hint": None}) == "I don't know."


# --- oracle and reference judge: the gold reaches them beside the request, never in it --------------------------

GOLD_DOCUMENTS = json.dumps([
    {"doc_id": "q1-1", "title": "", "role": "distractor", "text": "Die Mirra ist ein Nebenfluss der Velna."},
    {"doc_id": "q1-0", "title": "", "role": "support", "text": "Die Velna ist 412 Kilometer lang."},
    {"doc_id": "q1-2", "title": "", "role": "support", "text": "The Mirra is 138 kilometres long."}])
MKQA_GOLD = json.dumps([{"type": "number_with_unit", "text": "412 Kilometer", "entity": None, "aliases": ["412 km"]}])
UNANSWERABLE = json.dumps([{"type": "unanswerable", "text": None, "entity": None, "aliases": []}])


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    """Three instances: an XRAG one (two supporting passages of three), an MKQA one and an unanswerable MKQA one."""
    with Warehouse(tmp_path / "home") as warehouse:
        with warehouse.transaction() as cur:
            for instance_id, recipe, setting, question, answer, documents, gold in (
                    ("q1", "xrag", "multilingual_retrieval", "Welcher Fluss ist länger, die Velna oder die Mirra?",
                     "Die Velna ist länger.", GOLD_DOCUMENTS, None),
                    ("m1", "mkqa", "closed_book", "Wie lang ist die Velna?", "412 Kilometer", "[]", MKQA_GOLD),
                    ("m2", "mkqa", "closed_book", "Wer baute die Velna?", "", "[]", UNANSWERABLE)):
                cur.execute("INSERT INTO instances (benchmark, instance_id, item_id, recipe, setting, lang, question,"
                            " answer, source_lang, documents, seed, fingerprint, gold)"
                            " VALUES ('b', ?, ?, ?, ?, 'de', ?, ?, 'de', ?, 0, 'fp', ?)",
                            [instance_id, instance_id, recipe, setting, question, answer, documents, gold])
        yield warehouse


def _answered(wh: Warehouse, model: str, setting: str) -> dict[str, dict]:
    answer_instances(wh, LLMClient(wh, default_registry()), "b", setting, "de", model, InferenceConfig(), "fp")
    return {r["instance_id"]: r for r in wh.query_dicts("SELECT * FROM responses WHERE model = ?", [model])}


def test_the_oracle_answers_with_the_gold_answer_citing_the_gold_passages(wh: Warehouse) -> None:
    rag = _answered(wh, "oracle", "multilingual_retrieval")["q1"]
    # the two passages with role support, in the order shown (q1-0 second, q1-2 third), not the distractor q1-1
    assert (rag["status"], rag["answer"], rag["citations"]) == ("ok", "Die Velna ist länger. [q1-0, q1-2]",
                                                                 ["q1-0", "q1-2"])
    closed = _answered(wh, "oracle", "closed_book")
    # MKQA: its first gold text in the question's language, nothing to cite; no short answer → the baselines' decline
    assert (closed["m1"]["answer"], closed["m1"]["citations"]) == ("412 Kilometer", [])
    assert closed["m2"]["answer"] == "I don't know."


def test_asked_without_the_gold_the_oracle_fails_the_call_instead_of_answering(wh: Warehouse) -> None:
    client = LLMClient(wh, default_registry())
    request = LLMRequest(messages=(ChatMessage(role="user", content="Write a question about the Velna."),))
    [result] = client.run_sync("oracle", [request], stage="qa")
    assert result.status == "failed" and result.attempts == 1  # permanent: not retried
    assert "answers only requests about benchmark instances" in result.error


def test_the_gold_is_handed_to_baselines_only_and_leaves_requests_unchanged(wh: Warehouse) -> None:
    request = LLMRequest(messages=(ChatMessage(role="user", content="Welcher Fluss ist länger?"),))
    real = ModelSpec(name="served", backend="openai", model="m", base_url="http://127.0.0.1:9/v1")
    oracle = default_registry().get("oracle")
    before = request_hash(real, request), request_hash(oracle, request)
    for spec in (real, EXTRACTIVE):  # a real model's batch carries no gold, nor a baseline's that does not read it
        with gold_shown_to(wh, spec, "b", [("q1", ())], [request]):
            assert gold_for(request) is None
    with gold_shown_to(wh, oracle, "b", [("q1", ())], [request]):
        assert gold_for(request) == Gold("de", ("Die Velna ist länger.",), ("q1-0", "q1-2"))
        assert (request_hash(real, request), request_hash(oracle, request)) == before
    assert gold_for(request) is None  # only while the batch runs


def _respond(wh: Warehouse, answers: dict[str, str]) -> None:
    with wh.transaction() as cur:
        for model, answer in answers.items():
            cur.execute("INSERT INTO responses (benchmark, instance_id, model, setting, lang, status, answer, citations,"
                        " template, fingerprint) VALUES ('b', 'q1', ?, 'multilingual_retrieval', 'de', 'ok', ?, [],"
                        " 'answer_with_documents', 'fp')", [model, answer])


def test_the_reference_judge_says_yes_when_the_answer_holds_half_the_gold_tokens(wh: Warehouse) -> None:
    # gold "Die Velna ist länger." → tokens velna, ist, länger (German articles dropped); yes from 2 of 3 (≥ 0.5)
    answers = {"longer": "Die Velna ist länger als die Mirra, mit 412 Kilometern.",  # 3 of 3: extra detail is fine
               "most": "Die Velna ist es.",  # velna, ist: 2 of 3
               "wrong": "Die Mirra ist länger.",  # ist, länger: 2 of 3 — a yes for a wrong answer: it reads words
               "other": "Die Mirra fließt nach Tarsk."}  # 0 of 3
    _respond(wh, answers)
    client = LLMClient(wh, default_registry())
    for model in answers:
        judge_responses(wh, client, "b", "multilingual_retrieval", "de", model, "reference-judge", "correct",
                        JudgeConfig(), "fp")
    verdicts = {r["model"]: (r["verdict"], r["status"], r["justification"])
                for r in wh.query_dicts("SELECT * FROM judgements")}
    said = "The answer holds {:.0%} of the reference answer's words (at least 50% needed)."
    assert verdicts == {"longer": ("yes", "ok", said.format(1)), "most": ("yes", "ok", said.format(2 / 3)),
                        "wrong": ("yes", "ok", said.format(2 / 3)), "other": ("no", "ok", said.format(0))}
    # the reply is the JSON object a judge is asked for, stored as given
    assert json.loads(wh.scalar("SELECT raw_text FROM judgements WHERE model = 'other'"))["verdict"] == "no"


def test_the_reference_judge_prefers_the_higher_token_f1_and_ties_equal_ones(wh: Warehouse) -> None:
    # gold tokens: velna, ist, länger
    _respond(wh, {"exact": "Die Velna ist länger. [q1-0]",                     # citation stripped: F1 1
                  "close": "Die Velna ist mit 412 Kilometern der längste Fluss.",
                  # close: velna ist mit 412 kilometern längste fluss → 2 common, P 2/7, R 2/3, F1 = 0.8/2 = 0.4
                  "silent": "Ich weiß es nicht.",                              # F1 0
                  "off": "Tarsk liegt an der Mirra."})                         # F1 0
    models = ["exact", "close", "silent", "off"]
    judge_battles(wh, LLMClient(wh, default_registry()), "b", "de", models, "reference-judge",
                  ArenaConfig(queries_per_lang=5), "fp")
    won = {(r["model_a"], r["model_b"]): (r["winner"], r["status"]) for r in wh.query_dicts("SELECT * FROM battles")}
    assert won[("exact", "close")] == ("a", "ok") and won[("close", "exact")] == ("b", "ok")
    assert won[("close", "silent")] == ("a", "ok") and won[("silent", "close")] == ("b", "ok")
    assert won[("silent", "off")] == ("tie", "ok") and won[("off", "silent")] == ("tie", "ok")
    reason = wh.scalar("SELECT justification FROM battles WHERE model_a = 'close' AND model_b = 'exact'")
    assert reason == "Token F1 against the reference answer: A 0.40, B 1.00."


def test_as_a_completion_model_the_reference_judge_answers_the_same_structured_form(wh: Warehouse) -> None:
    _respond(wh, {"right": "Die Velna ist länger."})
    judge = ModelSpec(name="reference-judge", backend="baseline", model="reference-judge", mode="completion")
    client = LLMClient(wh, Registry(models=(judge,), source="test"))
    judge_responses(wh, client, "b", "multilingual_retrieval", "de", "right", "reference-judge", "correct",
                    JudgeConfig(), "fp")
    assert wh.query("SELECT verdict, status FROM judgements") == [("yes", "ok")]


def test_without_a_gold_answer_the_reference_judge_fails_the_call_and_refuses_a_benchmark_with_none(
        wh: Warehouse) -> None:
    with wh.transaction() as cur:  # a MIRACL-like benchmark: passages and a question, no answer
        cur.execute("INSERT INTO instances (benchmark, instance_id, item_id, recipe, setting, lang, question, answer,"
                    " source_lang, documents, seed, fingerprint, gold) VALUES ('passages', 'p1', 'p1', 'mirage',"
                    " 'oracle', 'de', 'Wie lang ist die Velna?', '', 'de', ?, 0, 'fp', NULL)", [GOLD_DOCUMENTS])
        cur.execute("INSERT INTO responses (benchmark, instance_id, model, setting, lang, status, answer, citations,"
                    " template, fingerprint) VALUES ('passages', 'p1', ?, 'oracle', 'de', 'ok', ?, [], 't', 'fp')",
                    ["x", "Die Velna ist 412 Kilometer lang."])
    judge_responses(wh, LLMClient(wh, default_registry()), "passages", "oracle", "de", "x", "reference-judge",
                    "correct", JudgeConfig(), "fp")
    verdict, status, reason = wh.query("SELECT verdict, status, reason FROM judgements WHERE benchmark = 'passages'")[0]
    assert (verdict, status) == (None, "call_failed") and "no gold answer" in reason  # never a made-up "no"
    registry = default_registry()
    with pytest.raises(ConfigError, match="benchmark 'passages' has no gold answers.*reference-judge"):
        check_gold_readers(wh, registry, ["local", "reference-judge", "imported-system"], "passages")
    check_gold_readers(wh, registry, ["reference-judge"], "b")  # a benchmark with gold answers is fine
