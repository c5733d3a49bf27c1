"""`babelbench publish` of a CLIR collection: one built over the ingested sample (en, de, fr; some topics in no base
split), published as a Hugging Face dataset folder and read back by the real readers — `datasets` loads every
configuration with the card's features and the warehouse's rows, mlcroissant validates the Croissant file and its
records equal the Parquet rows, the card's label distribution and Jenks breaks equal what the test computes itself
from the warehouse (the breaks with jenkspy's public function, from the stored BM25 scores), a rerun writes the same
bytes, and `import hf` into a fresh home gives a collection that `clir eval` scores exactly as the original.
"""

from __future__ import annotations

import json
import shutil
import statistics
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import unquote

import datasets
import jenkspy
import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml

from flows.clir import ClirBuildParams, clir_build_flow, clir_eval_flow
from tasks.errors import ConfigError
from tasks.imports.common import import_dataset
from tasks.pairing.config import ClirConfig
from tasks.publish import publish
from tasks.stages.clir_eval import ClirEvalParams
from tasks.warehouse.db import Warehouse
from tests.support.published_folders import assert_records_equal_rows, assert_same_bytes, changed_copy

pytestmark = pytest.mark.usefixtures("prefect_api")
NAME = "sample-clir"
LANGS = ["en", "de", "fr"]
# K = 20 over the sample's ~30 articles a language; a fifth of the topics in no base split (split `full`)
CLIR = ClirConfig(top_k=20, min_documents=10, split_fractions={"train": 0.5, "dev": 0.1, "test1": 0.1, "test2": 0.1})


