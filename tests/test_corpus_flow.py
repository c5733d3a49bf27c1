"""The corpus flow on the bundled sample mirror: counts, QID links, cache hits, backfill, force, faults."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import mlflow
import pytest

from flows.corpus import CorpusParams, corpus_flow
from tasks.dumps import ingest
from tasks.sample.mirror import SampleMirror, build_sample_mirror, load_content
from tasks.tracking import tracking_uri
from tasks.warehouse.db import Warehouse

pytestmark = pytest.mark.usefixtures("prefect_api")
LANGS = ["en", "de", "fr", "ja"]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> SampleMirror:
    return build_sample_mirror(tmp_path_factory.mktemp("mirror"))


def _expected_qids() -> dict[str, dict[str, str]]:
    """lang → title → QID, from the sample's YAML (the source of truth, not a parser)."""
    truth: dict[str, dict[str, str]] = {}
    for topic in load_content().topics:
        for lang, article in topic.articles.items():
            truth.setdefault(lang, {})[article.title] = topic.qid
    return truth


def _run(mirror: SampleMirror, home: Path, langs: list[str], **extra: object) -> list[dict]:
    return corpus_flow(CorpusParams(langs=langs, source=mirror.root.as_uri(), home=str(home), progress=False, **extra))


def _statuses(home: Path, run_index: int) -> dict[tuple[str, str], str]:
    """(stage, cell) → status of the artifacts rows written by the n-th flow run of this home."""
    with Warehouse(home) as wh:
        run_id = wh.query("SELECT run_id FROM runs ORDER BY started_at")[run_index][0]
        return {(s, c): st for s, c, st in wh.query("SELECT stage, cell, status FROM artifacts WHERE run_id = ?", [run_id])}


