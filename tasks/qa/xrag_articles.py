"""The articles of XRAG pairs as the prompts show them: title, text and date."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from tasks.errors import BabelbenchError
from tasks.warehouse.db import Warehouse


@dataclass(frozen=True)
class ArticleText:
    title: str
    text: str
    timestamp: str | None

    @property
    def date(self) -> str:
        """The day of the timestamp (the paper gives each article's publication date), or that there is none."""
        return self.timestamp[:10] if self.timestamp else "date unknown"


def article_texts(wh: Warehouse, keys: Iterable[tuple[str, int]]) -> dict[tuple[str, int], ArticleText]:
    """(lang, page_id) → the article; one no longer in the warehouse is an error naming it."""
    wanted = set(keys)
    by_lang: dict[str, list[int]] = defaultdict(list)
    for lang, page_id in wanted:
        by_lang[lang].append(page_id)
    found = {}
    for lang, page_ids in by_lang.items():
        for page_id, title, text, timestamp in wh.query(
            "SELECT page_id, title, text, timestamp FROM documents WHERE lang = ? AND page_id IN (SELECT unnest(?))",
            [lang, page_ids],
        ):
            found[(lang, page_id)] = ArticleText(title, text or "", timestamp)
    missing = sorted(wanted - found.keys())
    if missing:
        raise BabelbenchError(f"articles no longer in the warehouse: {missing[:5]}; rerun the stage that chose them")
    return found
