"""The model-based features with tiny local models: NLI labels read by name, means over cited passages only."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tasks.features import models as feature_models
from tasks.features.inputs import FeatureInput, feature_inputs
from tasks.features.models import MODEL_FEATURES, FeatureModels, reranker_score, support
from tasks.inference.prompting import InferenceConfig
from tasks.inference.respond import answer_instances
from tasks.warehouse.db import Warehouse
from tests.support.fake_llm_server import FakeLLMServer, fake_client
from tests.support.tiny_models import build_cross_encoder, build_nli_classifier

PASSAGES = {"d1": "The Velna rises in the Kelda hills.", "d2": "Tarsk lies on the Velna.", "d3": "Orvik is a port."}
TEXTS = list(PASSAGES.values()) + ["Where does the Velna rise?", "It rises in the hills, near Tarsk."]


def _item(raw: str, cited: tuple[str, ...], status: str = "ok") -> FeatureInput:
    return FeatureInput("i", "sys", "en", "Where does the Velna rise?", status, raw, raw, raw, cited,
                        frozenset({"d1"}), PASSAGES, None, False, "ok", 0.9, 0.1, 0.0)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> tuple[FeatureModels, FeatureModels]:
    """Two NLI models with the same weights, whose first two labels are named the other way round."""
    root = tmp_path_factory.mktemp("models")
    first = build_nli_classifier(TEXTS, root / "a")
    swapped = root / "b" / "nli"
    shutil.copytree(first, swapped)
    config = json.loads((swapped / "config.json").read_text())
    config["id2label"] = {"0": "neutral", "1": "entailment", "2": "contradiction"}
    config["label2id"] = {"neutral": 0, "entailment": 1, "contradiction": 2}
    (swapped / "config.json").write_text(json.dumps(config))
    reranker = str(build_cross_encoder(TEXTS, root / "r"))
    return FeatureModels(nli=str(first), reranker=reranker), FeatureModels(nli=str(swapped), reranker=reranker)


def test_support_reads_entailment_and_neutral_by_label_name(models: tuple[FeatureModels, FeatureModels]) -> None:
    item = _item("##Reason: The Velna rises in the hills [d1]. Tarsk is on it [d2].\n##Answer: the hills [d1]",
                 ("d1", "d2"))
    (entail_a, neutral_a), (entail_b, neutral_b) = (support([item], m) for m in models)
    assert entail_b[0].value == pytest.approx(neutral_a[0].value)  # same outputs, names swapped
    assert neutral_b[0].value == pytest.approx(entail_a[0].value)
    assert 0.0 <= entail_a[0].value <= 1.0 and entail_a[0].value + neutral_a[0].value <= 1.0 + 1e-6


def test_support_needs_a_reasoning_sentence_citing_a_shown_passage(models: tuple[FeatureModels, FeatureModels]) -> None:
    uncited = _item("##Reason: The Velna rises in the hills.\n##Answer: the hills [d1]", ("d1",))
    unknown = _item("##Reason: The Velna rises in the hills [zz].\n##Answer: the hills", ("zz",))
    failed = _item("", (), status="call_failed")
    entail, _ = support([uncited, unknown, failed], models[0])
    assert [v.status for v in entail] == ["not_applicable", "not_applicable", "no_response"]


def test_the_reranker_score_is_the_mean_over_the_cited_passages(models: tuple[FeatureModels, FeatureModels]) -> None:
    both, first, second = (_item("x", cited) for cited in (("d1", "d2", "d1"), ("d1",), ("d2",)))
    values = reranker_score([both, first, second, _item("x", ("zz",))], models[0])
    assert values[0].value == pytest.approx((values[1].value + values[2].value) / 2, abs=1e-5)  # d1 counted once
    assert values[3].status == "not_applicable"


def test_entailment_and_neutral_cells_share_one_nli_pass(models: tuple[FeatureModels, FeatureModels],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # the flow runs the two cells in threads at the same time; each reads the inputs afresh
    model = feature_models._cross_encoder(models[0].nli, models[0])
    batches: list[int] = []
    predict = model.predict
    monkeypatch.setattr(model, "predict",
                        lambda pairs, **options: batches.append(len(pairs)) or predict(pairs, **options))

    def cell(name: str) -> list[float | None]:
        item = _item("##Reason: Orvik is a port [d3]. The Velna rises near Tarsk [d2, d1].\n##Answer: a port [d3]",
                     ("d3", "d2", "d1"))
        return [value.value for value in MODEL_FEATURES[name]([item], models[0])]

    with ThreadPoolExecutor(2) as pool:
        entail, neutral = pool.map(cell, ["support_entailment", "support_neutral"])
    assert batches == [3]  # (d3, sentence 1), (d2, sentence 2), (d1, sentence 2): predicted once for both cells
    assert cell("support_neutral") == neutral and batches == [3]
    other = _item("##Reason: Tarsk lies on the Velna [d2].\n##Answer: on the Velna [d2]", ("d2",))
    assert support([other], models[0])[0][0].status == "ok" and batches == [3, 1]  # other pairs: a pass of their own
    assert entail[0] is not None and entail[0] + neutral[0] <= 1.0 + 1e-6


def test_a_completion_models_reply_is_its_reasoning_and_a_template_echo_is_not(
        models: tuple[FeatureModels, FeatureModels], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        server: FakeLLMServer) -> None:
    """Through the inference stage: a base model continues MIRAGE's prompt (which ends with ``##Reason:``), the
    endpoint sends the prompt back ahead of the completion, and the model runs on into the template again, citing d3
    there.  The support features read the two reasoning sentences (d1, d2) and nothing of either echo."""
    documents = [{"doc_id": doc, "title": "", "text": text, "role": "support"} for doc, text in PASSAGES.items()]
    completion = (" The Velna rises in the Kelda hills [d1]. Tarsk lies on the Velna [d2].\n##Answer: the hills [d1]"
                  "\n\nQuestion: Where is Orvik?\n\nPassages:\n[d3] Orvik is a port.\n##Reason: Orvik is a port [d3].")
    server.answer("Where does the Velna rise?", lambda prompt: prompt + completion)
    with Warehouse(tmp_path / "home") as wh:
        with wh.transaction() as cur:
            cur.execute("INSERT INTO instances VALUES ('b', 'i', 'i', 'mirage', 'rag', 'en', 'Where does the Velna"
                        " rise?', '', 'en', NULL, NULL, ?, 0, 'fp', NULL, NULL, NULL)", [json.dumps(documents)])
        answer_instances(wh, fake_client(wh, server, mode="completion"), "b", "rag", "en", "fake", InferenceConfig(),
                         "fp")
        assert wh.scalar("SELECT raw_text FROM responses").startswith("Question: Where does the Velna rise?")
        (item,) = feature_inputs(wh, "b")
    assert item.primed and item.raw_text == completion  # past the endpoint's echo of the prompt
    model = feature_models._cross_encoder(models[0].nli, models[0])
    batches: list[list[tuple[str, str]]] = []
    predict = model.predict
    monkeypatch.setattr(model, "predict", lambda pairs, **options: batches.append(pairs) or predict(pairs, **options))
    entail, _ = support([item], models[0])
    assert entail[0].status == "ok"  # before: the echoed instructions' "##Reason:" was read, citing nothing
    # (premise, hypothesis) per citing sentence; strip_citations leaves the space before the full stop
    assert batches == [[(PASSAGES["d1"], "The Velna rises in the Kelda hills ."),
                        (PASSAGES["d2"], "Tarsk lies on the Velna .")]]
    # read unprimed, as a chat reply, the only reason marker is the echo's: its d3 sentence would be checked
    support([_item(completion, ("d1", "d2"))], models[0])
    assert batches[-1] == [(PASSAGES["d3"], "Orvik is a port .")]
