"""Heuristic features against hand-computed values, and one stage cell per feature."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import sacrebleu
from rouge_score import rouge_scorer
from sacrebleu.metrics.helpers import extract_all_word_ngrams

from flows.features import FeaturesParams, features_flow
from tasks.features.deterministic import DETERMINISTIC, answer_bleu, answer_rouge_l, bleu_tokenizer, rouge_words
from tasks.features.inputs import feature_inputs
from tasks.features.ngrams import clipped_matches
from tasks.inference.language import response_language
from tasks.inference.reading import citations
from tasks.warehouse.db import Warehouse

DOCS = [{"doc_id": d, "title": "", "text": "", "role": role}
        for d, role in (("d1", "support"), ("d2", "support"), ("d3", "support"), ("x", "distractor"))]


def _instance(cur, instance_id: str, lang: str, answer: str, documents: list[dict]) -> None:
    cur.execute("INSERT INTO instances VALUES ('b', ?, ?, 'mirage', 'rag', ?, 'q?', ?, ?, NULL, NULL, ?, 0, 'fp',"
                " NULL, NULL, NULL)", [instance_id, instance_id, lang, answer, lang, json.dumps(documents)])


def _response(cur, instance_id: str, model: str, lang: str, answer: str, status: str = "ok") -> None:
    language = response_language(answer, lang)
    cur.execute("INSERT INTO responses VALUES ('b', ?, ?, 'rag', ?, ?, NULL, ?, ?, ?, 1, 1, 0.1, NULL, 'answer_mirage',"
                " 'fp', ?, ?, ?, ?, ?)",
                [instance_id, model, lang, status, answer, answer if status == "ok" else None, citations(answer),
                 language.status, language.detected, language.target_prob, language.english_prob,
                 language.switched_share])


@pytest.fixture
def wh(tmp_path: Path) -> Warehouse:
    with Warehouse(tmp_path / "home") as warehouse:
        with warehouse.transaction() as cur:
            cur.execute("INSERT INTO qa_benchmarks VALUES ('b', 'mirage', ['en', 'zh', 'km'], 'g', '{}', now())")
            _instance(cur, "i1", "en", "", DOCS)
            _instance(cur, "i2", "zh", "长江是中国最长的河流", DOCS)
            _instance(cur, "i3", "km", "", [])
            # i1: no gold answer, so the reference is system "ref"'s answer
            _response(cur, "i1", "sys", "en", "The river rises in the hills north of the old town [x][d2, d2][d1].")
            _response(cur, "i1", "ref", "en", "The river rises in the hills north of the old town [d1].")
            _response(cur, "i1", "mute", "en", "I don't know.")
            _response(cur, "i2", "sys", "zh", "长江是最长的河流")
            _response(cur, "i2", "ref", "zh", "", status="call_failed")
            _response(cur, "i3", "sys", "km", "ព្រះរាជាណាចក្រកម្ពុជា")
        yield warehouse


def _values(wh: Warehouse, name: str) -> dict[tuple[str, str], tuple]:
    inputs = feature_inputs(wh, "b", "ref")
    return {(i.instance_id, i.model): (v.value, v.status) for i, v in zip(inputs, DETERMINISTIC[name](inputs))}


def test_citation_map_and_recall_follow_trec_eval_on_deduplicated_lists(wh: Warehouse) -> None:
    # "[x][d2, d2][d1]" ranks x, d2, d1 against relevant {d1, d2, d3}: AP@10 = (1/2 + 2/3) / 3, R@10 = 2/3
    average_precision = _values(wh, "citation_map_at_10")
    assert average_precision[("i1", "sys")] == (pytest.approx((1 / 2 + 2 / 3) / 3), "ok")
    assert _values(wh, "citation_recall_at_10")[("i1", "sys")] == (pytest.approx(2 / 3), "ok")
    assert average_precision[("i1", "ref")] == (pytest.approx(1 / 3), "ok")  # d1 at rank 1 of 3 relevant
    assert average_precision[("i1", "mute")] == (0.0, "ok")  # no citation scores 0
    assert average_precision[("i3", "sys")][1] == "not_applicable"  # no judged relevant passage (no documents)
    assert average_precision[("i2", "ref")][1] == "no_response"


def test_overlap_uses_the_gold_answer_or_a_reference_system_never_scoring_it_against_itself(wh: Warehouse) -> None:
    bleu, rouge = _values(wh, "answer_bleu"), _values(wh, "answer_rouge_l")
    assert bleu[("i1", "ref")][1] == rouge[("i1", "ref")][1] == "excluded"
    # sys says ref's sentence word for word (citations stripped): BLEU 100, ROUGE-L 1
    assert bleu[("i1", "sys")] == (pytest.approx(100.0), "ok") and rouge[("i1", "sys")] == (pytest.approx(1.0), "ok")
    assert rouge[("i1", "mute")][0] == 0.0


def test_rouge_segments_unspaced_scripts_into_words(wh: Warehouse) -> None:
    # 长江/是/中国/最长/的/河流 (reference, 6 words) vs 长江/是/最长/的/河流 (5): LCS 5, P 1, R 5/6 → F 10/11;
    # split on spaces, each sentence would be a single token and score 0
    assert _values(wh, "answer_rouge_l")[("i2", "sys")] == (pytest.approx(10 / 11), "ok")


PIECES = {
    "en": ["The", "the", "river", "River", "rises", "in", "hills", "l'homme", "don't", "3.14", "1,000", "1871", "co-op",
           "U.S.", "&", '"quoted"', "naïve", "Straße", "—", ",", ".", "(", ")", "?", "x"],
    "zh": ["长江", "是", "中国", "最长", "的", "河流", "。", "，", "2024年", "GDP", "发源于", "青藏高原", "它", "流经", "上海"],
    "th": ["แม่น้ำ", "สะพาน", "เมือง", "ปี", " ", "1871"],
}
HAND_PAIRS = [("", "The river."), ("The river.", ""), ("", ""), ("...", "The river."), ("The river.", "The river."),
              ("river the river the", "the river"), ("A b c d e", "e d c b a"), ("x", "y"), ("the the the", "the"),
              ("The river rises. ", "The river rises."), ("长江是最长的河流", "长江是中国最长的河流")]


def _random_pairs(lang: str, count: int, seed: int) -> list[tuple[str, str]]:
    """Texts from a small vocabulary with punctuation, numbers and repeats: LCS and n-gram clipping both matter."""
    rng = random.Random(seed)
    joiner = " " if lang == "en" else ""

    def text() -> str:
        return joiner.join(rng.choices(PIECES[lang], k=rng.randint(0, 40)))

    return [(text(), text()) for _ in range(count)]


@pytest.mark.parametrize("lang", ["en", "zh", "th"])
def test_batched_rouge_l_is_rouge_score_exactly(lang: str) -> None:
    pairs = _random_pairs(lang, 300, seed=1) + HAND_PAIRS
    words = SimpleNamespace(tokenize=lambda text: rouge_words(text, lang))  # rouge-score's tokenizer interface
    scorer = rouge_scorer.RougeScorer(["rougeL"], tokenizer=words)
    expected = [scorer.score(reference, hypothesis)["rougeL"].fmeasure for hypothesis, reference in pairs]
    assert answer_rouge_l(pairs, lang) == expected


@pytest.mark.parametrize("lang", ["en", "zh", "th"])
def test_batched_bleu_is_sacrebleu_sentence_score_exactly(lang: str) -> None:
    pairs = _random_pairs(lang, 300, seed=2) + HAND_PAIRS
    pairs += [(hypothesis, pairs[0][1]) for hypothesis, _ in pairs[1:50]]  # one reference, many systems' answers
    pairs += [(reference, hypothesis) for hypothesis, reference in pairs[50:80]]  # texts in both roles
    pairs += [(pairs[1][0], reference) for _, reference in pairs[80:90]]  # one answer against several references
    expected = [sacrebleu.sentence_bleu(hypothesis, [reference], tokenize=bleu_tokenizer(lang)).score
                for hypothesis, reference in pairs]
    assert answer_bleu(pairs, lang) == expected


def test_clipped_matches_are_sacrebleus_counts_for_every_order() -> None:
    # four words: n-grams repeat within and across sequences, some sequences are empty or shorter than an order
    rng = random.Random(3)
    sequences = [rng.choices("abcd", k=rng.randint(0, 12)) for _ in range(60)]
    hypotheses, references = (np.array([rng.randrange(len(sequences)) for _ in range(300)]) for _ in range(2))
    expected = []
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        ours, _ = extract_all_word_ngrams(" ".join(sequences[hypothesis]), 1, 5)
        theirs, _ = extract_all_word_ngrams(" ".join(sequences[reference]), 1, 5)
        correct = [0] * 5
        for gram, count in ours.items():
            correct[len(gram) - 1] += min(count, theirs.get(gram, 0))
        expected.append(correct)
    assert clipped_matches(sequences, hypotheses, references, 5).tolist() == expected


def test_language_features_and_extras(wh: Warehouse) -> None:
    target = _values(wh, "target_language")
    assert target[("i1", "sys")][0] > 0.9 and target[("i2", "sys")][0] > 0.9
    assert target[("i3", "sys")] == (None, "unsupported")  # Khmer: lingua does not know it
    assert _values(wh, "extra_refusal")[("i1", "mute")] == (1.0, "ok")
    assert _values(wh, "extra_answer_chars")[("i2", "sys")] == (8.0, "ok")


@pytest.mark.usefixtures("prefect_api")
def test_each_feature_is_its_own_cell(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BABELBENCH_COMPUTE", "inline")
    home = str(wh.home)
    wh.close()
    first = features_flow(FeaturesParams(benchmark="b", features=["answer_bleu"], reference_model="ref", home=home))
    assert [(r["cell"], r["status"]) for r in first] == [("b/answer_bleu", "computed")]
    every = features_flow(FeaturesParams(benchmark="b", reference_model="ref", home=home))
    statuses = {r["cell"]: r["status"] for r in every}
    assert statuses.pop("b/answer_bleu") == "cached" and set(statuses.values()) == {"computed"}
    with Warehouse(Path(home)) as reopened:
        assert reopened.scalar("SELECT count(DISTINCT feature) FROM features") == len(DETERMINISTIC)
        assert reopened.scalar("SELECT count(*) FROM features") == 6 * len(DETERMINISTIC)


@pytest.mark.usefixtures("prefect_api")
def test_graded_features_without_a_grader_are_refused_before_anything_runs(wh: Warehouse) -> None:
    from tasks.errors import ConfigError

    home = str(wh.home)
    wh.close()
    with pytest.raises(ConfigError, match="fluency_score: graded by an LLM; name the grader"):
        features_flow(FeaturesParams(benchmark="b", features=["fluency_score", "answer_bleu"], home=home))


def test_features_without_a_value_are_counted_per_system(wh: Warehouse) -> None:
    from tasks.features.compute import compute_feature, missing_features
    from tasks.features.models import FeatureModels

    output = compute_feature(wh, "b", "citation_map_at_10", "ref", FeatureModels(), "fp")
    # ref failed on i2 (no_response); sys has no judged relevant passage on i3 (not_applicable); mute has its one
    assert output.message == ("citation_map_at_10: {'no_response': 1, 'not_applicable': 1, 'ok': 4};"
                              " no value for: ref 1/2, sys 1/3")
    assert missing_features(wh, "b") == {"ref": {"citation_map_at_10": 1}, "sys": {"citation_map_at_10": 1}}
    assert missing_features(wh, "b", ["sys", "mute"]) == {"sys": {"citation_map_at_10": 1}}
