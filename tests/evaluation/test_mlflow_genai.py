"""What MLflow shows of an evaluation, piece by piece: the trace sample, traces built from warehouse rows (spans,
statuses, verdicts and their sources), the arena's outcome of a pair, headline and pooled metrics, and — against a
real SQLite-backed MLflow store — traces written in batches, benchmark datasets versioned by their records, and
prompt templates registered once."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from pathlib import Path

import pytest

from tasks.arena.pairwise import OrderedVerdict
from tasks.metrics.clir_eval import EvalResult
from tasks.metrics.clir_report import pooled_metrics
from tasks.mlflow_genai.battles import outcome
from tasks.mlflow_genai.responses import response_trace
from tasks.mlflow_genai.runs import headline_metrics
from tasks.mlflow_genai.sample import TraceSample
from tasks.mlflow_genai.traces import SpanRecord, TraceRecord, Verdict, trace_entities
from tasks.warehouse.db import Warehouse

TEMPLATES = Path(__file__).resolve().parents[2] / "tasks" / "llm" / "templates"


# --- the sample ------------------------------------------------------------------------------------------------


def test_the_trace_option_is_all_none_or_a_count_and_anything_else_is_refused() -> None:
    assert TraceSample(traces=" ALL ").per_language is None
    assert TraceSample(traces="none").per_language == 0
    assert TraceSample(traces="7", seed=3).per_language == 7
    assert TraceSample(traces="7", seed=3).describe() == "7 per language, seed 3"
    with pytest.raises(ValueError, match="traces must be all, none or a number of traces per language, not 'some'"):
        TraceSample(traces="some")


def test_the_sample_takes_the_first_n_of_each_language_by_a_seeded_hash_of_the_key() -> None:
    keys = [("de", f"de:{i}") for i in range(6)] + [("fr", "fr:0"), ("fr", "fr:1")]
    sample = TraceSample(traces="3", seed=5)
    # worked out apart from the code: German's 3 keys of smallest sha256("5:<key>"); French has only 2
    by_hash = sorted((f"de:{i}" for i in range(6)), key=lambda k: hashlib.sha256(f"5:{k}".encode()).hexdigest())
    assert sample.pick(keys) == set(by_hash[:3]) | {"fr:0", "fr:1"}
    # a key added to German changes nothing in French, and German only if it hashes in front
    more = sample.pick([*keys, ("de", "de:new")])
    assert more & {"fr:0", "fr:1"} == {"fr:0", "fr:1"} and len(more) == 5
    assert TraceSample(traces="all").pick(keys) == {key for _, key in keys}
    assert TraceSample(traces="none").pick(keys) == set()


# --- traces from records ---------------------------------------------------------------------------------------


def _record(error: str | None = None) -> TraceRecord:
    call = SpanRecord("openai:m", "CHAT_MODEL", 1_000_000_000, 3_500_000_000, inputs={"prompt": "Q?"},
                      outputs={"text": "A"}, attributes={"cache_hit": True}, error=error)
    read = SpanRecord("read answer", "PARSER", 3_500_000_000, 3_500_000_000, outputs={"answer": "A"})
    root = SpanRecord("i1", "CHAIN", 1_000_000_000, 3_500_000_000, inputs={"question": "Q?"}, outputs={"answer": "A"},
                      children=(call, read))
    return TraceRecord(root, tags={"babelbench.model": "m"},
                       verdicts=(Verdict("support", True, "LLM_JUDGE", "judge", rationale="holds the fact"),
                                 Verdict("support", None, "HUMAN", "ana", error=("parse_failed", "no verdict"))),
                       prompts=(("babelbench.answer_closed_book", "2"),))


def test_a_trace_record_becomes_a_trace_with_its_spans_assessments_run_and_prompt() -> None:
    info, spans = trace_entities(_record(), "7", "run-1")
    assert info.trace_id.startswith("tr-") and len(info.trace_id) == 3 + 32
    assert (info.request_time, info.execution_duration) == (1000, 2500)  # ms: started at 1 s, took 2.5 s
    assert info.state.value == "OK" and info.trace_metadata["mlflow.sourceRun"] == "run-1"
    assert json.loads(info.tags["mlflow.linkedPrompts"]) == [{"name": "babelbench.answer_closed_book", "version": "2"}]
    assert json.loads(info.request_preview) == {"question": "Q?"}
    assert [(s.name, s.span_type, s.parent_id) for s in spans] == [
        ("i1", "CHAIN", None), ("openai:m", "CHAT_MODEL", spans[0].span_id), ("read answer", "PARSER", spans[0].span_id)]
    assert {s.trace_id for s in spans} == {info.trace_id}
    assert spans[1].attributes["cache_hit"] is True and spans[1].inputs == {"prompt": "Q?"}
    judged, unread = info.assessments
    assert (judged.value, judged.source.source_type, judged.source.source_id, judged.rationale) == (
        True, "LLM_JUDGE", "judge", "holds the fact")
    assert judged.span_id == spans[0].span_id and judged.metadata["mlflow.assessment.sourceRunId"] == "run-1"
    assert (unread.source.source_type, unread.error.error_code, unread.error.error_message) == (
        "HUMAN", "parse_failed", "no verdict")


def test_a_failed_step_makes_the_span_and_the_trace_errors() -> None:
    info, spans = trace_entities(_record(error="HTTP 500"), "7", None)
    assert info.state.value == "ERROR" and "mlflow.sourceRun" not in info.trace_metadata
    assert (spans[1].status.status_code.value, spans[1].status.description) == ("ERROR", "HTTP 500")
    assert spans[0].status.status_code.value == "OK"


def _response(**changes: object) -> dict:
    row = {"benchmark": "b", "instance_id": "q1:rag:de", "setting": "rag", "lang": "de", "status": "ok", "reason": None,
           "raw_text": "Berlin [de:7]", "given_answer": "Berlin", "citations": ["de:7"], "request_hash": "h1",
           "template": "answer_with_documents", "language_status": "ok", "detected_lang": "de", "target_prob": 0.9,
           "english_prob": 0.1, "switched_share": 0.0, "question": "Wo?", "gold_answer": "Berlin", "gold": None,
           "documents": json.dumps([{"lang": "de", "page_id": 7, "text": "…"}, {"doc_id": "x#2", "text": "…"}]),
           "backend": "openai", "model_id": "m-1", "mode": "chat", "request": json.dumps({"messages": []}),
           "response_text": "Berlin [de:7]", "finish_reason": "stop", "input_tokens": 40, "output_tokens": 2,
           "latency_s": 1.5, "cost_usd": 0.002, "attempts": 1, "error": None,
           "created_at": datetime(2026, 1, 1), "call_status": "ok"}
    return row | changes


def test_a_response_trace_holds_the_call_the_reading_and_every_verdict_with_its_source() -> None:
    judgements = [
        {"judge": "j1", "kind": "correct", "verdict": "yes", "status": "ok", "reason": None,
         "justification": "Same city.", "cost_usd": 0.001, "input_tokens": 90, "output_tokens": 9},
        {"judge": "human:ana", "kind": "correct", "verdict": "no", "status": "ok", "reason": "file x.csv line 3",
         "justification": None, "cost_usd": None, "input_tokens": None, "output_tokens": None},
        {"judge": "j2", "kind": "correct", "verdict": None, "status": "call_failed", "reason": "HTTP 503",
         "justification": None, "cost_usd": None, "input_tokens": None, "output_tokens": None}]
    features = [{"feature": "citation_recall_at_10", "value": 0.5, "status": "ok", "reason": None},
                {"feature": "fluency_score", "value": None, "status": "call_failed", "reason": "timeout"}]
    record = response_trace(_response(), judgements, features, {"fluency_score": ("LLM_JUDGE", "grader-1")},
                            ("babelbench.answer_with_documents", "1"), 10**9, datetime(2026, 2, 1), {"k": "v"})
    root = record.root
    assert root.inputs == {"question": "Wo?", "lang": "de", "setting": "rag", "documents": ["de:7", "x#2"]}
    call, read = root.children
    # the call took 1.5 s from the trace's start; reading ends there
    assert (call.start_ns, call.end_ns, read.start_ns, root.end_ns) == (10**9, 2.5e9, 2.5e9, 2.5e9)
    assert call.attributes["cache_hit"] is True  # made on 1 January, before the run of 1 February
    assert call.attributes["mlflow.chat.tokenUsage"] == {"input_tokens": 40, "output_tokens": 2, "total_tokens": 42}
    assert read.outputs["citations"] == ["de:7"] and read.outputs["abstained"] is False
    verdicts = {(v.name, v.source_id): v for v in record.verdicts}
    assert (verdicts["correct", "j1"].value, verdicts["correct", "j1"].rationale) == (True, "Same city.")
    assert verdicts["correct", "j1"].metadata["mlflow.assessment.judgeCost"] == "0.001"
    assert (verdicts["correct", "ana"].source_type, verdicts["correct", "ana"].value) == ("HUMAN", False)
    assert verdicts["correct", "ana"].rationale == "file x.csv line 3"
    assert (verdicts["correct", "j2"].value, verdicts["correct", "j2"].error) == (None, ("call_failed", "HTTP 503"))
    assert verdicts["in_question_language", "babelbench.language_rule"].value is True  # the gold answer itself
    assert verdicts["citation_recall_at_10", "babelbench.features"].source_type == "CODE"
    assert verdicts["fluency_score", "grader-1"].error == ("call_failed", "timeout")
    assert [(g.name, g.value) for g in record.golds] == [("expected_response", "Berlin")]
    assert record.tags["babelbench.status"] == "ok" and record.tags["k"] == "v"


def test_a_failed_call_is_an_error_span_without_a_reading_and_a_skipped_one_has_no_call() -> None:
    failed = response_trace(_response(status="call_failed", reason="HTTP 500", given_answer=None, raw_text=None,
                                      call_status="failed", error="HTTP 500", response_text=None, latency_s=None),
                            [], [], {}, None, 0, None, {})
    assert failed.root.error == "call_failed: HTTP 500" and failed.root.outputs is None
    [call] = failed.root.children
    assert call.error == "HTTP 500" and call.attributes["cache_hit"] is False
    language = next(v for v in failed.verdicts if v.name == "in_question_language")
    assert language.error == ("call_failed", "the answer's language is not decided (call_failed)")
    skipped = response_trace(_response(status="skipped_budget", reason="budget", request_hash=None, call_status=None),
                             [], [], {}, None, 0, None, {})
    assert skipped.root.children == () and skipped.root.attributes["imported"] is True
    unread = response_trace(_response(status="parse_failed", reason="no answer line"), [], [], {}, None, 0, None, {})
    assert [c.error for c in unread.root.children] == [None, "parse_failed: no answer line"]


def test_a_pair_has_a_winner_only_where_both_orders_agree() -> None:
    def orders(first: str | None, second: str | None) -> list[OrderedVerdict]:
        return [OrderedVerdict("q", "de", "x", "y", first), OrderedVerdict("q", "de", "y", "x", second)]

    assert outcome(orders("a", "b")) == "x"  # x shown first won, then x shown second won
    assert outcome(orders("a", "a")) == "tie"  # each order favoured the answer shown first: x, then y
    assert outcome(orders("tie", "tie")) == "tie"
    assert outcome(orders("a", "tie")) == "split"
    assert outcome(orders("a", None)) is None
    assert outcome(orders("a", "b")[:1]) is None


# --- metrics -----------------------------------------------------------------------------------------------------


def test_a_model_run_charts_the_headline_of_each_setting_with_its_interval_and_nothing_else() -> None:
    def row(setting: str, lang: str, metric: str, value: float | None, subset: str = "all") -> dict:
        return {"setting": setting, "lang": lang, "subset": subset, "metric": metric, "value": value,
                "ci_low": None if value is None else value - 1, "ci_high": None if value is None else value + 1}

    rows = [row("closed_book", "all", "overall_success", 75.0), row("closed_book", "de", "overall_success", 50.0),
            row("closed_book", "all", "transfer", 60.0), row("closed_book", "all", "overall_success", 10.0, "x"),
            row("hint", "all", "overall_success", None)]
    assert headline_metrics(rows, "overall_success") == {"overall_success/closed_book": 75.0, "overall_success/closed_book/ci_low": 74.0,
                                      "overall_success/closed_book/ci_high": 76.0}


def test_a_clir_run_charts_each_metric_pooled_over_directions_not_each_direction() -> None:
    result = EvalResult("e", metrics=[
        {"src_lang": "en", "tgt_lang": "de", "metric": "ndcg@10", "value": 0.5, "ci_low": 0.4, "ci_high": 0.6},
        {"src_lang": "all", "tgt_lang": "all", "metric": "ndcg@10", "value": 0.45, "ci_low": 0.3, "ci_high": 0.6},
        {"src_lang": "all", "tgt_lang": "all", "metric": "ndcg@10_no6", "value": 0.2, "ci_low": None, "ci_high": None}])
    assert pooled_metrics(result) == {"ndcg_at_10": 0.45, "ndcg_at_10/ci_low": 0.3, "ndcg_at_10/ci_high": 0.6,
                                      "ndcg_at_10_no6": 0.2}


# --- against a real store ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite-backed MLflow store of its own, the global tracking URI while the module's tests run."""
    import mlflow

    uri = f"sqlite:///{tmp_path_factory.mktemp('mlflow') / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("MLFLOW_TRACKING_URI", raising=False)  # MLflow copies its URI there; restored on exit
        mlflow.set_tracking_uri(uri)
        yield uri
        mlflow.set_tracking_uri(None)


