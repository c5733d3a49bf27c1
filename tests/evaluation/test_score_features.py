"""``babelbench score features``: MIRAGE's features of replies made elsewhere, from files, with hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from tasks.errors import ConfigError
from tasks.features.from_files import score_feature_files

# q1 shows d1, d2, d3, of which d1 and d3 are relevant (d2 judged 0); q2 shows e1, relevant
PASSAGES = [("q1", "d1", "The Eiffel Tower was finished in 1889."), ("q1", "d2", "Lyon is a city in France."),
            ("q1", "d3", "The tower stands in Paris."), ("q2", "e1", "Der Rhein fließt durch Köln.")]
QRELS = "q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 1\nq2 0 e1 1\n"
RESPONSES = [
    # cites d2 (not relevant) then d1: AP@10 = (1/2, the precision at d1's rank 2) / 2 relevant = 0.25;
    # recall@10 = 1 of the 2 relevant = 0.5
    {"query_id": "q1", "lang": "en", "model": "a",
     "text": "##Reason: Lyon is not it [d2]. It was finished in 1889 [d1].\n##Answer: The Eiffel Tower is in Paris."},
    # cites [d1, d3]: both relevant at ranks 1 and 2: AP = (1/1 + 2/2) / 2 = 1.0, recall 1.0
    {"query_id": "q1", "lang": "en", "model": "b", "text": "##Reason: See [d1, d3].\n##Answer: Paris"},
    # cites e1, the only relevant passage: AP 1.0, recall 1.0
    {"query_id": "q2", "lang": "de", "model": "a",
     "text": "##Reason: Der Rhein fließt durch die Stadt Köln [e1].\n##Answer: Der Rhein fließt durch Köln."},
]
REFERENCE = [{"query_id": "q1", "answer": "Paris"}]


def _lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text(QRELS, encoding="utf-8")
    return {"responses": _lines(tmp_path / "r.jsonl", RESPONSES), "qrels": qrels,
            "passages": _lines(tmp_path / "p.jsonl", [{"query_id": q, "doc_id": d, "text": t} for q, d, t in PASSAGES]),
            "reference": _lines(tmp_path / "ref.jsonl", REFERENCE)}


def test_citations_are_ranked_against_every_judged_relevant_passage_shown_or_not(files: dict[str, Path]) -> None:
    # the qrels also judge d4 relevant for q1, a passage the model was not shown: trec_eval's denominators count it
    files["qrels"].write_text(QRELS + "q1 0 d4 1\n", encoding="utf-8")
    result = score_feature_files(files["responses"], files["passages"], files["qrels"],
                                 only=["citation_MAP@10", "citation_Recall@10"])
    scored = {(r["query_id"], r["model"]): r["features"] for r in result["responses"]}
    # b cites d1, d3: 2 of the 3 relevant, recall 2/3; AP@10 = (1/1 + 2/2) / 3 = 2/3 (shown only: 1.0 and 1.0)
    assert scored[("q1", "b")] == {"citation_MAP@10": pytest.approx(2 / 3), "citation_Recall@10": pytest.approx(2 / 3)}
    # a cites d2 (not relevant), then d1 at rank 2: AP@10 = (1/2) / 3 = 1/6, recall 1/3
    assert scored[("q1", "a")] == {"citation_MAP@10": pytest.approx(1 / 6), "citation_Recall@10": pytest.approx(1 / 3)}
    assert scored[("q2", "a")] == {"citation_MAP@10": 1.0, "citation_Recall@10": 1.0}  # e1, q2's only relevant


def test_citation_features_rank_the_cited_ids_against_the_judged_relevant_passages(files: dict[str, Path]) -> None:
    result = score_feature_files(files["responses"], files["passages"], files["qrels"],
                                 only=["citation_MAP@10", "citation_Recall@10"])
    scored = [(r["query_id"], r["model"], r["features"]) for r in result["responses"]]
    assert scored == [
        ("q1", "a", {"citation_MAP@10": 0.25, "citation_Recall@10": 0.5}),
        ("q1", "b", {"citation_MAP@10": 1.0, "citation_Recall@10": 1.0}),
        ("q2", "a", {"citation_MAP@10": 1.0, "citation_Recall@10": 1.0}),
    ]
    # a's means: (0.25 + 1.0) / 2 and (0.5 + 1.0) / 2
    assert result["models"] == {"a": {"citation_MAP@10": 0.625, "citation_Recall@10": 0.75},
                                "b": {"citation_MAP@10": 1.0, "citation_Recall@10": 1.0}}


def test_every_deterministic_feature_by_the_specs_name_with_a_reference(files: dict[str, Path]) -> None:
    result = score_feature_files(files["responses"], files["passages"], files["qrels"], files["reference"])
    first, second, german = (r["features"] for r in result["responses"])
    assert set(first) == {"target_language", "english_language", "citation_MAP@10", "citation_Recall@10",
                          "answer_bleu", "answer_rougeL", "extra_answer_chars", "extra_code_switching",
                          "extra_refusal"}
    # an English reply to an English question: lingua is sure of English, both as target and as English
    assert first["target_language"] > 0.9 and first["english_language"] > 0.9
    # a German reply to a German question: German, not English
    assert german["target_language"] > 0.9 and german["english_language"] < 0.1
    # "Paris" against the reference "Paris": identical, BLEU 100 and ROUGE-L 1
    assert second["answer_bleu"] == pytest.approx(100.0) and second["answer_rougeL"] == 1.0
    # "The Eiffel Tower is in Paris." against "Paris": LCS 1 of 6 words and of 1, F = 2 (1/6)(1) / (1/6 + 1) = 2/7
    assert first["answer_rougeL"] == pytest.approx(2 / 7)
    assert second["extra_answer_chars"] == 5.0 and second["extra_refusal"] == 0.0  # "Paris"
    # q2 has no reference line: no overlap score, and the reason is given
    assert german["answer_bleu"] is None and result["responses"][2]["missing"]["answer_bleu"] == "not_applicable"


def test_without_a_reference_the_overlap_features_are_not_applicable(files: dict[str, Path]) -> None:
    result = score_feature_files(files["responses"], files["passages"], files["qrels"],
                                 only=["answer_bleu", "answer_rougeL"])
    assert all(r["features"] == {"answer_bleu": None, "answer_rougeL": None} for r in result["responses"])
    assert all(r["missing"] == {"answer_bleu": "not_applicable", "answer_rougeL": "not_applicable"}
               for r in result["responses"])
    assert result["models"] == {"a": {"answer_bleu": None, "answer_rougeL": None},
                                "b": {"answer_bleu": None, "answer_rougeL": None}}


@pytest.mark.parametrize(("name", "record", "error"), [
    ("responses", {"query_id": "q1", "lang": "en", "model": "c"}, r"r.jsonl line 4: not a valid response .*text"),
    ("responses", RESPONSES[1], r"r.jsonl line 4: query and model \('q1', 'b'\) again \(first on line 2\)"),
    ("responses", {"query_id": "q9", "lang": "en", "model": "c", "text": "x"},
     r"r.jsonl line 4: p.jsonl has no passage of query 'q9'"),
    ("passages", {"query_id": "q1", "doc_id": "d2", "text": "again"},
     r"p.jsonl line 5: passage \('q1', 'd2'\) again \(first on line 2\)"),
    ("reference", {"query_id": "q1", "answer": 5}, r"ref.jsonl line 2: not a valid reference"),
])
def test_a_bad_line_is_an_error_naming_the_file_and_line(files: dict[str, Path], name: str, record: dict,
                                                         error: str) -> None:
    with files[name].open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\n")
    with pytest.raises(ConfigError, match=error):
        score_feature_files(files["responses"], files["passages"], files["qrels"], files["reference"])


def test_a_bad_qrels_line_or_feature_name_is_a_clear_error(files: dict[str, Path]) -> None:
    with pytest.raises(ConfigError, match="answer_overlap_score: graded by an LLM"):
        score_feature_files(files["responses"], files["passages"], files["qrels"], only=["answer_overlap_score"])
    with pytest.raises(ConfigError, match="unknown feature\\(s\\) citation_ndcg"):
        score_feature_files(files["responses"], files["passages"], files["qrels"], only=["citation_ndcg"])
    with pytest.raises(ConfigError, match="reranker_score reads the question: .* query 'q1' of 'a'"):
        score_feature_files(files["responses"], files["passages"], files["qrels"], only=["reranker_score"])
    files["qrels"].write_text(QRELS + "q2 e1 1\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="qrels.tsv line 5: expected 'query_id Q0 docid relevance'"):
        score_feature_files(files["responses"], files["passages"], files["qrels"])


def test_the_score_features_command(files: dict[str, Path]) -> None:
    options = ["score", "features", "--responses", str(files["responses"]), "--passages", str(files["passages"]),
               "--qrels", str(files["qrels"]), "--only", "citation_MAP@10,extra_answer_chars"]
    as_json = CliRunner().invoke(app, [*options, "--json"])
    assert as_json.exit_code == 0, as_json.output
    assert json.loads(as_json.output)["models"]["b"] == {"citation_MAP@10": 1.0, "extra_answer_chars": 5.0}
    readable = CliRunner().invoke(app, options)
    assert readable.exit_code == 0, readable.output
    assert "citation_MAP@10          0.6250" in readable.output
    bad = CliRunner().invoke(app, [*options[:-1], "fluency_score"])
    assert bad.exit_code == 2 and "fluency_score: graded by an LLM" in bad.output


def test_the_support_features_run_when_named(files: dict[str, Path], tmp_path: Path) -> None:
    from tasks.features.models import FeatureModels
    from tests.support.tiny_models import build_nli_classifier

    nli = build_nli_classifier([text for _, _, text in PASSAGES] + [r["text"] for r in RESPONSES], tmp_path)
    result = score_feature_files(files["responses"], files["passages"], files["qrels"],
                                 only=["support_entailment", "support_neutral"], models=FeatureModels(nli=str(nli)))
    for response in result["responses"]:
        entail, neutral = response["features"]["support_entailment"], response["features"]["support_neutral"]
        # an untrained model's numbers, but probabilities of two of three labels of the same pairs
        assert 0.0 <= entail <= 1.0 and 0.0 <= neutral <= 1.0 and entail + neutral <= 1.0 + 1e-6
    assert set(result["models"]) == {"a", "b"}
