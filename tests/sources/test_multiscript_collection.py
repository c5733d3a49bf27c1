"""A CLIR collection over many scripts builds, and title queries find their own article.

The articles are ``tests/data/multiscript.yaml``: eight short articles in each
of thirteen languages — Latin with diacritics (fi, vi, sw), Arabic script (fa),
Armenian (hy), Georgian (ka), Tamil (ta), Ethiopic (am), and the unspaced
scripts Thai, Lao, Khmer, Burmese and Tibetan — about shared topics, each also
mentioning a few of the others' topics, so that ranking a title's own article
first is a real ranking problem.

They enter the warehouse as a ``documents`` stage cell per language (as the
CLIRMatrix import writes its documents: no dump is involved), and the real
``clir-build`` flow indexes every language with the embedded backend and mines
every title query (``retrieval`` stage); the test reads the mined hits.

A title query always matches its own article's title field, and a title that
is one unsegmented token still equals itself, so self-retrieval alone cannot
show that unspaced scripts are segmented. The second test therefore queries
titles against the *bodies* alone — what the other articles' CLIR labels rest
on — once with the language's real analysis and once with segmentation
replaced by a plain whitespace split, through the same backend.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from flows.clir import ClirBuildParams, clir_build_flow
from tasks.dumps.records import DOCUMENT_SCHEMA
from tasks.index import analysis
from tasks.index.base import IndexConfig
from tasks.index.registry import get_backend
from tasks.pairing.config import ClirConfig
from tasks.stage import ReadFields, StageOutput, digest, run_stage
from tasks.stages.corpus import DOCUMENTS
from tasks.text.segment import tokenize
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import LAKE_TABLES, ShardWriter, cell_dir

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "multiscript.yaml"
SOURCE = "tests/data/multiscript.yaml"
# Written without spaces between words (Burmese puts spaces between phrases only).
UNSPACED = ("th", "lo", "km", "my", "bo")
# Share of a language's title queries whose own article must be the top hit: with eight
# queries per language, at most one may miss. Titles are distinctive, yet some are one
# short, common syllable once segmented (Burmese ဆန် "rice", Tibetan ཟླ་བ "moon" = ཟླ + བ,
# Lao ແມ່ນ້ຳຂອງ = ແມ່ + ນ້ຳ + ຂອງ, where ຂອງ is also "of"), so one miss is tolerated.
MIN_TOP1 = 0.8
# Without segmentation an unspaced body is a few phrase-long tokens that a title matches
# only where it happens to stand alone between spaces (Burmese, spaced between phrases,
# keeps the most: 3 of 8); at most half may still be found.
MAX_UNSEGMENTED_TOP1 = 0.5


@dataclass(frozen=True)
class Article:
    page_id: int
    qid: str
    title: str
    text: str


@cache
def articles() -> dict[str, list[Article]]:
    """Lang → its articles; a topic's page id is the same in every language (1001, 1002, … in topic order)."""
    data = yaml.safe_load(FIXTURE.read_text(encoding="utf-8"))
    page_ids = {topic: 1001 + position for position, topic in enumerate(data["topics"])}
    return {lang: [Article(page_ids[topic], data["topics"][topic], a["title"], a["text"]) for topic, a in by_topic.items()]
            for lang, by_topic in data["articles"].items()}


LANGS = list(articles())


def _write_documents(wh: Warehouse, lang: str, fingerprint: str) -> StageOutput:
    rows = articles()[lang]
    columns = {"lang": [lang] * len(rows), "page_id": [a.page_id for a in rows], "title": [a.title for a in rows],
               "text": [a.text for a in rows], "qid": [a.qid for a in rows], "namespace": [0] * len(rows),
               "is_redirect": [False] * len(rows), "redirect_target": [None] * len(rows),
               "is_disambiguation": [False] * len(rows), "timestamp": [None] * len(rows), "source": [SOURCE] * len(rows),
               "revision_id": [None] * len(rows)}
    writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "documents_raw", lang, fingerprint),
                         LAKE_TABLES["documents_raw"], fingerprint)
    writer.add_table(pa.table(columns, schema=DOCUMENT_SCHEMA))
    wh.replace_cell("documents_raw", lang, fingerprint, writer.shards)
    return StageOutput(rows=len(rows))


def load_documents(home: Path) -> None:
    """Each language's articles as its current ``documents`` cell, fingerprinted by the fixture's content."""
    with Warehouse(home) as wh:
        for lang, rows in articles().items():
            config = ReadFields(values={"source": SOURCE, "articles": digest([vars(a) for a in rows])})
            run_stage(wh, DOCUMENTS, lang, config, {}, lambda fp, lang=lang: _write_documents(wh, lang, fp))
        wh.refresh_views()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, prefect_api: None) -> Path:
    home = tmp_path_factory.mktemp("multiscript-home")
    load_documents(home)
    outcomes = clir_build_flow(ClirBuildParams(name="multiscript", langs=LANGS, clir=ClirConfig(top_k=5, min_documents=8),
                                               home=str(home)))
    failed = [o for o in outcomes if o.get("status") not in ("computed", "cached")]
    assert not failed, failed
    return home


def _rate(pairs: Iterable[tuple[int, int | None]]) -> float:
    pairs = list(pairs)
    return sum(query == top for query, top in pairs) / len(pairs)


def test_title_queries_find_their_own_article_first_in_every_language(built: Path) -> None:
    with Warehouse(built, read_only=True) as wh:
        top = dict(((lang, query), doc) for lang, query, doc in wh.query(
            "SELECT lang, query_page_id, doc_page_id FROM retrieval_hits WHERE rank = 1"))
        qrels = wh.scalar("SELECT count(DISTINCT src_lang || '>' || tgt_lang) FROM clir_qrels WHERE collection = ?",
                          ["multiscript"])
    rates = {lang: _rate((a.page_id, top.get((lang, a.page_id))) for a in rows) for lang, rows in articles().items()}
    print("top-1 of title queries (clir-build):", rates)
    assert {lang: rate for lang, rate in rates.items() if rate < MIN_TOP1} == {}
    assert qrels == len(LANGS) * (len(LANGS) - 1)  # a BI collection for every ordered pair


def _body_only_top1(lang: str, path: Path) -> float:
    """Title queries against an index of the bodies alone (empty titles), through the embedded backend."""
    rows = articles()[lang]
    backend, config = get_backend("tantivy"), IndexConfig()
    info = backend.build(lang, [(a.page_id, "", a.text) for a in rows], path, config)
    hits = backend.search(info, lang, [a.title for a in rows], 1, config)
    return _rate((a.page_id, found[0][0] if found else None) for a, found in zip(rows, hits, strict=True))


@pytest.mark.parametrize("lang", UNSPACED)
def test_unspaced_scripts_are_found_through_word_segmentation(lang: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    rows = articles()[lang]
    # Every word of a title is a word of its own body: documents and queries are cut alike.
    for article in rows:
        body = set(tokenize(article.text, lang))
        assert set(tokenize(article.title, lang)) <= body, (article.title, tokenize(article.title, lang))
    segmented = _body_only_top1(lang, tmp_path / "segmented")
    # The same backend and analysis with the segmenter replaced by a whitespace split.
    monkeypatch.setattr(analysis, "tokenize", lambda text, lang: text.split())
    unsegmented = _body_only_top1(lang, tmp_path / "unsegmented")
    print(f"{lang}: body-only top-1 {segmented:.3f} segmented, {unsegmented:.3f} whitespace-split")
    assert segmented >= MIN_TOP1
    assert unsegmented <= MAX_UNSEGMENTED_TOP1