def test_traces_are_written_in_batches_linked_to_their_run(store: str) -> None:
    import mlflow

    from tasks.mlflow_genai.traces import write_traces

    experiment = mlflow.create_experiment("traces-in-batches")
    with mlflow.start_run(experiment_id=experiment) as run:
        written = write_traces(store, experiment, run.info.run_id, [_record(), _record(), _record("HTTP 500")],
                               batch=2)  # two batches: 2 traces, then 1
    found = mlflow.search_traces(locations=[experiment], run_id=run.info.run_id, return_type="list")
    assert sorted(t.info.trace_id for t in found) == sorted(written) and len(written) == 3
    states = sorted(t.info.state.value for t in found)
    assert states == ["ERROR", "OK", "OK"]
    trace = mlflow.get_trace(written[0])
    assert [s.name for s in trace.data.spans] == ["i1", "openai:m", "read answer"]
    assert {(a.name, a.source.source_type) for a in trace.info.assessments} == {("support", "LLM_JUDGE"),
                                                                                ("support", "HUMAN")}


def _instances(home: Path, answer: str) -> Warehouse:
    home.mkdir(parents=True, exist_ok=True)
    wh = Warehouse(home)
    with wh.transaction() as cur:
        cur.execute("DELETE FROM instances")
        for n, lang in enumerate(("de", "fr")):
            cur.execute("INSERT INTO instances VALUES ('b', ?, 'i', 'xrag', 'rag', ?, 'Wo?', ?, 'en', NULL, NULL, ?, 0,"
                        " 'fp', NULL, NULL, NULL)", [f"i:{lang}", lang, answer if n == 0 else "Paris",
                                         json.dumps([{"lang": lang, "page_id": 3}])])
    return wh


