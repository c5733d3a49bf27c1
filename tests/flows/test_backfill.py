"""Backfill: a new language reaches every corpus source, every collection, every generated benchmark (as a
translation target) and every evaluation; only its cells compute, and what cannot have it is named as skipped."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from flows.backfill import BackfillParams, backfill_flow
from flows.clir import ClirBuildParams, clir_build_flow
from flows.corpus import CorpusParams, corpus_flow
from flows.evaluate import EvaluateParams, evaluate_flow
from flows.qa import InstancesParams, QaBuildParams, TranslateParams, instances_flow, qa_build_flow, translate_flow
from tasks.instances.build import InstanceConfig
from tasks.pairing.config import ClirConfig
from tasks.sample.mirror import build_sample_mirror
from tasks.translate import TranslateConfig
from tasks.warehouse.db import Warehouse
from tests.support import chat_replies
from tests.support.fake_llm_server import FakeLLMServer

pytestmark = pytest.mark.usefixtures("prefect_api")


def _backfill_report() -> str:
    """The markdown of the latest ``backfill`` artifact, read back from the Prefect API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey
    from prefect.client.schemas.sorting import ArtifactSort

    async def read() -> str:
        async with get_client() as client:
            artifacts = await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["backfill"])),
                                                    sort=ArtifactSort.CREATED_DESC, limit=1)
            return str(artifacts[0].data)

    return asyncio.run(read())


def _open_warehouse_files(home: Path) -> list[str]:
    """The home's DuckDB files (database, write-ahead log) this process holds open."""
    fds = Path("/proc/self/fd")
    return [target for fd in os.listdir(fds)
            if (target := os.path.realpath(fds / fd)).startswith(str(home.resolve() / "warehouse.duckdb"))]


def test_a_backfilled_language_joins_every_corpus_source_and_the_collection_and_nothing_else_recomputes(
        tmp_path: Path) -> None:
    mirror = build_sample_mirror(tmp_path / "mirror")
    other = shutil.copytree(mirror.root, tmp_path / "other-mirror")  # a second corpus source, with French
    home = str(tmp_path / "home")
    corpus_flow(CorpusParams(langs=["en", "de"], source=mirror.root.as_uri(), home=home, progress=False))
    corpus_flow(CorpusParams(langs=["fr"], source=other.as_uri(), home=home, progress=False))
    clir_build_flow(ClirBuildParams(name="c", langs=["en", "de"], clir=ClirConfig(top_k=20, min_documents=10),
                                    home=home))
    with Warehouse(Path(home)) as wh:
        started = wh.scalar("SELECT max(started_at) FROM runs")
    rows = backfill_flow(BackfillParams(langs=["ja", "ko"], home=home))  # the sample has no Korean dump
    computed = {(r["stage"], r["cell"]) for r in rows if r["status"] == "computed"}
    # ja: ingested, indexed, mined, and its four directions; en/de and their direction are cache hits
    assert {cell for stage, cell in computed if stage in ("download", "documents", "sitelinks")} == {"ja"}
    # every source was asked for it (the copy's identical dump is a cache hit), en/de/fr cached in their own
    assert [r["status"] for r in rows if (r["stage"], r["cell"]) == ("download", "ja")] == ["computed", "cached"]
    assert {(r["stage"], r["cell"]) for r in rows if r["status"] == "cached"} >= {
        ("documents", "en"), ("documents", "de"), ("documents", "fr")}
    assert {cell for stage, cell in computed if stage == "qrels"} == {"c:ja>en", "c:ja>de", "c:en>ja", "c:de>ja"}
    assert ("qrels", "c:en>de") not in computed and ("documents", "en") not in computed
    assert not any("ko" in cell for _, cell in computed)  # no dump for ko: nothing of it was built
    assert {(r["stage"], r["status"]) for r in rows if r["cell"] == "ko"} >= {("download", "failed")}
    assert "skipped for lack of data: ko" in _backfill_report()  # the run's markdown artifact
    with Warehouse(Path(home)) as wh:
        assert sorted(wh.scalar("SELECT langs FROM clir_collections WHERE name = 'c'")) == ["de", "en", "ja"]
        corpora = {(p["source"], tuple(p["langs"])) for (raw,) in wh.query(
            "SELECT params FROM runs WHERE flow = 'corpus' AND started_at > ?", [started]) for p in [json.loads(raw)]}
    assert corpora == {(mirror.root.as_uri(), ("de", "en", "ja", "ko")), (other.as_uri(), ("fr", "ja", "ko"))}


