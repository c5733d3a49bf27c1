"""Adding articles to an ingested test warehouse the way ingestion does, for cases the sample lacks."""

from __future__ import annotations

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
