"""QC decisions: rule checks, LLM verdict reading, and the human review round trip overriding the machine."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.llm import CallResult, LLMResponse
from tasks.qa.policy import accepted_items
from tasks.qa.qc import llm_verdicts, rule_verdicts
from tasks.qa.review import export_sheet, import_decisions
from tasks.warehouse.db import Warehouse


def _items(wh: Warehouse) -> None:
    documents = json.dumps([{"lang": "en", "page_id": 1, "title": "Velna"}])
    rows = [
        ["b", "en:1", "eclektic", "en", "How long is the Velna?", "412 km", None, "ctx", documents, None, "ok", None, None, "g", "fp"],
        ["b", "en:2", "eclektic", "en", "Who built the bridge?", "Maren Tolk", None, "ctx", documents, None, "ok", None, None, "g", "fp"],
        ["b", "en:3", "eclektic", "en", None, None, None, "ctx", documents, None, "parse_failed", "no pair", None, "g", "fp"],
    ]
    with wh.transaction() as cur:
        cur.executemany("INSERT INTO qa_items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL)", rows)
        cur.executemany("INSERT INTO qa_reviews VALUES ('b', ?, ?, ?, 'llm:judge', NULL, NULL, 'prescreen', 'fp',"
                        " TIMESTAMP '2026-11-01 00:00:00')",
                        [["en:1", "answer_correct", "pass"], ["en:2", "answer_correct", "fail"]])


def _status(wh: Warehouse) -> dict[str, tuple]:
    return {r[0]: r[1:] for r in wh.query("SELECT item_id, qc_status, answer, reviewer FROM qa_status WHERE benchmark = 'b'")}


def test_rules_catch_a_leaked_answer_and_a_reference_to_the_passage() -> None:
    verdicts = {c: v for c, v, _ in rule_verdicts("Is the Velna 412 km long?", "412 km")}
    assert verdicts == {"answer_leak": "fail", "context_reference": "pass"}
    verdicts = {c: v for c, v, _ in rule_verdicts("What does the passage say about Tarsk?", "a town")}
    assert verdicts == {"answer_leak": "pass", "context_reference": "fail"}
    # "Orvik" inside "Orvikstad" is not a leak: whole words only
    assert dict((c, v) for c, v, _ in rule_verdicts("Where is Orvikstad?", "Orvik"))["answer_leak"] == "pass"


def test_llm_verdicts_are_read_from_the_json_object_and_a_missing_one_is_unsure() -> None:
    reply = '{"justification": "Fluent, but the documents do not say.", "natural": "yes", "answerable": "**No**"}'
    result = CallResult("ok", "h", response=LLMResponse(reply, 1, 1, "stop", 0.1))
    verdicts = {c: (v, r) for c, v, r in llm_verdicts(result, "en")}
    assert verdicts["natural"] == ("pass", None)
    assert verdicts["answerable"] == ("fail", None)
    assert verdicts["answer_correct"][0] == "unsure" and "'correct'" in verdicts["answer_correct"][1]
    failed = llm_verdicts(CallResult("failed", "h", error="permanent: 400"), "en")
    assert {v for _, v, _ in failed} == {"unsure"} and "permanent: 400" in failed[0][2]


@pytest.mark.parametrize("reply", [
    "Natural: yes\nAnswerable: no\nCorrect: yes",
    "**Natural**: Yes\n**Answerable**: No\n**Correct**: Yes",
    "**Natural:** yes\n**Answerable:** *no*\n**Correct:** yes",
    "Natural： yes\nAnswerable： no\nCorrect： yes",
])
def test_llm_verdicts_are_read_in_the_markdown_forms_chat_models_write(reply: str) -> None:
    result = CallResult("ok", "h", response=LLMResponse(reply, 1, 1, "stop", 0.1))
    assert [(c, v) for c, v, _ in llm_verdicts(result, "en")] == [
        ("natural", "pass"), ("answerable", "fail"), ("answer_correct", "pass")]


def test_a_screen_that_could_not_run_is_unsure_for_every_check() -> None:
    for status in ("skipped_budget", "call_failed"):
        verdicts = llm_verdicts(CallResult(status, "h", error="the run's budget was reached"), "en")
        assert [v for _, v, _ in verdicts] == ["unsure"] * 3
    unreadable = llm_verdicts(CallResult("ok", "h", response=LLMResponse("I think it is fine.", 1, 1, "stop", 0.1)),
                              "en")
    assert [v for _, v, _ in unreadable] == ["unsure"] * 3


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_review_round_trip_overrides_the_machine_and_keeps_who_decided(tmp_path: Path, suffix: str) -> None:
    sheet = tmp_path / f"review{suffix}"
    with Warehouse(tmp_path / "home") as wh:
        _items(wh)
        assert _status(wh)["en:2"][0] == "flagged" and _status(wh)["en:1"][0] == "unreviewed"
        assert export_sheet(wh, "b", sheet) == 2  # the unparsed item has nothing to review
        records = _read(sheet)
        assert [r["item_id"] for r in records] == ["en:1", "en:2"]
        assert records[1]["failed_checks"] == "answer_correct (llm:judge)" and records[1]["unsure_checks"] == ""
        records[0] |= {"decision": "reject", "note": "answer is in the question"}
        records[1] |= {"decision": "accept", "corrected_answer": "Maren Tolk (architect)", "reviewer": "ana"}
        _write(sheet, records)
        assert import_decisions(wh, "b", sheet, reviewer="bo") == 2
        status = _status(wh)
        assert status["en:1"] == ("rejected_review", "412 km", "human:bo")
        assert status["en:2"] == ("accepted_review", "Maren Tolk (architect)", "human:ana")
        assert status["en:3"][0] == "parse_failed"
        # importing the edited file again replaces what it brought, it does not add to it
        records[0]["decision"] = "accept"
        _write(sheet, records)
        import_decisions(wh, "b", sheet, reviewer="bo")
        assert _status(wh)["en:1"][0] == "accepted_review"
        assert wh.scalar("SELECT count(*) FROM qa_reviews WHERE starts_with(reviewer, 'human:')") == 2


def test_two_reviewers_keep_their_own_decisions_and_one_reject_rejects(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "home") as wh:
        _items(wh)
        sheets = {}
        for name in ("ana", "bo"):  # each reviewer fills their own copy, both called review.csv
            (tmp_path / name).mkdir()
            sheets[name] = tmp_path / name / "review.csv"
            export_sheet(wh, "b", sheets[name])
        ana = _read(sheets["ana"])
        ana[0] |= {"decision": "accept", "corrected_answer": "412 kilometres"}
        ana[1] |= {"decision": "accept"}
        _write(sheets["ana"], ana)
        import_decisions(wh, "b", sheets["ana"], reviewer="ana")
        bo = _read(sheets["bo"])
        bo[0] |= {"decision": "accept"}
        bo[1] |= {"decision": "reject", "note": "the bridge had two builders"}
        _write(sheets["bo"], bo)
        import_decisions(wh, "b", sheets["bo"], reviewer="bo")
        # bo's file of the same name did not wipe ana's decisions
        assert wh.scalar("SELECT count(*) FROM qa_reviews WHERE reviewer = 'human:ana'") == 2
        status = _status(wh)
        assert status["en:1"] == ("accepted_review", "412 kilometres", "human:ana, human:bo")
        assert status["en:2"] == ("rejected_review", "Maren Tolk", "human:ana, human:bo")  # bo's reject wins
        # bo changes their mind: re-importing bo's file replaces bo's decisions only
        bo[1]["decision"] = "accept"
        _write(sheets["bo"], bo)
        import_decisions(wh, "b", sheets["bo"], reviewer="bo")
        assert _status(wh)["en:2"][0] == "accepted_review"
        assert wh.scalar("SELECT count(*) FROM qa_reviews WHERE starts_with(reviewer, 'human:')") == 4


def test_an_item_whose_checks_could_not_run_is_unchecked_and_kept_out_by_the_prescreen_policy(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "home") as wh:
        _items(wh)
        with wh.transaction() as cur:  # en:1's pre-screen call was skipped by the budget: its verdicts are unsure
            cur.execute("UPDATE qa_reviews SET verdict = 'unsure', reason = 'pre-screen call skipped_budget'"
                        " WHERE item_id = 'en:1'")
            cur.execute("INSERT INTO qa_items SELECT * REPLACE ('en:4' AS item_id) FROM qa_items WHERE item_id = 'en:1'")
        status = _status(wh)
        assert status["en:1"][0] == "unchecked"  # a check that could not run is no pass
        assert status["en:4"][0] == "unchecked"  # never screened at all
        assert [r[0] for r in accepted_items(wh, "b", "prescreen")] == []
        assert [r[0] for r in accepted_items(wh, "b", "human")] == ["en:1", "en:2", "en:4"]
        sheet = tmp_path / "doubtful.csv"
        assert export_sheet(wh, "b", sheet, only_flagged=True) == 3
        assert _read(sheet)[0]["unsure_checks"] == "answer_correct (llm:judge)"


def test_a_bad_review_file_lists_every_problem_and_imports_nothing(tmp_path: Path) -> None:
    sheet = tmp_path / "review.csv"
    with Warehouse(tmp_path / "home") as wh:
        _items(wh)
        export_sheet(wh, "b", sheet)
        records = _read(sheet)
        records[0] |= {"decision": "maybe", "reviewer": "ana"}
        records[1] |= {"decision": "accept"}  # no reviewer anywhere
        records.append(records[1] | {"item_id": "en:99", "reviewer": "ana"})
        _write(sheet, records)
        with pytest.raises(ConfigError) as error:
            import_decisions(wh, "b", sheet)
        message = str(error.value)
        assert "review.csv: 3 problem(s); nothing was imported" in message
        assert "line 2: decision 'maybe'" in message
        assert "line 3: no reviewer" in message
        assert "line 4: no item 'en:99' in benchmark 'b'" in message
        assert wh.scalar("SELECT count(*) FROM qa_reviews WHERE starts_with(reviewer, 'human:')") == 0


def test_a_sheet_must_be_csv_or_jsonl(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "home") as wh, pytest.raises(ConfigError, match=r"\.csv or \.jsonl"):
        export_sheet(wh, "b", tmp_path / "review.xlsx")


def _read(path: Path) -> list[dict]:
    if path.suffix == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            return list(csv.DictReader(handle))
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, records: list[dict]) -> None:
    if path.suffix == ".csv":
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(records[0]))
            writer.writeheader()
            writer.writerows(records)
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
