"""Instances per setting from accepted items, passing translations and kept distractors (counts from the specs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tasks.instances.build import InstanceConfig, build_instances
from tasks.instances.export import export_instances
from tasks.warehouse.db import Warehouse

EN_TITLES = ["Velna", "Tarsk", "Mirra", "Orvik", "Brennmoor", "Lake Ondra", "Jonas Halvar", "Velna Symphony",
             "Maren Tolk", "Velna Bridge", "Tarsk Cathedral", "Orvik Lighthouse", "Kelda Mountains", "FC Tarsk"]
DE_TITLES = ["Velna", "Tarsk", "Orvik", "Brennmoor"]


def _page_ids(wh: Warehouse, lang: str, titles: list[str]) -> list[int]:
    found = dict(wh.query("SELECT title, page_id FROM documents WHERE lang = ? AND NOT is_redirect", [lang]))
    return [found[title] for title in titles]


def _setup(wh: Warehouse) -> dict[str, list[int]]:
    en, de = _page_ids(wh, "en", EN_TITLES), _page_ids(wh, "de", DE_TITLES)

    def doc(lang: str, page_id: int) -> dict:
        return {"lang": lang, "page_id": page_id, "title": "t"}

    items = [  # benchmark, item_id, recipe, lang, question, answer, qtype, context, documents
        ("x", "A", "xrag", "en", "qA", "aA", "comparison", None, [doc("en", en[0]), doc("en", en[1])]),
        ("x", "B", "xrag", "en", "qB", "aB", "multihop", None, [doc("en", en[2]), doc("de", de[0])]),
        ("x", "D", "xrag", "en", "qD", "aD", "set", None, [doc("en", en[3]), doc("en", en[4])]),
        ("x", "R", "xrag", "en", "qR", "aR", "set", None, [doc("en", en[3]), doc("en", en[4])]),
        ("e", "de:1", "eclektic", "de", "qC", "aC", None, "Kontext", [doc("de", de[1])]),
    ]
    translations = [("x", "A", "question", "de", "qA-de", "pass"), ("x", "A", "answer", "de", "aA-de", "pass"),
                    ("x", "B", "question", "de", "qB-de", "pass"), ("x", "B", "answer", "de", "aB-de", "pass"),
                    ("e", "de:1", "question", "en", "qC-en", "pass"), ("e", "de:1", "answer", "en", "aC-en", "pass"),
                    ("e", "de:1", "context", "en", "context-en", "pass"),
                    ("e", "de:1", "question", "fr", "qC-fr", "pass"), ("e", "de:1", "answer", "fr", "aC-fr", "fail"),
                    ("e", "de:1", "context", "fr", "contexte", "pass")]
    distractors = ([("x", "A", "en", p, r, "kept") for r, p in enumerate(en[5:11], 1)]
                   + [("x", "A", "en", en[11], 7, "rejected")]
                   + [("x", "B", "en", p, r, "kept") for r, p in enumerate(en[5:8], 1)]
                   + [("x", "B", "de", p, r, "kept") for r, p in enumerate(de[1:4], 1)]
                   + [("x", "D", "en", p, r, "kept") for r, p in enumerate(en[5:10], 1)])
    with wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('x', 'xrag', ['en', 'de'], 'g', '{}', now()),"
                    " ('e', 'eclektic', ['de', 'en', 'fr'], 'g', '{}', now())")
        for b, i, recipe, lang, q, a, qtype, context, docs in items:
            cur.execute("INSERT INTO qa_items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, 'ok', NULL, NULL, 'g', 'fp', NULL, NULL, NULL)",
                        [b, i, recipe, lang, q, a, qtype, context, json.dumps(docs)])
            # the pre-screen ran and passed every item
            cur.execute("INSERT INTO qa_reviews VALUES (?, ?, 'natural', 'pass', 'llm:j', NULL, NULL, 'prescreen', 'fp',"
                        " now())", [b, i])
        cur.execute("INSERT INTO qa_reviews VALUES ('x', 'R', 'overall', 'fail', 'human:ana', NULL, NULL, 'f.csv', NULL, now())")
        for b, i, field, tgt, text, gate in translations:
            cur.execute("INSERT INTO translations (benchmark, item_id, field, src_lang, tgt_lang, source_text, text, gate,"
                        " status, translator, fingerprint) VALUES (?, ?, ?, 'xx', ?, 's', ?, ?, 'ok', 'm', 'fp')",
                        [b, i, field, tgt, text, gate])
        for b, i, lang, page_id, rank, status in distractors:
            cur.execute("INSERT INTO distractors VALUES (?, ?, ?, ?, 't', ?, NULL, NULL, ?, ?, NULL, 'fp')",
                        [b, i, lang, page_id, rank, 1.0 / rank, status])
    return {"en": en, "de": de}


def _instances(wh: Warehouse, benchmark: str) -> dict[tuple[str, str, str], dict]:
    rows = wh.query("SELECT item_id, setting, lang, question, answer, documents, prompt_hint, judge_context, seed"
                    " FROM instances WHERE benchmark = ?", [benchmark])
    return {(r[0], r[1], r[2]): {"question": r[3], "answer": r[4], "documents": json.loads(r[5]),
                                 "hint": json.loads(r[6]) if r[6] else None, "judge_context": r[7], "seed": r[8]}
            for r in rows}


def test_xrag_settings_follow_the_spec_table(sample_home: Path) -> None:
    with Warehouse(sample_home) as wh:
        pages = _setup(wh)
        output = build_instances(wh, "x", InstanceConfig(), "fp")
        found = _instances(wh, "x")
    assert set(found) == {
        ("A", "closed_book", "en"), ("A", "oracle", "en"),
        ("A", "monolingual_retrieval", "en"), ("A", "monolingual_retrieval", "de"),
        ("B", "closed_book", "en"), ("B", "multilingual_retrieval", "de"),
        ("D", "closed_book", "en"), ("D", "oracle", "en"),  # R was rejected by a person
    }
    mono = found[("A", "monolingual_retrieval", "de")]
    assert (mono["question"], mono["answer"]) == ("qA-de", "aA-de")
    roles = sorted((d["role"], d["lang"]) for d in mono["documents"])
    assert roles == [("distractor", "en")] * 6 + [("support", "en")] * 2
    assert {d["page_id"] for d in mono["documents"] if d["role"] == "distractor"} == set(pages["en"][5:11])
    multi = found[("B", "multilingual_retrieval", "de")]
    assert sorted((d["role"], d["lang"]) for d in multi["documents"]) == (
        [("distractor", "de")] * 3 + [("distractor", "en")] * 3 + [("support", "de"), ("support", "en")])
    assert found[("A", "closed_book", "en")]["documents"] == []
    assert all(d["text"] for d in mono["documents"])  # article text is included
    assert {i["reason"] for i in output.issues if i["item"] == "D"} == {
        "monolingual_retrieval: 5 of 6 en distractors kept"}


def test_eclektic_closed_book_and_hints_only_where_every_field_passed_its_gate(sample_home: Path) -> None:
    with Warehouse(sample_home) as wh:
        _setup(wh)
        output = build_instances(wh, "e", InstanceConfig(), "fp")
        found = _instances(wh, "e")
    assert set(found) == {("de:1", "closed_book", "de")} | {
        ("de:1", setting, "en") for setting in
        ("closed_book", "hint_general", "hint_source_lang", "hint_source_title", "open_book_source_context")}
    assert found[("de:1", "closed_book", "de")]["judge_context"] == "Kontext"
    assert found[("de:1", "hint_source_lang", "en")]["hint"] == {"kind": "source_lang", "source_lang": "de"}
    open_book = found[("de:1", "open_book_source_context", "en")]
    assert (open_book["question"], open_book["judge_context"]) == ("qC-en", "context-en")
    assert [(d["lang"], d["text"]) for d in open_book["documents"]] == [("de", "Kontext")]
    assert [i["reason"] for i in output.issues] == ["not in fr: a translation is missing or failed its gate"]


def test_document_order_is_seeded_per_instance(sample_home: Path) -> None:
    def orders(wh: Warehouse, seed: int) -> dict:
        build_instances(wh, "x", InstanceConfig(seed=seed), "fp")
        return {key: [d["page_id"] for d in value["documents"]] for key, value in _instances(wh, "x").items()}

    with Warehouse(sample_home) as wh:
        _setup(wh)
        first, again, other = orders(wh, 0), orders(wh, 0), orders(wh, 1)
        with wh.transaction() as cur:  # another item disappearing does not move A's documents
            cur.execute("DELETE FROM qa_items WHERE item_id = 'B'")
        without_b = orders(wh, 0)
    key = ("A", "monolingual_retrieval", "de")
    assert first == again
    assert sorted(first[key]) == sorted(other[key]) and first[key] != other[key]
    assert without_b[key] == first[key]


def test_export_writes_one_file_per_setting_and_language_and_replaces_the_old_build(sample_home: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with Warehouse(sample_home) as wh:
        _setup(wh)
        build_instances(wh, "x", InstanceConfig(), "fp")
        (out / "x").mkdir(parents=True)
        (out / "x" / "stale.en.jsonl").write_text("old\n")
        counts = export_instances(wh, "x", out)
    assert counts == {"closed_book.en.jsonl": 3, "oracle.en.jsonl": 2, "monolingual_retrieval.en.jsonl": 1,
                      "monolingual_retrieval.de.jsonl": 1, "multilingual_retrieval.de.jsonl": 1}
    assert sorted(p.name for p in (out / "x").iterdir()) == sorted(counts)
    [line] = (out / "x" / "multilingual_retrieval.de.jsonl").read_text(encoding="utf-8").splitlines()
    record = json.loads(line)
    assert record["item_id"] == "B" and record["question"] == "qB-de" and len(record["documents"]) == 8


@pytest.mark.parametrize("policy,expected", [("prescreen", {"A"}), ("human", {"A", "F", "U", "N"})])
def test_qc_policy_decides_whether_a_machine_flag_keeps_an_item_out(sample_home: Path, policy: str, expected: set) -> None:
    with Warehouse(sample_home) as wh:
        _setup(wh)
        with wh.transaction() as cur:
            for copy in ("F", "U", "N"):  # copies of A: flagged, unsure (the screen could not run), never screened
                cur.execute(f"INSERT INTO qa_items SELECT * REPLACE ('{copy}' AS item_id) FROM qa_items WHERE item_id = 'A'")
            cur.execute("INSERT INTO qa_reviews VALUES ('x', 'F', 'natural', 'fail', 'llm:j', NULL, NULL, 'prescreen', 'fp', now())")
            cur.execute("INSERT INTO qa_reviews VALUES ('x', 'U', 'natural', 'unsure', 'llm:j', NULL,"
                        " 'pre-screen call failed: permanent: HTTP 400', 'prescreen', 'fp', now())")
        build_instances(wh, "x", InstanceConfig(qc_policy=policy), "fp")
        items = {r[0] for r in wh.query("SELECT DISTINCT item_id FROM instances WHERE setting = 'oracle'"
                                        " AND item_id IN ('A', 'F', 'U', 'N')")}
    assert items == expected


def test_every_shown_document_carries_the_day_of_its_article_s_timestamp(sample_home: Path) -> None:
    """XRAG's answer prompt shows each article's date: the instance's documents carry it (the revision's day)."""
    with Warehouse(sample_home) as wh:
        _setup(wh)
        build_instances(wh, "x", InstanceConfig(), "fp")
        stamps = {(lang, page_id): timestamp for lang, page_id, timestamp in
                  wh.query("SELECT lang, page_id, CAST(timestamp AS VARCHAR) FROM documents")}
        found = _instances(wh, "x")
    shown = [d for value in found.values() for d in value["documents"]]
    assert shown and any(stamps[(d["lang"], d["page_id"])] for d in shown)  # the sample's articles are dated
    for document in shown:
        stamp = stamps[(document["lang"], document["page_id"])]
        assert document["date"] == (stamp[:10] if stamp else None)
