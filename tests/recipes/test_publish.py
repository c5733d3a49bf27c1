"""`babelbench publish`: the bundled XRAG-format sample, over the ingested sample corpus and evaluated by the
model-free baselines, published as a Hugging Face dataset folder and read back by the real readers — `datasets`
loads every configuration with the card's features, mlcroissant validates the Croissant file and its records equal
the Parquet rows, the card states what the warehouse knows, a rerun writes the same bytes, every source names its
article, revision and dump, and `import hf` into a fresh home gives the same instances.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import yaml

from flows.evaluate import EvaluateParams, evaluate_flow
from tasks.errors import BabelbenchError, ConfigError
from tasks.imports.common import import_dataset, write_benchmark
from tasks.publish import publish, push_folder
from tasks.publish.rows import instance_rows
from tasks.recipe import recipe
from tasks.sample.xrag_sample import write_xrag_sample
from tasks.warehouse.db import Warehouse
from tasks.warehouse.records import InstanceRecord, ItemRecord
from tests.support.published_folders import assert_records_equal_rows, assert_same_bytes, changed_copy
from tests.support.loopback_http import LoopbackServer, Reply

pytestmark = pytest.mark.usefixtures("prefect_api")
NAME = "xrag-sample"
SYSTEMS = ["oracle", "extractive", "abstain"]


@pytest.fixture(scope="module")
def published(sample_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(home, folder): the sample corpus with the XRAG sample imported and evaluated, published once."""
    home = tmp_path_factory.mktemp("publish") / "home"
    shutil.copytree(sample_corpus, home)
    with Warehouse(home) as wh:
        import_dataset(wh, "xrag", write_xrag_sample(home / "xrag-sample.jsonl"), NAME, None)
    evaluate_flow(EvaluateParams(benchmark=NAME, models=SYSTEMS, judges=["reference-judge"], home=str(home)))
    with Warehouse(home) as wh:
        folder = publish(wh, NAME, home.parent / "out").folder
    yield home, folder


def _front_matter(folder: Path) -> dict:
    text = (folder / "README.md").read_text(encoding="utf-8")
    return yaml.safe_load(text.split("---\n")[1])


def test_every_configuration_loads_with_datasets_with_the_documented_features(published: tuple[Path, Path],
                                                                              tmp_path: Path) -> None:
    home, folder = published
    with Warehouse(home, read_only=True) as wh:
        expected = {f"{setting}-{lang}": count for setting, lang, count in wh.query(
            "SELECT setting, lang, count(*) FROM instances WHERE benchmark = ? GROUP BY ALL", [NAME])}
    front = _front_matter(folder)
    assert front["license"] == "cc-by-sa-4.0" and front["language"] == ["de", "fr"]
    assert front["size_categories"] == ["n<1K"] and "question-answering" in front["task_categories"]
    documented = {info["config_name"]: datasets.Features._from_yaml_list(info["features"])
                  for info in front["dataset_info"]}
    assert {config["config_name"] for config in front["configs"]} == set(expected) == set(documented)
    for name, count in expected.items():
        loaded = datasets.load_dataset(str(folder), name, cache_dir=str(tmp_path / "cache"))
        assert list(loaded) == ["test"] and loaded["test"].num_rows == count
        assert loaded["test"].features == documented[name]
        assert {"question", "answer", "documents", "sources", "content_hash"} <= set(loaded["test"].column_names)


def test_the_croissant_file_validates_and_its_records_equal_the_parquet_rows(published: tuple[Path, Path]) -> None:
    _, folder = published
    document = assert_records_equal_rows(folder)
    for field in ("rai:dataCollection", "rai:dataAnnotationProtocol", "rai:dataBiases",
                  "rai:personalSensitiveInformation"):
        assert document[field], field
    assert "http://mlcommons.org/croissant/RAI/1.0" in document["conformsTo"]
    assert sorted(record_set["@id"] for record_set in document["recordSet"]) == \
           ["multilingual_retrieval-de/test", "multilingual_retrieval-fr/test"]


