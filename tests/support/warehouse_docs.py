"""Adding articles to an ingested test warehouse the way ingestion does, for cases the sample lacks."""

from __future__ import annotations

from tasks.dumps.appearance import record_appearance
from tasks.warehouse.db import Warehouse
from tasks.warehouse.lake import LAKE_TABLES, ShardWriter, cell_dir


def add_document(wh: Warehouse, lang: str, page_id: int, title: str, text: str, qid: str | None = None) -> None:
    """Add one article through the lake, in its own cell so the sample's documents stay as they are."""
    cell = f"{lang}-extra-{page_id}"
    writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "documents_raw", cell, "test"), LAKE_TABLES["documents_raw"], "test")
    writer.add({"lang": lang, "page_id": page_id, "title": title, "text": text, "qid": qid, "namespace": 0,
                "is_redirect": False, "redirect_target": None, "is_disambiguation": False, "timestamp": None,
                "source": "test"})
    writer.flush()
    wh.replace_cell("documents_raw", cell, "test", writer.shards)
    wh.refresh_views()


def ingest_dump(wh: Warehouse, lang: str, day: str, pages: list[tuple]) -> str:
    """Stand in for the corpus flow on one dump: ``lang``'s documents cell now holds ``pages`` (page id, title,
    redirect target or None, and optionally QID and text), then the appearance stage records the dump ``day``;
    returns that stage's message."""
    fp = f"fp-{lang}-{day}"
    writer = ShardWriter(wh.lake_root, cell_dir(wh.lake_root, "documents_raw", lang, fp), LAKE_TABLES["documents_raw"], fp)
    for page_id, title, target, *rest in pages:
        qid, text = (*rest, None, None)[:2]
        writer.add({"lang": lang, "page_id": page_id, "title": title, "text": text or f"text of {title}", "qid": qid,
                    "namespace": 0, "is_redirect": target is not None, "redirect_target": target,
                    "is_disambiguation": False, "timestamp": None, "source": f"{lang}wiki-{day}.json.gz"})
    writer.flush()
    wh.replace_cell("documents_raw", lang, fp, writer.shards)
    return record_appearance(wh, lang, day).message