@pytest.fixture(scope="module")
def published(sample_corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """(home, folder): the sample corpus with a BI and MULTI collection built over en, de, fr, the BI one published."""
    home = tmp_path_factory.mktemp("publish-clir") / "home"
    shutil.copytree(sample_corpus, home)
    rows = clir_build_flow(ClirBuildParams(name=NAME, langs=LANGS, multi=True, clir=CLIR, home=str(home)))
    assert {row["status"] for row in rows} == {"computed"}
    with Warehouse(home) as wh:
        folder = publish(wh, NAME, home.parent / "out").folder
    yield home, folder


def _front_matter(folder: Path) -> dict:
    return yaml.safe_load((folder / "README.md").read_text(encoding="utf-8").split("---\n")[1])


def _parquet(folder: Path, config: str, split: str) -> list[dict]:
    return pq.read_table(folder / "data" / config / f"{split}-00000-of-00001.parquet").to_pylist()


def test_every_configuration_loads_with_datasets_and_holds_the_warehouse_rows(published: tuple[Path, Path],
                                                                              tmp_path: Path) -> None:
    home, folder = published
    with Warehouse(home, read_only=True) as wh:
        qrels = wh.query("SELECT src_lang, tgt_lang, split, query_id, doc_id, label, is_pad FROM clir_qrels"
                         " WHERE collection = ?", [NAME])
        articles = {lang: wh.query("SELECT page_id, title, text FROM documents WHERE lang = ? AND NOT is_redirect"
                                   " AND NOT is_disambiguation", [lang]) for lang in LANGS}
    front = _front_matter(folder)
    assert front["license"] == "cc-by-sa-4.0" and front["language"] == ["de", "en", "fr"]
    assert front["task_categories"] == ["text-retrieval"] and "clirmatrix" in front["tags"]
    documented = {info["config_name"]: datasets.Features._from_yaml_list(info["features"])
                  for info in front["dataset_info"]}
    configs = {config["config_name"]: {entry["split"]: entry["path"] for entry in config["data_files"]}
               for config in front["configs"]}
    assert set(configs) == set(documented)
    # the hub's size category of every row published: qrels, documents, queries
    total = len(qrels) + sum(len(rows) for rows in articles.values()) + len({(s, q) for s, _, _, q, *_ in qrels})
    assert 1_000 <= total < 10_000 and front["size_categories"] == ["1K<n<10K"]
    directions = {(src, tgt) for src, tgt, *_ in qrels}
    assert len(directions) == 6 and {split for _, _, split, *_ in qrels} == {"train", "dev", "test1", "test2", "full"}
    assert set(documented) == ({f"documents-{lang}" for lang in LANGS} | {f"queries-{lang}" for lang in LANGS}
                               | {f"qrels-{src}.{tgt}" for src, tgt in directions})
    for src, tgt in directions:
        loaded = datasets.load_dataset(str(folder), f"qrels-{src}.{tgt}", cache_dir=str(tmp_path / "cache"))
        for split in loaded:
            assert loaded[split].features == documented[f"qrels-{src}.{tgt}"]
            assert sorted(tuple(row.values()) for row in loaded[split]) == sorted(
                (q, d, label, pad) for s, t, name, q, d, label, pad in qrels if (s, t, name) == (src, tgt, split))
        assert sum(loaded.num_rows.values()) == sum(1 for s, t, *_ in qrels if (s, t) == (src, tgt))
        assert configs[f"qrels-{src}.{tgt}"] == {
            split: f"data/qrels-{src}.{tgt}/{split}-00000-of-00001.parquet" for split in loaded}
    for lang in LANGS:
        documents = datasets.load_dataset(str(folder), f"documents-{lang}", split="documents",
                                          cache_dir=str(tmp_path / "cache"))
        assert documents.features == documented[f"documents-{lang}"]
        assert sorted((row["doc_id"], row["title"], row["text"]) for row in documents) == sorted(articles[lang])
        assert configs[f"documents-{lang}"] == {"documents": f"data/documents-{lang}/documents-00000-of-00001.parquet"}
        queries = datasets.load_dataset(str(folder), f"queries-{lang}", split="queries",
                                        cache_dir=str(tmp_path / "cache"))
        titles = {page_id: title for page_id, title, _ in articles[lang]}
        assert {row["query_id"]: row["query"] for row in queries} == {
            q: titles[q] for s, _, _, q, *_ in qrels if s == lang}


def test_every_article_names_its_page_revision_title_url_and_dump(published: tuple[Path, Path]) -> None:
    home, folder = published
    with Warehouse(home, read_only=True) as wh:
        corpus = {(lang, page_id): (title, revision_id, qid, wiki, dump) for lang, page_id, title, revision_id, qid,
                  wiki, dump in wh.query("SELECT d.lang, d.page_id, d.title, d.revision_id, d.qid, f.wiki, f.dump_date"
                                         " FROM documents d JOIN dumps f ON f.name = d.source")}
    checked = 0
    for lang in LANGS:
        for kind, id_column, title_column in (("documents", "doc_id", "title"), ("queries", "query_id", "query")):
            for row in _parquet(folder, f"{kind}-{lang}", kind):
                title, revision_id, qid, wiki, dump = corpus[(lang, row[id_column])]
                assert (row[title_column], row["revision_id"], row["qid"], row["wiki"], row["dump"]) == \
                       (title, revision_id, qid, wiki, dump)
                assert revision_id is not None and dump == "20261101" and wiki == f"{lang}wiki"
                assert unquote(row["url"]) == f"https://{lang}.wikipedia.org/wiki/" + title.replace(" ", "_")
                checked += 1
    assert checked > 150
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in card and "@inproceedings{sun2020clirmatrix" in card
    for lang in LANGS:
        assert f"| {lang} | {lang}wiki | 20261101 |" in card
        assert f"| {lang} | tantivy | 1.2 | 0.3 | yes | yes |" in card  # the index stage's BM25 k1 and b


def test_the_card_reports_the_label_distribution_of_every_direction(published: tuple[Path, Path]) -> None:
    home, folder = published
    card = (folder / "README.md").read_text(encoding="utf-8")
    with Warehouse(home, read_only=True) as wh:
        directions = wh.query("SELECT DISTINCT src_lang, tgt_lang FROM clir_qrels WHERE collection = ?", [NAME])
        for src, tgt in directions:
            labels = [wh.scalar("SELECT count(*) FROM clir_qrels WHERE collection = ? AND src_lang = ?"
                                " AND tgt_lang = ? AND label = ?", [NAME, src, tgt, label]) for label in range(7)]
            padding, queries = wh.query("SELECT count(*) FILTER (WHERE is_pad), count(DISTINCT query_id)"
                                        " FROM clir_qrels WHERE collection = ? AND src_lang = ? AND tgt_lang = ?",
                                        [NAME, src, tgt])[0]
            assert labels[6] > 0 and sum(labels[1:6]) > 0 and padding > 0
            row = f"| {src} | {tgt} | {queries} | {' | '.join(map(str, labels))} | {padding} |"
            assert row in card, row
            published_labels = [row["label"] for path in sorted((folder / "data" / f"qrels-{src}.{tgt}").glob("*"))
                                for row in pq.read_table(path).to_pylist()]
            assert [published_labels.count(label) for label in range(7)] == labels
    assert len(directions) == 6


def _breaks_by_hand(scores: list[float]) -> list[float]:
    """jenkspy's public breaks of min-max normalised scores; each distinct score when there are fewer than 5."""
    values = np.asarray(scores)
    normalised = (values - values.min()) / (values.max() - values.min()) if values.max() > values.min() \
        else np.ones_like(values)
    distinct = sorted(set(normalised.tolist()))
    return [float(b) for b in jenkspy.jenks_breaks(normalised, n_classes=5)] if len(distinct) >= 5 \
        else distinct[:1] + distinct


def test_the_jenks_breaks_are_those_the_stored_labels_came_from(published: tuple[Path, Path]) -> None:
    home, folder = published
    card = (folder / "README.md").read_text(encoding="utf-8")
    for lang in LANGS:
        queries = {row["query_id"]: row["jenks_breaks"] for row in _parquet(folder, f"queries-{lang}", "queries")}
        with Warehouse(home, read_only=True) as wh:
            hits = wh.query("SELECT query_page_id, score, label FROM retrieval_hits WHERE lang = ?"
                            " AND rank IS NOT NULL AND doc_page_id != query_page_id ORDER BY query_page_id, rank",
                            [lang])
        by_query: dict[int, list[tuple[float, int]]] = {}
        for query, score, label in hits:
            by_query.setdefault(query, []).append((score, label))
        jenks = []
        for query, published_breaks in queries.items():
            scores = [score for score, _ in by_query[query]]
            assert published_breaks == pytest.approx(_breaks_by_hand(scores), abs=1e-12), (lang, query)
            if len(published_breaks) == 6:
                jenks.append(published_breaks)
                # the breaks give the stored labels back: above k inner breaks is label k + 1
                low, high = min(scores), max(scores)
                for score, label in by_query[query]:
                    normalised = (score - low) / (high - low)
                    assert label == 1 + sum(b < normalised for b in published_breaks[1:5]), (lang, query, score)
        assert len(jenks) > 10
        for position in range(1, 5):
            values = [b[position] for b in jenks]
            row = (f"| {lang} | {position} | {position} and {position + 1} | {statistics.median(values):.3f} |"
                   f" {min(values):.3f} | {max(values):.3f} |")
            assert row in card, row
        assert f"| {lang} | {len(queries)} | {len(jenks)} | {len(queries) - len(jenks)} |" in card


def test_the_croissant_file_validates_and_its_records_equal_the_parquet_rows(published: tuple[Path, Path]) -> None:
    _, folder = published
    document = assert_records_equal_rows(folder)
    assert document["license"] == "https://creativecommons.org/licenses/by-sa/4.0/"
    assert document["rai:dataAnnotationProtocol"] and document["rai:personalSensitiveInformation"]
    assert len(document["recordSet"]) == 3 + 3 + 6 * 5 and "qrels-en.de/full" in {
        record_set["@id"] for record_set in document["recordSet"]}


def test_a_rerun_over_the_same_warehouse_writes_the_same_bytes(published: tuple[Path, Path], tmp_path: Path) -> None:
    home, folder = published
    with Warehouse(home) as wh:
        again = publish(wh, NAME, tmp_path).folder
    assert len(assert_same_bytes(folder, again)) == 2 + 36  # card, Croissant, every configuration's splits


def test_the_published_folder_imports_into_a_fresh_home_and_evaluates_alike(published: tuple[Path, Path],
                                                                           tmp_path: Path) -> None:
    home, folder = published
    fresh = tmp_path / "fresh"
    with Warehouse(fresh) as wh:
        import_dataset(wh, "hf", folder, None, None)
        republished = publish(wh, NAME, tmp_path / "again").folder
    metrics = [{(m["src_lang"], m["tgt_lang"], m["metric"]): m["value"]
                for m in clir_eval_flow(ClirEvalParams(name=NAME, ranker="bm25", split="all", home=str(where)))}
               for where in (home, fresh)]
    assert metrics[0] == metrics[1]
    assert len([key for key in metrics[0] if key[2] == "ndcg@10"]) == 6 + 1  # every direction, and their mean
    assert 0.3 < metrics[0][("all", "all", "ndcg@10")] < 1.0
    # documents and qrels come back byte for byte, attribution included; the breaks were not mined there
    for path in sorted(folder.glob("data/*/*.parquet")):
        copy = republished / path.relative_to(folder)
        if path.parent.name.startswith("queries-"):
            assert [row | {"jenks_breaks": None} for row in pq.read_table(path).to_pylist()] == \
                   pq.read_table(copy).to_pylist()
        else:
            assert copy.read_bytes() == path.read_bytes(), path
    # the content hashes Croissant gives the documents and qrels files are the original's
    hashes = [{entry["contentUrl"]: entry["sha256"] for entry in json.loads((where / "croissant.json").read_text(
        encoding="utf-8"))["distribution"] if not entry["contentUrl"].startswith("data/queries-")}
              for where in (folder, republished)]
    assert hashes[0] == hashes[1] and len(hashes[0]) == 3 + 6 * 5
    card = (republished / "README.md").read_text(encoding="utf-8")
    assert f"imported into babelbench from\n`{folder}`" in card and "whose licence it keeps: **cc-by-sa-4.0**" in card


def test_a_file_changed_since_publishing_is_refused_naming_it(published: tuple[Path, Path], tmp_path: Path) -> None:
    _, folder = published
    copy = tmp_path / NAME
    table = changed_copy(folder, copy, "data/qrels-en.de/train-00000-of-00001.parquet", "label",
                         lambda labels: [6] * len(labels))
    with Warehouse(tmp_path / "fresh") as wh:
        with pytest.raises(ConfigError, match="train-00000-of-00001.parquet: its sha256 is not the one croissant.json"):
            import_dataset(wh, "hf", copy, None, None)
        (copy / "croissant.json").unlink()  # without its checksums, the judgements are checked against the folder
        judged = table.column("doc_id")[0].as_py()
        docs = copy / "data" / "documents-de" / "documents-00000-of-00001.parquet"
        kept = pq.read_table(docs).filter(pc.not_equal(pq.read_table(docs)["doc_id"], judged))
        pq.write_table(kept, docs)
        with pytest.raises(ConfigError, match=rf"qrels-(en|fr).de/\w+-00000-of-00001.parquet row \d+: document {judged}"
                                              " is not in documents-de"):
            import_dataset(wh, "hf", copy, None, None)
        assert wh.scalar("SELECT count(*) FROM clir_qrels") == 0 and wh.scalar("SELECT count(*) FROM documents") == 0


def test_the_multi_collection_publishes_its_directions_and_says_whose_breaks(published: tuple[Path, Path],
                                                                             tmp_path: Path) -> None:
    home, _ = published
    with Warehouse(home) as wh:
        folder = publish(wh, f"{NAME}-multi", tmp_path).folder
        counts = wh.query("SELECT src_lang, tgt_lang, count(*) FROM clir_qrels WHERE collection = ? GROUP BY ALL",
                          [f"{NAME}-multi"])
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert "This MULTI (multilingual) collection" in card and "`queries-<document language>`" in card
    assert len(counts) == 6
    for src, tgt, rows in counts:
        assert sum(len(pq.read_table(path)) for path in (folder / "data" / f"qrels-{src}.{tgt}").glob("*")) == rows


def test_a_collection_whose_language_was_mined_again_is_refused(published: tuple[Path, Path], tmp_path: Path) -> None:
    home, _ = published
    copy = tmp_path / "home"
    shutil.copytree(home, copy)
    clir_build_flow(ClirBuildParams(name="other", langs=["en", "de"], clir=ClirConfig(top_k=5, min_documents=10),
                                    home=str(copy)))
    with Warehouse(copy) as wh, pytest.raises(ConfigError, match=f"collection '{NAME}': its (de|en) labels come from a"
                                                                 " retrieval run .* no longer holds"):
        publish(wh, NAME, tmp_path / "out")
    assert not (tmp_path / "out" / NAME).exists()
