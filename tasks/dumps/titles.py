"""Entity names from the ingested corpus: each language's article titles and redirects, by QID.

The matching itself is a text rule (:mod:`tasks.text.entities`); this reads the names it matches from the
warehouse.
"""

from __future__ import annotations

from tasks.text.entities import EntityMatcher, title_names
from tasks.warehouse.db import Warehouse


def language_names(wh: Warehouse, lang: str) -> dict[str, str]:
    """Surface form → QID for one language's articles and the redirects to them (disambiguation pages excluded)."""
    rows = wh.query(
        "SELECT title, qid FROM documents WHERE lang = ? AND namespace = 0 AND NOT is_redirect"
        " AND NOT is_disambiguation AND qid IS NOT NULL"
        " UNION ALL"
        " SELECT r.title, a.qid FROM documents r JOIN documents a"
        "   ON a.lang = r.lang AND a.title = r.redirect_target AND NOT a.is_redirect"
        " WHERE r.lang = ? AND r.is_redirect AND a.qid IS NOT NULL AND NOT a.is_disambiguation",
        [lang, lang],
    )
    return title_names(rows)


def entity_matcher(wh: Warehouse, lang: str) -> EntityMatcher[str]:
    """A matcher over one language's titles (and redirects), keyed by QID."""
    return EntityMatcher(language_names(wh, lang), lang)
