"""The QA flows end to end on the bundled sample, against a loopback OpenAI-compatible endpoint.

The model is named in the home's ``models.yaml`` exactly as a user would point
babelbench at vLLM or Ollama, so these tests also show that an endpoint is a
registry entry, not a code change.  The endpoint answers like a chat model
(tests/support/chat_replies.py), or says what a test scripts; the tests count the
requests it received.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from mlflow.tracking import MlflowClient
from typer.testing import CliRunner

from flows.cli import app
from flows.qa import InstancesParams, QaBuildParams, TranslateParams, instances_flow, qa_build_flow, translate_flow
from tasks.instances.build import InstanceConfig
from tasks.llm import Budget
from tasks.qa.eclektic import context_of
from tasks.tracking import tracking_uri
from tasks.warehouse.db import Warehouse
from tests.support import chat_replies
from tests.support.fake_llm_server import FakeLLMServer, Fault

pytestmark = pytest.mark.usefixtures("prefect_api")
LANGS = ["en", "de", "fr", "ja", "zh"]


@pytest.fixture
def qa_home(sample_home: Path, server: FakeLLMServer) -> Path:
    """The ingested sample with a registry naming the loopback endpoint ``fake``, which answers like a chat model."""
    chat_replies.install(server)
    entry = {"name": "fake", "backend": "openai", "model": "served-model", "base_url": server.base_url, "mode": "chat",
             "max_concurrency": 2, "timeout": 20}
    (sample_home / "models.yaml").write_text(yaml.safe_dump({"models": [entry]}))
    return sample_home


def _bodies(server: FakeLLMServer) -> list[str]:
    return [json.dumps(call.body, sort_keys=True) for call in server.calls]


def _statuses(rows: list[dict]) -> set[str]:
    return {row["status"] for row in rows}


def _script_items(server: FakeLLMServer, home: Path) -> dict[str, str]:
    """Script a well-formed reply to the ECLEKTIC prompt of every article; returns item_id → question."""
    with Warehouse(home) as wh:
        articles = wh.query("SELECT lang, page_id, title, text FROM documents WHERE NOT is_redirect AND length(text) > 0")
    questions = {}
    for lang, page_id, title, text in articles:
        questions[f"{lang}:{page_id}"] = question = f"What is the article {title} about?"
        server.script(context_of(text, lang, 10)[:40], Fault.text(f"Question: {question}\nAnswer: {title}"))
    return questions


def _eclektic(home: Path, **kwargs: object) -> list[dict]:
    return qa_build_flow(QaBuildParams(recipe="eclektic", langs=LANGS, generator="fake", home=str(home), **kwargs))


def test_an_eclektic_build_stopped_by_its_budget_resumes_without_paying_twice(qa_home: Path, server: FakeLLMServer) -> None:
    first = _eclektic(qa_home, budget=Budget(max_calls=2))
    assert len(server.calls) == 2 and "failed" not in _statuses(first)
    with Warehouse(qa_home) as wh:
        selected = wh.scalar("SELECT count(*) FROM qa_candidates WHERE selected")
        statuses = Counter(s for (s,) in wh.query("SELECT status FROM qa_items WHERE benchmark = 'eclektic'"))
        unsure = wh.scalar("SELECT count(DISTINCT item_id) FROM qa_reviews WHERE verdict = 'unsure'"
                           " AND reason LIKE 'pre-screen call %'")
    # the sample's local facts long enough for a question: one en, two de, one fr article (ja, zh ones are short)
    assert selected == 4
    assert sum(statuses.values()) == 4 and statuses["skipped_budget"] == 2  # nothing dropped: the unpaid are rows
    assert unsure == 4 - statuses["skipped_budget"]  # the budget was spent before the pre-screen could ask

    second = _eclektic(qa_home)
    bodies = _bodies(server)
    assert len(bodies) == len(set(bodies)), "a request paid in the first run was sent again"
    with Warehouse(qa_home) as wh:
        assert not wh.scalar("SELECT count(*) FROM qa_items WHERE status = 'skipped_budget'")
        ok = wh.scalar("SELECT count(*) FROM qa_items WHERE status = 'ok'")
        asked = wh.scalar("SELECT count(DISTINCT item_id) FROM qa_reviews WHERE reviewer = 'llm:fake'"
                          " AND coalesce(reason, '') NOT LIKE 'pre-screen call %'")
    assert len(bodies) == 4 + ok  # four generations, one pre-screen per parsed item
    assert asked == ok
    assert {(r["stage"], r["status"]) for r in second if r["stage"] == "qa-candidates"} == {("qa-candidates", "cached")}

    third = _eclektic(qa_home)
    assert len(server.calls) == len(bodies), "a finished build made model calls"
    assert _statuses(third) == {"cached"}


def test_a_prescreen_over_failed_generations_recomputes_once_they_are_regenerated(qa_home: Path,
                                                                                  server: FakeLLMServer) -> None:
    with Warehouse(qa_home) as wh:
        articles = wh.query("SELECT lang, text FROM documents WHERE NOT is_redirect AND length(text) > 0")
    for n, (lang, text) in enumerate(articles):  # every generation's first call fails for good (a 400 is not
        # retried), each refused in its own words (refused alike, the model's later calls would not even be sent)
        server.script(context_of(text, lang, 10)[:40], Fault.with_status(400, f"article {n}: too long for the model"))
    first = {r["stage"]: r for r in _eclektic(qa_home) if r["stage"] == "qa-prescreen"}
    assert first["qa-prescreen"]["message"].startswith("0 items screened")
    # the rerun retries the failed generations (the generate cells keep their fingerprints): the pre-screen
    # read other rows this time, so it is no cache hit
    second = {r["stage"]: r for r in _eclektic(qa_home) if r["stage"] == "qa-prescreen"}
    assert second["qa-prescreen"]["status"] == "computed"
    assert second["qa-prescreen"]["message"].startswith("4 items screened by rules and llm:fake")
    with Warehouse(qa_home) as wh:
        assert wh.scalar("SELECT count(*) FROM qa_items WHERE status = 'ok'") == 4
        assert wh.scalar("SELECT count(DISTINCT item_id) FROM qa_reviews WHERE reviewer = 'llm:fake'") == 4


def test_without_the_prescreen_the_rule_checks_still_run_and_flag(qa_home: Path, server: FakeLLMServer) -> None:
    with Warehouse(qa_home) as wh:
        articles = wh.query("SELECT lang, title, text FROM documents WHERE NOT is_redirect AND length(text) > 0")
    for lang, title, text in articles:  # the English items give their answer (the title) away in the question
        question = f"How long is {title}?" if lang == "en" else "Which place is it named after?"
        server.script(context_of(text, lang, 10)[:40], Fault.text(f"Question: {question}\nAnswer: {title}"))
    _eclektic(qa_home, prescreen=False)
    assert len(server.calls) == 4  # the generations only: no model was asked to screen
    with Warehouse(qa_home) as wh:
        status = dict(wh.query("SELECT item_id, qc_status FROM qa_status WHERE benchmark = 'eclektic'"))
        reviewers = {r for (r,) in wh.query("SELECT DISTINCT reviewer FROM qa_reviews")}
    # one en, two de, one fr item (see the budget test); the rules ran and passed the others, and no model
    # was asked, by the user's choice
    assert sorted((item[:2], qc) for item, qc in status.items()) == [
        ("de", "unreviewed"), ("de", "unreviewed"), ("en", "flagged"), ("fr", "unreviewed")]
    assert reviewers == {"rule:answer_leak", "rule:context_reference"}


def test_translation_keeps_failing_items_with_their_reason_and_instances_use_only_what_passed(
    qa_home: Path, server: FakeLLMServer, tmp_path: Path,
) -> None:
    questions = _script_items(server, qa_home)
    _eclektic(qa_home, prescreen=False)
    with Warehouse(qa_home) as wh:
        items = {r["item_id"]: r for r in wh.query_dicts("SELECT * FROM qa_items WHERE benchmark = 'eclektic'")}
    assert len(items) == 4 and _statuses(list(items.values())) == {"ok"}
    assert all(r["question"] == questions[i] for i, r in items.items())

    # the translator copies the text instead of translating it: every translation into German fails the language check
    rows = translate_flow(TranslateParams(benchmark="eclektic", to=["de"], translator="fake", qc_policy="human",
                                          home=str(qa_home)))
    assert _statuses(rows) == {"computed"}
    with Warehouse(qa_home) as wh:
        gates = wh.query_dicts("SELECT item_id, field, gate, status, reason FROM translations WHERE tgt_lang = 'de'")
    not_german = {i for i in items if not i.startswith("de:")}
    assert {g["item_id"] for g in gates} == not_german
    assert all(g["gate"] == "fail" and "language" in (g["reason"] or "") for g in gates)

    out = tmp_path / "exports"
    instances_flow(InstancesParams(benchmark="eclektic", instances=InstanceConfig(qc_policy="human"), out=str(out),
                                   home=str(qa_home)))
    with Warehouse(qa_home) as wh:
        made = wh.query_dicts("SELECT setting, lang, item_id, question, source_lang FROM instances WHERE benchmark = 'eclektic'")
    closed = {(r["lang"], r["item_id"]) for r in made if r["setting"] == "closed_book"}
    # only the source-language questions: no translation passed its gate
    assert closed == {(i.split(":")[0], i) for i in items}
    for row in made:
        assert row["question"] == questions[row["item_id"]] and row["lang"] == row["source_lang"]
    exported = Counter()
    for path in (out / "eclektic").glob("*.jsonl"):
        setting, lang, _ = path.name.split(".")
        for line in path.read_text().splitlines():
            record = json.loads(line)
            exported[(setting, lang)] += 1
            assert record["question"] == questions[record["item_id"]]
    assert exported == Counter((r["setting"], r["lang"]) for r in made)
    # in MLflow: the builds a model wrote, linked to their prompts; the instances, which no model touched, not
    with Warehouse(qa_home) as wh:
        runs = dict(wh.query("SELECT flow, mlflow_run_id FROM runs"))
    client = MlflowClient(tracking_uri(qa_home))
    for flow, template in (("qa-build", "babelbench.eclektic_qa"), ("translate", "babelbench.translate")):
        linked = json.loads(client.get_run(runs[flow]).data.tags["mlflow.linkedPrompts"])
        assert template in {link["name"] for link in linked}
    assert runs["instances"] is None


def test_an_xrag_build_records_pairs_steps_and_items_and_a_rerun_is_free(qa_home: Path, server: FakeLLMServer) -> None:
    params = QaBuildParams(recipe="xrag", langs=["en", "de"], generator="fake", prescreen=False, home=str(qa_home),
                           config={"max_pairs": 1, "question_types": ["comparison"], "questions_per_type": 1})
    rows = qa_build_flow(params)
    assert {r["stage"]: r["status"] for r in rows} == {"xrag-pairs": "computed", "xrag-related": "computed",
                                                       "xrag-questions": "computed", "qa-prescreen": "computed"}
    with Warehouse(qa_home) as wh:
        pairs = wh.query_dicts("SELECT pair_id, lang_a, lang_b, status FROM related_pairs")
        items = wh.query_dicts("SELECT item_id, lang, qtype, status FROM qa_items WHERE recipe = 'xrag'")
        steps = Counter(s for (s,) in wh.query("SELECT step FROM qa_steps"))
    # max_pairs 1: one en–en pair and one en–de pair; the model says both are related
    assert sorted((p["lang_a"], p["lang_b"]) for p in pairs) == [("en", "de"), ("en", "en")]
    assert {p["status"] for p in pairs} == {"related"}
    assert sorted(i["item_id"] for i in items) == sorted(f"{p['pair_id']}:comparison:1" for p in pairs)
    assert {(i["lang"], i["qtype"], i["status"]) for i in items} == {("en", "comparison", "ok")}
    assert steps["question"] == 2 and steps["answer"] == 2 and steps["summary"] == steps["simple_qa"] == 4
    calls = len(server.calls)
    # checks, then per article a summary and its simple QA, then per pair one question and its answer
    assert calls == 2 + 4 + 4 + 2 + 2 and len(set(_bodies(server))) == calls

    assert _statuses(qa_build_flow(params)) == {"cached"} and len(server.calls) == calls


def test_xrag_instances_index_each_language_and_show_its_distractors_beside_the_pairs_articles(
        qa_home: Path, server: FakeLLMServer) -> None:
    qa_build_flow(QaBuildParams(recipe="xrag", langs=["en", "de"], generator="fake", prescreen=False, home=str(qa_home),
                                config={"max_pairs": 1, "question_types": ["comparison"], "questions_per_type": 1}))
    rows = instances_flow(InstancesParams(benchmark="xrag", instances=InstanceConfig(qc_policy="human"),
                                          home=str(qa_home)))
    statuses = {(r["stage"], r["cell"]): r["status"] for r in rows}
    # the recipe's own inputs first: an index per language, then the benchmark's distractors from them
    assert statuses[("index", "en")] == statuses[("index", "de")] == "computed"
    assert statuses[("distractors", "xrag")] == statuses[("instances", "xrag")] == "computed"
    with Warehouse(qa_home) as wh:
        items = {r["item_id"]: r for r in wh.query_dicts("SELECT item_id, documents FROM qa_items WHERE recipe = 'xrag'")}
        kept = wh.query_dicts("SELECT item_id, lang, page_id, title, rank FROM distractors"
                              " WHERE benchmark = 'xrag' AND status = 'kept' ORDER BY item_id, lang, rank")
        made = wh.query_dicts("SELECT item_id, setting, lang, documents FROM instances WHERE benchmark = 'xrag'")
        languages = dict(wh.query("SELECT page_id, lang FROM documents WHERE NOT is_redirect"))
    support = {i: {(d["lang"], d["page_id"]) for d in json.loads(item["documents"])} for i, item in items.items()}
    # no article of an item's own pair is its distractor, and each is a document of the language it is kept for
    assert kept and all((d["lang"], d["page_id"]) not in support[d["item_id"]] for d in kept)
    assert all(languages[d["page_id"]] == d["lang"] for d in kept)
    settings = Counter((r["item_id"], r["setting"], r["lang"]) for r in made)
    monolingual = next(i for i, pair in support.items() if {lang for lang, _ in pair} == {"en"})
    multilingual = next(i for i in support if i != monolingual)
    # both items closed book; the en-en pair has its oracle; no German question passed a translation gate (none ran)
    assert settings[(monolingual, "closed_book", "en")] == settings[(multilingual, "closed_book", "en")] == 1
    assert settings[(monolingual, "oracle", "en")] == 1
    assert not any(lang == "de" for _, _, lang in settings)
    retrieval = [r for r in made if r["setting"] == "monolingual_retrieval"]
    en_kept = [(d["page_id"], d["title"]) for d in kept if d["item_id"] == monolingual and d["lang"] == "en"]
    # the shape XRAG shows in English: the pair's two articles and the six best pivot distractors, mixed
    assert len(en_kept) >= 6  # the sample has English articles enough besides the pair
    [instance] = retrieval
    shown = json.loads(instance["documents"])
    assert {(d["lang"], d["page_id"]) for d in shown if d["role"] == "support"} == support[monolingual]
    assert sorted((d["page_id"], d["title"]) for d in shown if d["role"] == "distractor") == sorted(en_kept[:6])
    assert len(shown) == 8 and all(d["text"] for d in shown)


def test_review_sheet_round_trip_through_the_cli_overrides_the_machine(qa_home: Path, server: FakeLLMServer,
                                                                      tmp_path: Path) -> None:
    _eclektic(qa_home, prescreen=False)
    runner = CliRunner()
    sheet = tmp_path / "review.csv"
    result = runner.invoke(app, ["--home", str(qa_home), "review", "export", "--benchmark", "eclektic", "--out", str(sheet)])
    assert result.exit_code == 0, result.output
    with sheet.open(newline="") as handle:
        records = list(csv.DictReader(handle))
    assert len(records) == 4
    records[0]["decision"], records[0]["reviewer"] = "reject", "ana"
    records[1]["decision"] = "accept"
    with sheet.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(records[0]))
        writer.writeheader()
        writer.writerows(records)
    # row 2 has a decision but no reviewer and none was given: the whole sheet is refused
    refused = runner.invoke(app, ["--home", str(qa_home), "review", "import", str(sheet), "--benchmark", "eclektic"])
    assert refused.exit_code != 0 and "reviewer" in refused.output
    with Warehouse(qa_home) as wh:
        assert not wh.scalar("SELECT count(*) FROM qa_reviews WHERE starts_with(reviewer, 'human:')")
    result = runner.invoke(app, ["--home", str(qa_home), "review", "import", str(sheet), "--benchmark", "eclektic",
                                 "--reviewer", "bo"])
    assert result.exit_code == 0, result.output
    with Warehouse(qa_home) as wh:
        status = dict(wh.query("SELECT item_id, qc_status FROM qa_status WHERE benchmark = 'eclektic'"))
        who = dict(wh.query("SELECT item_id, reviewer FROM qa_reviews WHERE starts_with(reviewer, 'human:')"))
    assert status[records[0]["item_id"]] == "rejected_review" and who[records[0]["item_id"]] == "human:ana"
    assert status[records[1]["item_id"]] == "accepted_review" and who[records[1]["item_id"]] == "human:bo"