def test_a_benchmark_is_one_dataset_per_version_of_its_instances(store: str, tmp_path: Path) -> None:
    import mlflow
    from mlflow.genai.datasets import get_dataset, set_dataset_tags

    from tasks.mlflow_genai.datasets import COMPLETE, evaluation_dataset

    experiment = mlflow.create_experiment("datasets")
    with _instances(tmp_path / "home", "Berlin") as wh:
        first = evaluation_dataset(wh, "b", experiment)
        records = {r["inputs"]["instance_id"]: r for _, r in first.to_df().iterrows()}
        assert records["i:de"]["inputs"] == {"instance_id": "i:de", "setting": "rag", "lang": "de", "question": "Wo?",
                                             "documents": ["de:3"]}
        assert records["i:de"]["expectations"] == {"expected_response": "Berlin"} and len(records) == 2
        assert first.name.startswith("b@") and experiment in first.experiment_ids
        assert evaluation_dataset(wh, "b", experiment).dataset_id == first.dataset_id  # unchanged: reused
        # an upload cut short (no "complete" tag) is finished, not trusted
        set_dataset_tags(dataset_id=first.dataset_id, tags={COMPLETE: "false"})
        first.delete_records([records["i:fr"]["dataset_record_id"]])
        again = evaluation_dataset(wh, "b", experiment)
        assert again.dataset_id == first.dataset_id and len(again.to_df()) == 2
        assert get_dataset(dataset_id=first.dataset_id).tags[COMPLETE] == "true"
    with _instances(tmp_path / "home", "Bonn") as wh:  # rebuilt: another gold answer
        rebuilt = evaluation_dataset(wh, "b", experiment)
    assert rebuilt.dataset_id != first.dataset_id and rebuilt.name != first.name