def test_the_card_states_dumps_leaderboard_licence_and_citations(published: tuple[Path, Path]) -> None:
    home, folder = published
    card = (folder / "README.md").read_text(encoding="utf-8")
    with Warehouse(home, read_only=True) as wh:
        dumps = wh.query("SELECT lang, wiki, dump_date FROM dumps WHERE lang IN ('de', 'en', 'fr')")
        oracle = wh.query("SELECT value, ci_low, ci_high FROM leaderboard WHERE benchmark = ? AND model = 'oracle'"
                          " AND metric = 'accuracy' AND lang = 'de' AND subset = 'all'", [NAME])
    assert len(dumps) == 3
    for lang, wiki, dump in dumps:
        assert f"| {lang} | {wiki} | {dump} |" in card
    (value, low, high), = oracle
    assert f"| multilingual_retrieval | de | oracle | accuracy | {value:.2f} | {low:.2f} – {high:.2f} |" in card
    assert "CC BY-SA 4.0" in card and recipe("xrag").card.citation in card
    assert "- **import** — cells xrag-sample" in card


def test_a_rerun_over_the_same_warehouse_writes_the_same_bytes(published: tuple[Path, Path], tmp_path: Path) -> None:
    home, folder = published
    with Warehouse(home) as wh:
        again = publish(wh, NAME, tmp_path).folder
    assert len(assert_same_bytes(folder, again)) == 4  # card, Croissant, one Parquet file per language


def test_every_source_names_its_article_revision_and_dump(published: tuple[Path, Path]) -> None:
    home, folder = published
    rows = [row for path in sorted(folder.glob("data/*/*.parquet")) for row in pq.read_table(path).to_pylist()]
    with Warehouse(home, read_only=True) as wh:
        corpus = {(lang, title): (page_id, revision_id, dump) for lang, title, page_id, revision_id, dump in wh.query(
            "SELECT d.lang, d.title, d.page_id, d.revision_id, f.dump_date FROM documents d"
            " JOIN dumps f ON f.name = d.source WHERE NOT d.is_redirect")}
    for row in rows:
        assert len(row["sources"]) == len(row["documents"]) == 4  # two supporting articles, two distractors
        for source in row["sources"]:
            assert corpus[(source["lang"], source["title"])] == (source["page_id"], source["revision_id"],
                                                                source["dump"])
            assert source["wiki"] == f"{source['lang']}wiki" and source["revision_id"] is not None
            assert source["url"].startswith(f"https://{source['lang']}.wikipedia.org/wiki/")


def test_import_hf_into_a_fresh_home_gives_the_same_instances_and_keeps_licence_and_citation(
        published: tuple[Path, Path], tmp_path: Path) -> None:
    home, folder = published
    with Warehouse(home, read_only=True) as wh:
        before = {row["instance_id"]: row for row in instance_rows(wh, NAME)}
    with Warehouse(tmp_path / "fresh") as wh:
        import_dataset(wh, "hf", folder, None, None)
        after = {row["instance_id"]: row for row in instance_rows(wh, NAME)}
        republished = publish(wh, NAME, tmp_path / "again").folder
    assert set(after) == set(before) and len(after) == 68
    for key, row in before.items():
        for column in ("item_id", "setting", "lang", "question", "answer", "source_lang", "qtype", "seed"):
            assert after[key][column] == row[column], (key, column)
        assert [d["text"] for d in json.loads(after[key]["documents"])] == \
               [d["text"] for d in json.loads(row["documents"])]
    hashes = {row["instance_id"]: row["content_hash"]
              for path in folder.glob("data/*/*.parquet") for row in pq.read_table(path).to_pylist()}
    again = {row["instance_id"]: row["content_hash"]
             for path in republished.glob("data/*/*.parquet") for row in pq.read_table(path).to_pylist()}
    assert again == hashes
    card = (republished / "README.md").read_text(encoding="utf-8")
    original_citation = json.loads((folder / "croissant.json").read_text(encoding="utf-8"))["citeAs"]
    assert "whose licence it keeps: **cc-by-sa-4.0**" in card and original_citation in card


