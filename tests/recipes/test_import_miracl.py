"""MIRACL-style topics, qrels and corpus as a MIRAGE benchmark, and MIRAGE's cited-reasoning prompt on it."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tasks.errors import ConfigError
from tasks.imports.common import import_dataset
from tasks.inference.prompting import InferenceConfig
from tasks.inference.respond import answer_instances
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer, fake_client, prompt_of

PASSAGES = [
    {"docid": "100#0", "title": "Velna", "text": "Die Velna entspringt im Keldagebirge."},
    {"docid": "100#1", "title": "Velna", "text": "Die Velna ist 212 Kilometer lang."},
    {"docid": "200#3", "title": "Tarsk", "text": "Tarsk liegt an der Velna."},
    {"docid": "300#0", "title": "Orvik-Brücke", "text": "Die Orvik-Brücke wurde 1871 von Maren Tolk gebaut."},
    {"docid": "999#9", "title": "Unbeurteilt", "text": "Dieser Abschnitt wurde nie beurteilt."},
]


def _miracl(root: Path, *, qrels: str | None = None, topics: str | None = None) -> Path:
    """MIRACL's two repositories side by side: topics and qrels for de, and the de corpus."""
    base = root / "miracl" / "miracl-v1.0-de"
    (base / "topics").mkdir(parents=True)
    (base / "qrels").mkdir()
    (base / "topics" / "topics.miracl-v1.0-de-dev.tsv").write_text(
        topics or "1\tWo entspringt die Velna?\n2\tWer baute die Orvik-Brücke?\n3\tEine Frage ohne Urteil?\n",
        encoding="utf-8")
    (base / "qrels" / "qrels.miracl-v1.0-de-dev.tsv").write_text(
        qrels or "1\tQ0\t100#0\t1\n1\tQ0\t100#1\t0\n1\tQ0\t200#3\t0\n2\tQ0\t300#0\t1\n", encoding="utf-8")
    corpus = root / "miracl" / "miracl-corpus-v1.0-de"
    corpus.mkdir()
    with gzip.open(corpus / "docs-0.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(json.dumps(p, ensure_ascii=False) + "\n" for p in PASSAGES)
    return root / "miracl"


def _instances(wh: Warehouse) -> dict[str, dict]:
    return {r["item_id"]: r for r in wh.query_dicts("SELECT * FROM instances WHERE benchmark = 'mirage'")}


def test_each_judged_query_becomes_an_instance_with_its_judged_passages(tmp_path: Path) -> None:
    source = _miracl(tmp_path)
    with Warehouse(tmp_path / "home") as wh:
        ref = import_dataset(wh, "miracl", source, "mirage", None)
        assert "1 queries without judgements skipped" in ref.message
        instances = _instances(wh)
        assert set(instances) == {"de:1", "de:2"}
        first = instances["de:1"]
        assert (first["recipe"], first["setting"], first["lang"], first["question"]) == (
            "mirage", "rag", "de", "Wo entspringt die Velna?")
        documents = json.loads(first["documents"])
        assert sorted((d["doc_id"], d["role"], d["page_id"]) for d in documents) == [
            ("100#0", "support", 100), ("100#1", "distractor", 100), ("200#3", "distractor", 200)]
        assert {d["text"] for d in documents} == {p["text"] for p in PASSAGES[:3]}
        order = [d["doc_id"] for d in documents]
        # the same files again: a cache hit; forced: the same shuffled order
        assert import_dataset(wh, "miracl", source, "mirage", None).status == "cached"
        import_dataset(wh, "miracl", source, "mirage", None, force=True)
        assert [d["doc_id"] for d in json.loads(_instances(wh)["de:1"]["documents"])] == order


def test_a_bad_qrels_line_names_the_line_and_leaves_the_earlier_import(tmp_path: Path) -> None:
    with Warehouse(tmp_path / "home") as wh:
        import_dataset(wh, "miracl", _miracl(tmp_path / "good"), "mirage", None)
        bad = _miracl(tmp_path / "bad", qrels="1\tQ0\t100#0\t1\n1\tQ0\t100#1\n")
        with pytest.raises(ConfigError, match=r"qrels.miracl-v1.0-de-dev.tsv line 2: expected 'query_id Q0 docid"):
            import_dataset(wh, "miracl", bad, "mirage", None)
        assert set(_instances(wh)) == {"de:1", "de:2"}


@pytest.mark.parametrize("topics, qrels, message", [
    # two texts for query 1: which one would be asked?
    ("1\tWo entspringt die Velna?\n2\tWer baute die Orvik-Brücke?\n1\tWie lang ist die Velna?\n", None,
     r"topics.miracl-v1.0-de-dev.tsv line 3: query id 1 again \(first on line 1\)"),
    # 100#0 judged twice for query 1, even with the same relevance
    (None, "1\tQ0\t100#0\t1\n1\tQ0\t200#3\t0\n1\tQ0\t100#0\t1\n",
     r"qrels.miracl-v1.0-de-dev.tsv line 3: query 1 judges passage 100#0 again \(first on line 1\)"),
])
def test_a_repeated_topic_or_judgement_is_an_error_naming_both_lines(tmp_path: Path, topics: str | None,
                                                                     qrels: str | None, message: str) -> None:
    source = _miracl(tmp_path, topics=topics, qrels=qrels)
    with Warehouse(tmp_path / "home") as wh:
        with pytest.raises(ConfigError, match=message):
            import_dataset(wh, "miracl", source, "mirage", None)
        assert wh.scalar("SELECT count(*) FROM instances") == 0


def test_the_same_passage_judged_for_two_queries_is_not_a_repeat(tmp_path: Path) -> None:
    source = _miracl(tmp_path, qrels="1\tQ0\t100#0\t1\n2\tQ0\t100#0\t0\n2\tQ0\t300#0\t1\n")
    with Warehouse(tmp_path / "home") as wh:
        import_dataset(wh, "miracl", source, "mirage", None)
        assert set(_instances(wh)) == {"de:1", "de:2"}


def test_a_judged_passage_missing_from_the_corpus_is_an_error(tmp_path: Path) -> None:
    source = _miracl(tmp_path, qrels="1\tQ0\t100#0\t1\n1\tQ0\t555#5\t0\n")
    with Warehouse(tmp_path / "home") as wh, pytest.raises(ConfigError, match=r"de: 1 judged passage.*555#5"):
        import_dataset(wh, "miracl", source, "mirage", None)
    with Warehouse(tmp_path / "home") as wh:
        assert wh.scalar("SELECT count(*) FROM instances") == 0


def test_mirage_asks_for_cited_reasoning_over_docid_title_text_passages(tmp_path: Path, server: FakeLLMServer) -> None:
    server.answer("Velna", "##Reason: Die Velna entspringt im Keldagebirge [100#0], und Tarsk liegt an ihr [200#3]."
                           "\n##Answer: Im Keldagebirge [100#0][200#3]")
    with Warehouse(tmp_path / "home") as wh:
        import_dataset(wh, "miracl", _miracl(tmp_path), "mirage", ["de"])
        answer_instances(wh, fake_client(wh, server), "mirage", "rag", "de", "fake", InferenceConfig(), "fp")
        response = wh.query_dicts("SELECT * FROM responses WHERE instance_id = '1|rag|de'")[0]
    call = next(c for c in server.calls if "Velna" in prompt_of(c.body))
    prompt = prompt_of(call.body)
    assert "[100#0] Velna - Die Velna entspringt im Keldagebirge." in prompt
    assert "[200#3] Tarsk - Tarsk liegt an der Velna." in prompt
    assert "##Reason:" in prompt and "##Answer:" in prompt and "German" in prompt
    assert prompt.index("Wo entspringt die Velna?") < prompt.index("[100#0]")  # the question, then the passages
    # MIRAGE's sampling: temperature 0.1, room for a reasoned answer
    assert call.body["temperature"] == 0.1 and call.body["max_tokens"] == 512
    assert response["template"] == "answer_mirage"
    assert response["answer"] == "Im Keldagebirge [100#0][200#3]"
    assert response["citations"] == ["100#0", "200#3"]