def test_an_evaluation_limited_to_some_languages_gains_the_backfilled_ones(home: Path, server: FakeLLMServer) -> None:
    gold = json.dumps([{"type": "entity", "text": "Velna", "entity": None, "aliases": []}])
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "m", "backend": "openai", "model": "m", "base_url": server.base_url, "mode": "chat"}]}))
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('mk', 'mkqa', ['en', 'de', 'fr'], 'import:x', '{}', now())")
        for lang in ("en", "de", "fr"):
            cur.execute("INSERT INTO instances VALUES ('mk', ?, '1', 'mkqa', 'closed_book', ?, ?, 'Velna', 'en', NULL,"
                        " NULL, '[]', 0, 'fp', ?, NULL, NULL)", [f"1|closed_book|{lang}", lang, f"Which river ({lang})?", gold])
    server.answer("?", "Velna")
    evaluate_flow(EvaluateParams(benchmark="mk", models=["m"], judges=[], langs=["en"], home=str(home)))
    rows = backfill_flow(BackfillParams(langs=["de"], home=str(home)))  # no corpus here: evaluations only
    computed = {(r["stage"], r["cell"]) for r in rows if r["status"] == "computed"}
    assert computed == {("inference", "mk/closed_book/de/m"), ("scoring", "mk/m")}
    assert ("inference", "mk/closed_book/en/m") in {(r["stage"], r["cell"]) for r in rows if r["status"] == "cached"}
    report = _backfill_report()
    assert "evaluation of mk: 2 cells computed" in report
    assert "benchmark mk" not in report  # the imported benchmark already has German: nothing to skip

    rows = backfill_flow(BackfillParams(langs=["ja"], home=str(home)))
    assert rows == []  # no Japanese anywhere: nothing computed, and said so
    report = _backfill_report()
    assert ("benchmark mk: skipped ja: imported from x, its languages are the published file's" in report
            and "evaluation of mk: nothing to add (no instances in ja)" in report)
    assert _open_warehouse_files(home) == []  # the backfill released the warehouse when it ended


def test_a_generated_benchmark_gains_the_language_as_a_translation_target_and_its_evaluation_follows(
        sample_home: Path, server: FakeLLMServer) -> None:
    """ECLEKTIC built on en, de, fr and translated into German: a backfill of Japanese translates its items into
    Japanese, assembles its instances again and evaluates them; no item is written anew."""
    chat_replies.install(server)
    # the translator writes Japanese when asked for it (and copies otherwise: German fails its language check)
    server.answer("into Japanese", "**Japanese:** これは日本語に翻訳された文章で、質問と答えと文脈のためのものです。")
    (sample_home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "fake", "backend": "openai", "model": "served", "base_url": server.base_url, "mode": "chat"}]}))
    home = str(sample_home)
    qa_build_flow(QaBuildParams(recipe="eclektic", langs=["en", "de", "fr"], generator="fake", prescreen=False,
                                home=home))
    lenient = TranslateConfig(min_chrf=0, check_numbers=False, check_entities=False)
    translate_flow(TranslateParams(benchmark="eclektic", to=["de"], translator="fake", qc_policy="human",
                                   config=lenient, home=home))
    instances_flow(InstancesParams(benchmark="eclektic", instances=InstanceConfig(qc_policy="human"), home=home))
    evaluate_flow(EvaluateParams(benchmark="eclektic", models=["fake"], judges=["fake"], judge_own_system=True,
                                 home=home))
    calls = len(server.calls)

    rows = backfill_flow(BackfillParams(langs=["ja"], home=home))
    computed = {(r["stage"], r["cell"]) for r in rows if r["status"] == "computed"}
    assert not {stage for stage, _ in computed} & {"download", "documents", "sitelinks"}  # the sample has ja
    assert not any(r["stage"].startswith("qa-") for r in rows)  # the items stay as they were
    assert {cell for stage, cell in computed if stage == "translate"} == {"eclektic>ja"}
    assert ("translate", "eclektic>de") in {(r["stage"], r["cell"]) for r in rows if r["status"] == "cached"}
    assert ("instances", "eclektic") in computed  # one cell over the benchmark: assembled again
    evaluated = {cell for stage, cell in computed if stage in ("inference", "judging")}
    assert {cell for cell in evaluated if "/ja/" in cell} == {
        f"eclektic/{setting}/ja/fake{judge}" for setting in ("closed_book", "hint_general", "hint_source_lang",
                                                             "hint_source_title", "open_book_source_context")
        for judge in ("", "/fake")}
    # Only Japanese is paid for: every new model call translates into (or back from) Japanese, or is about a
    # Japanese instance.  (The other languages' cells
    # are recomputed from the call cache, because an inference cell also takes the benchmark-wide `instances`
    # reference as an input, which changed; see the report of this change.)
    new_calls = [json.dumps(call.body, ensure_ascii=False) for call in server.calls[calls:]]
    assert new_calls and all("Japanese" in body or "日本語" in body for body in new_calls)
    assert ("scoring", "eclektic/fake") in computed
    with Warehouse(Path(home)) as wh:
        assert list(wh.scalar("SELECT langs FROM qa_benchmarks WHERE benchmark = 'eclektic'")) == ["en", "de", "fr", "ja"]
        japanese = wh.query("SELECT DISTINCT setting FROM instances WHERE benchmark = 'eclektic' AND lang = 'ja'")
        sources = wh.scalar("SELECT count(*) FROM instances WHERE benchmark = 'eclektic' AND lang = source_lang")
    assert {s for (s,) in japanese} == {"closed_book", "hint_general", "hint_source_lang", "hint_source_title",
                                        "open_book_source_context"}
    assert sources > 0 and len(server.calls) > calls
    assert "benchmark eclektic (+ja):" in _backfill_report()