def test_a_row_changed_since_publishing_is_refused_naming_it(published: tuple[Path, Path], tmp_path: Path) -> None:
    _, folder = published
    copy = tmp_path / NAME
    table = changed_copy(folder, copy, "data/multilingual_retrieval-fr/test-00000-of-00001.parquet", "answer",
                         lambda answers: [*answers[:2], "Something else.", *answers[3:]])
    instance = table.column("instance_id")[2].as_py()
    with Warehouse(tmp_path / "fresh") as wh:
        with pytest.raises(ConfigError, match=rf"test-00000-of-00001.parquet row 3 \(instance {instance}\): the content"):
            import_dataset(wh, "hf", copy, None, None)
        assert wh.scalar("SELECT count(*) FROM instances") == 0


def test_a_built_benchmark_names_its_models_and_the_languages_it_lost(home: Path, tmp_path: Path) -> None:
    home.mkdir(parents=True)
    documents = json.dumps([{"lang": "de", "page_id": 7, "title": "Velna", "text": "Die Velna ist lang.",
                             "role": "support"}])
    with Warehouse(home) as wh:
        write_benchmark(wh, "built", "xrag", Path("built"), "fp", [
            InstanceRecord("built", "i1", "q1", "xrag", "multilingual_retrieval", "de", "Wie lang?", "Lang.", "de",
                           documents, 0, "fp")],
            [ItemRecord("built", "q1", "xrag", "de", "local", "fp", question="Wie lang?", answer="Lang.")])
        with wh.transaction() as cur:
            cur.execute("UPDATE qa_benchmarks SET generator = 'local', langs = ['de', 'ja'] WHERE benchmark = 'built'")
            cur.execute("INSERT INTO translations (benchmark, item_id, field, src_lang, tgt_lang, source_text, gate, status,"
                        " reason, translator, fingerprint) VALUES ('built', 'q1', 'question', 'de', 'ja', 'Wie lang?',"
                        " 'fail', 'ok', 'chrF too low', 'local', 'fp')")
        folder = publish(wh, "built", tmp_path).folder
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "| local | translated, wrote questions | llamacpp |" in card
    assert "Gemma Terms of Use" in card
    assert "Language ja was dropped: no item's translation passed the gate (0 of 1 passed)." in card
    assert "| ja | 1 | 0 (0.0%) |" in card  # the gate table
    assert "1 source(s) could not be traced to an ingested dump" in card  # no corpus in this home


def test_a_benchmark_without_instances_or_unknown_is_an_error(home: Path, tmp_path: Path) -> None:
    home.mkdir(parents=True)
    with Warehouse(home) as wh, pytest.raises(ConfigError, match="'nothing' has no instances to publish"):
        publish(wh, "nothing", tmp_path)
    assert not (tmp_path / "nothing").exists()


def test_a_push_without_a_token_is_refused_before_anything_is_sent(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # no stored login either
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens: a request would fail otherwise
    with pytest.raises(ConfigError, match="no Hugging Face token; set HF_TOKEN"):
        push_folder(tmp_path, "someone/dataset")


def test_a_push_the_hub_refuses_fails_naming_the_repository_and_the_hubs_reason(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    reason = b'{"error": "You don\'t have the rights to create a dataset under the namespace \\"someone\\""}'
    with LoopbackServer() as hub:
        hub.always("/api/repos/create", Reply(403, {"Content-Type": "application/json"}, reason))
        monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", hub.base_url)  # what HF_ENDPOINT sets at import
        with pytest.raises(BabelbenchError) as caught:
            push_folder(tmp_path, "someone/dataset", token="hf_test_token")
        requests = hub.requests
    assert str(caught.value).startswith("--push someone/dataset: the hub refused the upload")
    assert "rights to create a dataset" in str(caught.value) and "hf_test_token" not in str(caught.value)
    assert (requests[0].method, requests[0].path) == ("POST", "/api/repos/create")
    assert requests[0].headers["authorization"] == "Bearer hf_test_token"
    # the client may look the repository up after the refusal; nothing of the folder was sent
    assert all(r.method == "GET" for r in requests[1:]) and len(requests) <= 2