def test_a_template_is_registered_once_per_text_and_linked_to_the_runs_that_used_it(store: str,
                                                                                     tmp_path: Path) -> None:
    import mlflow
    from mlflow import MlflowClient

    from tasks.mlflow_genai.prompts import link_templates, run_templates

    text = (TEMPLATES / "judge_correct.j2").read_text(encoding="utf-8")
    digest = hashlib.sha256(text.encode()).hexdigest()
    experiment = mlflow.create_experiment("prompts")
    for _ in range(2):
        with mlflow.start_run(experiment_id=experiment) as run:
            linked = link_templates(store, run.info.run_id, ["judge_correct"])
        assert json.loads(mlflow.get_run(run.info.run_id).data.tags["mlflow.linkedPrompts"]) == [
            {"name": "babelbench.judge_correct", "version": linked["judge_correct"][1]}]
    client = MlflowClient(store)
    [version] = client.search_prompt_versions("babelbench.judge_correct")
    assert (version.template, version.tags["babelbench.template_hash"]) == (text, digest)
    assert client.get_prompt_version_by_alias("babelbench.judge_correct", f"sha-{digest[:12]}").version == \
        version.version
    # a flow run used the templates whose hash its cells read, wherever in their config
    with Warehouse(tmp_path / "home") as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO artifacts (run_id, stage, stage_version, cell, fingerprint, config, code_version,"
                    " status, started_at, finished_at, seconds) VALUES ('r', 'features', 1, 'c', 'f', ?, 'v', 'cached',"
                    " now(), now(), 0)", [json.dumps({"model": {"template": digest}, "other": "x" * 64})])
    with Warehouse(tmp_path / "home") as wh:
        assert run_templates(wh, "r") == ["judge_correct"] and run_templates(wh, "other") == []


