"""The translation stage against the loopback fake endpoint: statuses, retries, budget stops, the call cache.

Every reply that matters is scripted by the prompt it answers (the source
text for a forward call, the translation for its round trip); the fake's
unscripted echo is never relied on.  Entities come from the sample warehouse
in the one test that needs them; elsewhere the warehouse is empty, so there
are no entities to check.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.llm import Budget
from tasks.translate import TranslateConfig, TranslationUnit, parse_translation, translate_units
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer, Fault, fake_client

CONFIG = TranslateConfig()
COLUMNS = "text, back_text, detected_lang, chrf, numbers_ok, entities_ok, gate, status, reason"


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with Warehouse(tmp_path / "home") as warehouse:
        yield warehouse


def _unit(item_id: str, field: str, text: str, src_lang: str = "de") -> TranslationUnit:
    return TranslationUnit(item_id=item_id, field=field, src_lang=src_lang, text=text)


def _rows(wh: Warehouse, benchmark: str = "b", tgt_lang: str = "en") -> dict[tuple[str, str], dict]:
    rows = wh.query_dicts(f"SELECT item_id, field, {COLUMNS}, translator, fingerprint FROM translations"
                          " WHERE benchmark = ? AND tgt_lang = ?", [benchmark, tgt_lang])
    return {(row.pop("item_id"), row.pop("field")): row for row in rows}


def test_every_unit_gets_a_row_with_its_status_and_gate(wh: Warehouse, server: FakeLLMServer) -> None:
    units = [
        _unit("i1", "question", "Wann wurde die erste Glashütte in Brennmoor eröffnet?"),
        _unit("i1", "answer", "im Jahr 1587"),
        _unit("i2", "question", "Wie viele Einwohner hatte Tarsk im Jahr 2020?"),
        _unit("i3", "question", "Wie lang ist die Velna zwischen Tarsk und Orvik?"),
        _unit("i4", "question", "Wer komponierte die Velna-Sinfonie?"),
        _unit("i4", "answer", "Jonas Halvar"),
        _unit("i5", "question", "Wo liegt der Ondrasee?"),
    ]
    # forward replies (keyed by the German source) and round trips (keyed by the English translation)
    server.script("Wann wurde die erste Glashütte",
                  Fault.text("English: When was the first glassworks in Brennmoor opened?"))
    server.script("When was the first glassworks", Fault.text("Wann wurde die erste Glashütte in Brennmoor eröffnet?"))
    server.script("im Jahr 1587", Fault.text("in 1587"))
    server.script("English: in 1587", Fault.text("im Jahr 1587"))
    server.script("Wie viele Einwohner", Fault.text("Combien d'habitants comptait Tarsk en 2020 ?"))  # wrong language
    server.script("Combien d'habitants", Fault.text("Wie viele Einwohner hatte Tarsk im Jahr 2020?"))
    server.script("Wie lang ist die Velna zwischen",
                  Fault.with_status(500), Fault.text("How long is the Velna between Tarsk and Orvik?"))
    server.script("How long is the Velna between", Fault.text("Wie lang ist die Velna zwischen Tarsk und Orvik?"))
    server.script("Wer komponierte", Fault.with_status(400, "unsupported language pair"))
    server.script("Jonas Halvar", Fault.text(""))
    server.script("Wo liegt der Ondrasee", Fault.text("Where is Lake Ondra?"))
    server.script("Where is Lake Ondra", Fault.with_status(400, "round trip refused"))
    with wh.transaction() as cur:  # a stale row of this cell, and a row of another cell
        for lang in ("en", "fr"):
            cur.execute("INSERT INTO translations (benchmark, item_id, field, src_lang, tgt_lang, source_text, status,"
                        " translator, fingerprint) VALUES ('b', 'old', 'question', 'de', ?, 'x', 'ok', 'fake', 'fp0')",
                        [lang])

    output = translate_units(wh, fake_client(wh, server), "b", units, "en", "fake", CONFIG, "fp1")

    rows = _rows(wh)
    assert set(rows) == {(u.item_id, u.field) for u in units}  # the stale row is gone
    assert wh.scalar("SELECT count(*) FROM translations WHERE tgt_lang = 'fr'") == 1  # another cell is untouched
    assert output.rows == 7
    assert output.message == "3 pass, 1 fail, 1 parse_failed, 2 call_failed"
    assert {(r["translator"], r["fingerprint"]) for r in rows.values()} == {("fake", "fp1")}

    passed = rows[("i1", "question")]
    assert passed["text"] == "When was the first glassworks in Brennmoor opened?"  # the echoed label is stripped
    assert passed["back_text"] == "Wann wurde die erste Glashütte in Brennmoor eröffnet?"
    assert (passed["status"], passed["gate"], passed["reason"]) == ("ok", "pass", None)
    assert passed["chrf"] == 100.0 and passed["detected_lang"] == "en"
    assert passed["numbers_ok"] is True and passed["entities_ok"] is True

    answer = rows[("i1", "answer")]
    assert (answer["text"], answer["gate"], answer["detected_lang"]) == ("in 1587", "pass", None)  # too short to detect

    wrong = rows[("i2", "question")]
    assert (wrong["status"], wrong["gate"], wrong["detected_lang"]) == ("ok", "fail", "fr")
    assert wrong["reason"] == "language: detected fr, expected en"

    retried = rows[("i3", "question")]
    assert (retried["status"], retried["gate"]) == ("ok", "pass")
    assert len(server.calls_about("Wie lang ist die Velna zwischen")) == 2  # the 500, then the answer

    refused = rows[("i4", "question")]
    assert (refused["status"], refused["text"], refused["gate"]) == ("call_failed", None, None)
    assert refused["reason"].startswith("permanent") and "unsupported language pair" in refused["reason"]
    assert len(server.calls_about("Wer komponierte")) == 1  # a 400 is not retried

    empty = rows[("i4", "answer")]
    assert (empty["status"], empty["text"], empty["gate"], empty["reason"]) == (
        "parse_failed", None, None, "no translation in the reply")

    unchecked = rows[("i5", "question")]
    assert (unchecked["status"], unchecked["text"], unchecked["back_text"], unchecked["gate"]) == (
        "call_failed", "Where is Lake Ondra?", None, None)
    assert unchecked["reason"].startswith("round trip: permanent") and "round trip refused" in unchecked["reason"]


def test_a_budget_stop_resumes_without_repeating_calls_and_a_rerun_makes_none(wh: Warehouse, server: FakeLLMServer) -> None:
    pairs = [
        ("Wo entspringt die Mirra im Gebirge?", "Where does the Mirra rise in the mountains?"),
        ("Wann erhielt Orvik das Stadtrecht?", "When did Orvik receive its town charter?"),
        ("Wer entwarf die Velnabrücke in Tarsk?", "Who designed the Velna Bridge in Tarsk?"),
    ]
    units = [_unit(f"i{n}", "question", german) for n, (german, _) in enumerate(pairs)]
    for german, english in pairs:
        server.script(german, Fault.text(english))
        server.script(english, Fault.text(german))
    client = fake_client(wh, server)

    stopped = translate_units(wh, client, "b", units, "en", "fake", CONFIG, "fp", budget=Budget(max_calls=2))
    rows = _rows(wh)
    assert len(server.calls) == 2
    assert stopped.message == "3 skipped_budget"
    assert {row["status"] for row in rows.values()} == {"skipped_budget"}
    # two translations came back and wait for their round trip; the third was never sent
    assert sorted(row["text"] is not None for row in rows.values()) == [False, True, True]
    assert all(row["gate"] is None for row in rows.values())

    # forward calls already made come from the cache: exactly the 4 missing calls fit a budget of 4
    resumed = translate_units(wh, client, "b", units, "en", "fake", CONFIG, "fp", budget=Budget(max_calls=4))
    assert resumed.message == "3 pass"
    assert len(server.calls) == 6
    for german, english in pairs:  # every distinct request was sent once
        assert len(server.calls_about(german)) == 1 and len(server.calls_about(english)) == 1

    before = _rows(wh)
    again = translate_units(wh, client, "b", units, "en", "fake", CONFIG, "fp", budget=Budget(max_calls=0))
    assert len(server.calls) == 6 and again.message == "3 pass"
    assert _rows(wh) == before


def test_a_dropped_entity_is_stored_as_the_gate_reason(sample_home: Path, server: FakeLLMServer) -> None:
    source = "Tarsk lies where the Mirra flows into the Velna."
    server.script(source, Fault.text("その町はミラ川がヴェルナ川に合流する地点にある。"))
    server.script("その町は", Fault.text("The town lies where the Mirra flows into the Velna."))
    with Warehouse(sample_home) as wh:
        translate_units(wh, fake_client(wh, server), "b", [_unit("t1", "question", source, "en")], "ja", "fake", CONFIG, "fp")
        row = _rows(wh, tgt_lang="ja")[("t1", "question")]
    assert (row["status"], row["gate"], row["detected_lang"], row["entities_ok"]) == ("ok", "fail", "ja", False)
    assert row["reason"] == "entities missing: Q9100005 (タルスク)"  # sample: Tarsk is タルスク on the Japanese wiki


@pytest.mark.parametrize(("unit", "message"), [
    (_unit("i9", "question", "Where is Orvik?", "en"), "item 'i9' field question: already in en"),
    (_unit("i9", "answer", "  "), "item 'i9' field answer: empty text"),
    (_unit("i9", "answer", "Orvik", "xx"), "unknown language code 'xx'"),
])
def test_bad_units_stop_the_stage_before_any_call(wh: Warehouse, server: FakeLLMServer, unit: TranslationUnit,
                                                  message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        translate_units(wh, fake_client(wh, server), "b", [unit], "en", "fake", CONFIG, "fp")
    assert server.calls == []


def test_the_same_field_twice_is_an_error_naming_it(wh: Warehouse, server: FakeLLMServer) -> None:
    units = [_unit("i1", "question", "Wo liegt Orvik?"), _unit("i1", "question", "Wo liegt Tarsk?")]
    with pytest.raises(ConfigError, match="item 'i1' field question: given twice"):
        translate_units(wh, fake_client(wh, server), "b", units, "en", "fake", CONFIG, "fp")


@pytest.mark.parametrize(("reply", "expected"), [
    (" Die Brücke ist alt.", "Die Brücke ist alt."),
    ("German: Die Brücke ist alt.", "Die Brücke ist alt."),
    ("**German translation:** Die Brücke ist alt.", "Die Brücke ist alt."),
    ("Translation:\n„Die Brücke ist alt.“", "Die Brücke ist alt."),
    ('"Die Brücke ist alt."', "Die Brücke ist alt."),
    ("「橋は古い。」", "橋は古い。"),
    ("Die Brücke ist alt.\nEnglish: The bridge is old.", "Die Brücke ist alt."),  # the pattern carried on
    ("Die Brücke ist alt.\n\nNote: a literal translation.", "Die Brücke ist alt."),
])
def test_replies_are_read_tolerantly(reply: str, expected: str) -> None:
    parsed = parse_translation(reply)
    assert parsed.status == "ok" and parsed.value == expected


@pytest.mark.parametrize("reply", ["", "  \n", "German:", "**Translation:**"])
def test_an_empty_reply_is_a_parse_failure(reply: str) -> None:
    assert parse_translation(reply).status == "parse_failed"


def test_the_output_limit_follows_the_source_length_within_floor_and_cap() -> None:
    config = TranslateConfig(tokens_per_char=0.5, min_tokens=16, max_tokens=100)
    assert config.token_limit("Orvik") == 16          # 2.5 → the floor
    assert config.token_limit("x" * 101) == 51         # ceil(50.5)
    assert config.token_limit("x" * 1000) == 100       # the cap
    with pytest.raises(ValueError, match="min_tokens 200 > max_tokens 100"):
        TranslateConfig(min_tokens=200, max_tokens=100)
