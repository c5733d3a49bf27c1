"""Backfill: a new language reaches the corpus, every collection and every evaluation; only its cells compute,
and a language without a dump is named as skipped."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import yaml

from flows.backfill import BackfillParams, backfill_flow
from flows.clir import ClirBuildParams, clir_build_flow
from flows.corpus import CorpusParams, corpus_flow
from flows.evaluate import EvaluateParams, evaluate_flow
from tasks.pairing.config import ClirConfig
from tasks.sample.mirror import build_sample_mirror
from tasks.warehouse.db import Warehouse
from tests.fake_llm_server import FakeLLMServer

pytestmark = pytest.mark.usefixtures("prefect_api")


def _backfill_report() -> str:
    """The markdown of the latest ``backfill`` artifact, read back from the Prefect API."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    async def read() -> str:
        async with get_client() as client:
            artifacts = await client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=["backfill"])))
            return str(artifacts[-1].data)

    return asyncio.run(read())


def test_a_backfilled_language_joins_the_corpus_and_the_collection_and_nothing_else_recomputes(
        tmp_path: Path) -> None:
    mirror = build_sample_mirror(tmp_path / "mirror")
    home = str(tmp_path / "home")
    corpus_flow(CorpusParams(langs=["en", "de"], source=mirror.root.as_uri(), home=home, progress=False))
    clir_build_flow(ClirBuildParams(name="c", langs=["en", "de"], clir=ClirConfig(top_k=20, min_documents=10),
                                    home=home))
    rows = backfill_flow(BackfillParams(langs=["ja", "ko"], home=home))  # the sample has no Korean dump
    computed = {(r["stage"], r["cell"]) for r in rows if r["status"] == "computed"}
    # ja: ingested, indexed, mined, and its four directions; en/de and their direction are cache hits
    assert {cell for stage, cell in computed if stage in ("download", "documents", "sitelinks")} == {"ja"}
    assert {cell for stage, cell in computed if stage == "qrels"} == {"c:ja>en", "c:ja>de", "c:en>ja", "c:de>ja"}
    assert ("qrels", "c:en>de") not in computed and ("documents", "en") not in computed
    assert not any("ko" in cell for _, cell in computed)  # no dump for ko: nothing of it was built
    assert {(r["stage"], r["status"]) for r in rows if r["cell"] == "ko"} >= {("download", "failed")}
    assert "skipped for lack of data: ko" in _backfill_report()  # the run's markdown artifact
    with Warehouse(Path(home)) as wh:
        assert sorted(wh.scalar("SELECT langs FROM clir_collections WHERE name = 'c'")) == ["de", "en", "ja"]


def test_an_evaluation_limited_to_some_languages_gains_the_backfilled_ones(home: Path, server: FakeLLMServer) -> None:
    gold = json.dumps([{"type": "entity", "text": "Velna", "entity": None, "aliases": []}])
    home.mkdir(parents=True)
    (home / "models.yaml").write_text(yaml.safe_dump({"models": [
        {"name": "m", "backend": "openai", "model": "m", "base_url": server.base_url, "mode": "chat"}]}))
    with Warehouse(home) as wh, wh.transaction() as cur:
        cur.execute("INSERT INTO qa_benchmarks VALUES ('mk', 'mkqa', ['en', 'de', 'fr'], 'import:x', '{}', now())")
        for lang in ("en", "de", "fr"):
            cur.execute("INSERT INTO instances VALUES ('mk', ?, '1', 'mkqa', 'closed_book', ?, ?, 'Velna', 'en', NULL,"
                        " NULL, '[]', 0, 'fp', ?)", [f"1|closed_book|{lang}", lang, f"Which river ({lang})?", gold])
    server.answer("?", "Velna")
    evaluate_flow(EvaluateParams(benchmark="mk", models=["m"], judges=[], langs=["en"], home=str(home)))
    rows = backfill_flow(BackfillParams(langs=["de"], home=str(home)))  # no corpus here: evaluations only
    computed = {(r["stage"], r["cell"]) for r in rows if r["status"] == "computed"}
    assert computed == {("inference", "mk/closed_book/de/m"), ("scoring", "mk/m")}
    assert ("inference", "mk/closed_book/en/m") in {(r["stage"], r["cell"]) for r in rows if r["status"] == "cached"}
    assert "evaluation of mk: 2 cells computed" in _backfill_report()