def test_a_trace_rewritten_with_its_features_keeps_the_labels_the_warehouse_does_not_hold() -> None:
    from mlflow.entities import Trace, TraceData

    from tasks.mlflow_genai.features import carried_over

    labelled = _record()  # as written: the judge's verdict and a person's unread one
    person = Verdict("helpful", "yes", "HUMAN", "reviewer", rationale="clear")  # given later, in the UI
    info, spans = trace_entities(TraceRecord(labelled.root, verdicts=(*labelled.verdicts, person)), "7", "run-1")
    rebuilt = TraceRecord(labelled.root, verdicts=(Verdict("support", False, "LLM_JUDGE", "judge"),
                                                   Verdict("extra_refusal", 0.0, "CODE", "babelbench.features")))
    kept = carried_over(Trace(info, TraceData(spans)), rebuilt)
    # the warehouse's verdicts replace their old selves; the person's label and the unread verdict are carried
    assert [(v.name, v.source_id, v.value) for v in kept.verdicts] == [
        ("support", "judge", False), ("extra_refusal", "babelbench.features", 0.0), ("support", "ana", None),
        ("helpful", "reviewer", "yes")]
    assert kept.verdicts[2].error == ("parse_failed", "no verdict") and kept.verdicts[3].rationale == "clear"
