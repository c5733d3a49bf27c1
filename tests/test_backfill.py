"""Backfill on the bundled sample: a new language reaches the corpus and every collection, only its cells compute,
and a language without a dump is named as skipped."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flows.backfill import BackfillParams, backfill_flow
from flows.clir import ClirBuildParams, clir_build_flow
from flows.corpus import CorpusParams, corpus_flow
from tasks.pairing.config import ClirConfig
from tasks.sample.mirror import build_sample_mirror
from tasks.warehouse.db import Warehouse

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
