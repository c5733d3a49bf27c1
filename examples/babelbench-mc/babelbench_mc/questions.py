"""The items: from each language's ingested articles, a description to place among four titles.

A seeded draw of articles long enough to describe; each item's description
is its article's first sentence with the title masked, its options the
article's title and three other titles of the same wiki, in a seeded order.
The draw and the order depend on the seed and the page ids only, so a rebuild
over the same articles gives the same items, and a re-ingest that changes an
article changes its item.
"""

from __future__ import annotations

import hashlib
import json
import random
import re

from pydantic import BaseModel, ConfigDict, Field

from tasks.stage import StageOutput
from tasks.warehouse.db import Warehouse
from tasks.warehouse.records import ItemRecord, insert_records

RECIPE = "mc"
LETTERS = "ABCD"


class McConfig(BaseModel):
    """How the items are drawn."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    per_lang: int = Field(8, ge=1, description="Items per language.")
    min_chars: int = Field(120, ge=0, description="Shortest article text described.")
    seed: int = Field(0, description="Seed of the draw and of the options' order.")


class McExtra(BaseModel):
    """What an item and its instances keep besides question and answer: the four titles, in the order shown."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    options: tuple[str, str, str, str]


def _rank(seed: int, *parts: object) -> str:
    return hashlib.sha256(":".join(map(str, (seed, *parts))).encode()).hexdigest()


def description(text: str, title: str) -> str:
    """The text's first sentence with every mention of the title masked."""
    first = re.split(r"(?<=[.!?。])\s", text.strip(), maxsplit=1)[0]
    return re.sub(re.escape(title), "…", first, flags=re.IGNORECASE)


def write_items(wh: Warehouse, benchmark: str, lang: str, config: McConfig, fp: str) -> StageOutput:
    """Replace the language's items of ``benchmark`` (and their options) by a fresh draw."""
    articles = wh.query("SELECT page_id, title, text FROM documents WHERE lang = ? AND NOT is_redirect"
                        " AND length(text) >= ? ORDER BY page_id", [lang, config.min_chars])
    if len(articles) < len(LETTERS):
        raise ValueError(f"{lang}: {len(articles)} articles of {config.min_chars}+ characters; four are needed")
    drawn = sorted(articles, key=lambda a: _rank(config.seed, lang, a[0]))[: config.per_lang]
    items, options = [], []
    for page_id, title, text in drawn:
        others = sorted((a for a in articles if a[0] != page_id), key=lambda a: _rank(config.seed, page_id, a[0]))[:3]
        shown = [(page_id, title), *((a[0], a[1]) for a in others)]
        random.Random(_rank(config.seed, "order", page_id)).shuffle(shown)
        letter = LETTERS[[p for p, _ in shown].index(page_id)]
        item_id = f"{lang}:{page_id}"
        extra = McExtra(options=tuple(t for _, t in shown))  # type: ignore[arg-type]
        items.append(ItemRecord(benchmark, item_id, RECIPE, lang, "rules", fp, question=description(text, title),
                                answer=letter, documents=json.dumps([{"lang": lang, "page_id": page_id, "title": title}],
                                                                    ensure_ascii=False),
                                extra=extra.model_dump_json()))
        options += [(benchmark, item_id, LETTERS[n], lang, p, t, p == page_id) for n, (p, t) in enumerate(shown)]
    with wh.transaction() as cur:
        cur.execute("DELETE FROM qa_items WHERE benchmark = ? AND recipe = ? AND lang = ?", [benchmark, RECIPE, lang])
        cur.execute("DELETE FROM mc_options WHERE benchmark = ? AND lang = ?", [benchmark, lang])
        insert_records(cur, "qa_items", items)
        cur.executemany("INSERT INTO mc_options (benchmark, item_id, letter, lang, page_id, title, correct)"
                        " VALUES (?, ?, ?, ?, ?, ?, ?)", options)
    return StageOutput(rows=len(items), message=f"{len(items)} items of {len(articles)} articles in {lang}")