def test_a_rebuild_with_the_original_languages_keeps_the_targets_a_backfill_added(home: Path) -> None:
    from tasks.stages import add_benchmark_languages, register_benchmark

    def register(langs: list[str]) -> None:
        register_benchmark(wh, "ek", "eclektic", langs, "local", {})

    with Warehouse(home) as wh:
        register(["en", "de"])
        add_benchmark_languages(wh, "ek", ["ja"])  # what a backfill of ja does to the definition
        register(["en", "de"])  # the monthly rebuild, with the languages it was first given
        register(["en", "de", "fr"])  # a language added to it
        assert wh.scalar("SELECT langs FROM qa_benchmarks WHERE benchmark = 'ek'") == ["en", "de", "fr", "ja"]


def test_a_language_outside_the_first_eighteen_backfills_from_the_sample_with_its_wiki_counts(tmp_path: Path) -> None:
    """Swahili, which only the full language table knows, joins a corpus and a collection built without it: its
    dump is ingested with the counts the sample's YAML gives, and only its cells compute."""
    mirror = build_sample_mirror(tmp_path / "mirror")
    home = str(tmp_path / "home")
    corpus_flow(CorpusParams(langs=["en", "de"], source=mirror.root.as_uri(), home=home, progress=False))
    clir_build_flow(ClirBuildParams(name="c", langs=["en", "de"], clir=ClirConfig(min_documents=10), home=home))
    rows = backfill_flow(BackfillParams(langs=["sw"], home=home))
    computed = {(r["stage"], r["cell"]) for r in rows if r["status"] == "computed"}
    assert {cell for stage, cell in computed if stage in ("download", "documents", "sitelinks")} == {"sw"}
    assert {cell for stage, cell in computed if stage == "qrels"} == {"c:sw>en", "c:sw>de", "c:en>sw", "c:de>sw"}
    assert {("documents", "en"), ("documents", "de")} <= {(r["stage"], r["cell"]) for r in rows if r["status"] == "cached"}
    counts = mirror.counts["swwiki"]
    with Warehouse(Path(home)) as wh:
        pages, redirects, with_qid = wh.query(
            "SELECT count(*) FILTER (WHERE NOT is_redirect), count(*) FILTER (WHERE is_redirect),"
            " count(qid) FILTER (WHERE NOT is_redirect) FROM documents WHERE lang = 'sw'")[0]
        shared = wh.scalar("SELECT count(*) FROM (SELECT qid FROM sitelinks WHERE lang IN ('sw', 'en')"
                           " GROUP BY qid HAVING count(DISTINCT lang) = 2)")
        assert sorted(wh.scalar("SELECT langs FROM clir_collections WHERE name = 'c'")) == ["de", "en", "sw"]
    # articles and the disambiguation page (whether the table's sw rule flags it: test_sample_mirror), redirects
    assert (pages, redirects) == (counts.articles + counts.disambiguation, counts.redirects)
    assert with_qid == pages and shared == counts.articles + counts.disambiguation  # every sw topic has English
    assert "collection c: " in _backfill_report()