@pytest.fixture(scope="module")
def cirrus_home(mirror: SampleMirror, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("cirrus-home")
    _run(mirror, home, LANGS)
    return home


def test_documents_match_the_sample_counts(mirror: SampleMirror, cirrus_home: Path) -> None:
    with Warehouse(cirrus_home) as wh:
        got = {lang: (a, r, d) for lang, a, r, d in wh.query(
            "SELECT lang, count(*) FILTER (WHERE NOT is_redirect AND NOT is_disambiguation),"
            " count(*) FILTER (WHERE is_redirect), count(*) FILTER (WHERE is_disambiguation) FROM documents GROUP BY lang")}
    expected = {lang: (mirror.counts[f"{lang}wiki"].articles, mirror.counts[f"{lang}wiki"].redirects,
                       mirror.counts[f"{lang}wiki"].disambiguation) for lang in LANGS}
    assert got == expected


def test_sitelinks_carry_the_sample_qids_across_languages(cirrus_home: Path) -> None:
    truth = _expected_qids()
    with Warehouse(cirrus_home) as wh:
        links = {(lang, title): qid for qid, lang, title in wh.query("SELECT qid, lang, title FROM sitelinks")}
        shared = wh.scalar("SELECT count(*) FROM (SELECT qid FROM sitelinks WHERE lang IN ('en', 'ja')"
                           " GROUP BY qid HAVING count(DISTINCT lang) = 2)")
    for lang in LANGS:
        for title, qid in truth[lang].items():
            assert links[(lang, title)] == qid
    topics_in_both = sum(1 for t in load_content().topics if {"en", "ja"} <= set(t.articles))
    assert shared == topics_in_both


def test_downloads_are_verified_against_published_checksums(cirrus_home: Path) -> None:
    with Warehouse(cirrus_home) as wh:
        rows = wh.query("SELECT lang, kind, verified FROM dumps ORDER BY lang")
    assert rows == [(lang, "cirrus", True) for lang in sorted(LANGS)]


def test_the_run_is_tracked_in_mlflow(cirrus_home: Path) -> None:
    with Warehouse(cirrus_home) as wh:
        mlflow_run_id, params = wh.query("SELECT mlflow_run_id, params FROM runs ORDER BY started_at LIMIT 1")[0]
        en_docs = wh.scalar("SELECT count(*) FROM documents WHERE lang = 'en'")
        fingerprints = {c: f for c, f in wh.query("SELECT cell, fingerprint FROM artifacts WHERE stage = 'documents'")}
    mlflow.set_tracking_uri(tracking_uri(cirrus_home))
    run = mlflow.get_run(mlflow_run_id)
    assert json.loads(run.data.params["langs"]) == LANGS == json.loads(params)["langs"]
    assert run.data.tags["code_version"]
    assert run.data.metrics["rows.documents.en"] == en_docs
    assert "seconds.documents" in run.data.metrics
    stages = mlflow.artifacts.load_dict(f"{run.info.artifact_uri}/stages.json")["stages"]
    assert {s["cell"]: s["fingerprint"] for s in stages if s["stage"] == "documents"} == fingerprints


def test_rerun_is_all_cache_hits_and_backfill_computes_only_the_new_language(mirror: SampleMirror, cirrus_home: Path) -> None:
    _run(mirror, cirrus_home, LANGS)
    assert set(_statuses(cirrus_home, 1).values()) == {"cached"}
    assert len(_statuses(cirrus_home, 1)) == 3 * len(LANGS)
    _run(mirror, cirrus_home, LANGS + ["zh"])
    backfill = _statuses(cirrus_home, 2)
    assert {k for k, v in backfill.items() if v == "computed"} == {("download", "zh"), ("documents", "zh"), ("sitelinks", "zh")}
    assert {v for k, v in backfill.items() if k[1] != "zh"} == {"cached"}


def test_force_recomputes_the_stage_and_its_descendants_only(mirror: SampleMirror, tmp_path: Path) -> None:
    _run(mirror, tmp_path, ["en"])
    _run(mirror, tmp_path, ["en"], force=["documents"])
    assert _statuses(tmp_path, 1) == {("download", "en"): "cached", ("documents", "en"): "computed",
                                      ("sitelinks", "en"): "computed"}


def test_xml_multistream_on_dask_with_page_props_gives_the_same_qids(
        mirror: SampleMirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BABELBENCH_COMPUTE", "dask")
    monkeypatch.setattr(ingest, "CHUNK_BYTES", 2_000)  # several byte ranges per file → several Dask units
    rows = _run(mirror, tmp_path, ["en", "ja"], kind="xml")
    assert {r["status"] for r in rows} == {"computed"}
    truth = _expected_qids()
    with Warehouse(tmp_path) as wh:
        got = {(lang, title): qid for lang, title, qid in wh.query(
            "SELECT lang, title, qid FROM documents WHERE NOT is_redirect")}
        methods = {json.loads(c)["method"] for (c,) in wh.query("SELECT config FROM artifacts WHERE stage = 'sitelinks'")}
        units = wh.scalar("SELECT count(*) FROM lake_shards WHERE table_name = 'documents_raw' AND cell = 'en'")
    assert got == {(lang, title): qid for lang in ["en", "ja"] for title, qid in truth[lang].items()}
    assert methods == {"page_props"}
    assert units > 1


def test_sitelinks_from_the_wikidata_dump_resolve_page_ids(mirror: SampleMirror, tmp_path: Path) -> None:
    _run(mirror, tmp_path, ["de", "zh"], sitelinks="wikidata")
    with Warehouse(tmp_path) as wh:
        from_wikidata = set(wh.query("SELECT qid, lang, page_id FROM sitelinks"))
        from_cirrus = set(wh.query("SELECT qid, lang, page_id FROM documents WHERE qid IS NOT NULL AND NOT is_redirect"))
        download_cells = {c for (c,) in wh.query("SELECT cell FROM artifacts WHERE stage = 'download'")}
    assert from_wikidata == from_cirrus and len(from_wikidata) > 50
    assert download_cells == {"de", "zh", "wikidata"}


def test_a_checksum_mismatch_fails_that_language_only_and_registers_nothing(
        mirror: SampleMirror, tmp_path: Path) -> None:
    broken = tmp_path / "broken-mirror"
    shutil.copytree(mirror.root, broken)
    cirrus = SampleMirror(broken, mirror.date, mirror.langs, mirror.wikis, mirror.counts, mirror.in_progress).cirrus_path("frwiki")
    cirrus.write_bytes(cirrus.read_bytes()[:-10] + b"corrupted!")
    home = tmp_path / "home"
    rows = corpus_flow(CorpusParams(langs=["en", "fr"], source=broken.as_uri(), home=str(home), progress=False))
    by_cell = {(r["stage"], r["cell"]): r for r in rows}
    assert by_cell[("download", "fr")]["status"] == "failed"
    assert "checksum mismatch" in by_cell[("download", "fr")]["message"]
    assert {by_cell[(s, "en")]["status"] for s in ("download", "documents", "sitelinks")} == {"computed"}
    assert by_cell[("documents", "fr")]["status"] == "failed"
    with Warehouse(home) as wh:
        assert wh.query("SELECT lang FROM dumps") == [("en",)]
        assert wh.scalar("SELECT count(*) FROM documents WHERE lang = 'fr'") == 0
        status, message = wh.query("SELECT status, message FROM runs")[0]
    assert status == "failed" and "download[fr]" in message
    assert not list((home / "dumps" / "frwiki").rglob("*.json.gz"))
