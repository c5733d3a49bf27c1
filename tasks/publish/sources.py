"""Where the text an instance shows comes from: each document's article, revision and dump, for attribution.

Wikipedia's text is CC BY-SA: whoever publishes it names the article it came from.  A document names its article
by its language and page id (a built benchmark), by a Wikipedia URL or by a title (an imported one); each is
looked up in the warehouse's current corpus, whose rows know their revision and the dump file they were read
from.  A benchmark imported from a published folder carries the sources that folder named
(``instances.sources``), which win: the corpus here may be another month's.  A document found nowhere keeps what
it says of itself (its title, its URL), the rest null: the card counts those.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote, unquote

from tasks.warehouse.db import Warehouse

#: a Wikipedia article's URL: its language's subdomain and its title
WIKIPEDIA_URL = re.compile(r"^https?://([a-z][a-z0-9-]*)\.(?:m\.)?wikipedia\.org/wiki/([^?#]+)")
#: what MediaWiki leaves unescaped in an article's URL
URL_SAFE = ":/(),!*'"
#: each dump file's wiki and date by its name and language, to join a document's ``source`` (its file's name) to
DUMPS = "(SELECT name, lang, any_value(wiki) AS wiki, max(dump_date) AS dump_date FROM dumps GROUP BY ALL)"
#: the current articles with the dump each was read from (a source file's name is its dump's)
_ARTICLES = f"""
SELECT d.lang, d.page_id, d.title, d.revision_id, f.wiki, f.dump_date
FROM documents AS d
LEFT JOIN {DUMPS} AS f ON f.name = d.source AND f.lang = d.lang
WHERE d.namespace = 0 AND NOT d.is_redirect AND d.lang || '|' || {{key}} IN (SELECT unnest(?::VARCHAR[]))
"""


def article_url(lang: str, title: str) -> str:
    """The Wikipedia URL of an article, as MediaWiki spells it (underscores for spaces)."""
    return f"https://{lang}.wikipedia.org/wiki/" + quote(title.replace(" ", "_"), safe=URL_SAFE)


def _wanted(document: Mapping[str, Any]) -> tuple[str, str, str | int] | None:
    """How a document names its article: ("page_id" | "title", language, page id or title), or None."""
    lang, page_id, title = document.get("lang"), document.get("page_id"), document.get("title")
    if lang and page_id is not None:
        return "page_id", lang, int(page_id)
    match = WIKIPEDIA_URL.match(document.get("url") or "")
    if match:
        return "title", match.group(1), unquote(match.group(2)).replace("_", " ")
    if lang and title:
        return "title", lang, title
    return None


def _lookup(wh: Warehouse, key: str, wanted: set[tuple[str, str | int]]) -> dict[tuple[str, str | int], dict]:
    """The current articles among ``wanted`` ((language, page id or title) pairs), by that pair."""
    if not wanted:
        return {}
    column = "CAST(d.page_id AS VARCHAR)" if key == "page_id" else "d.title"
    found = {}
    for lang, page_id, title, revision_id, wiki, dump in wh.query(
            _ARTICLES.format(key=column), [sorted(f"{lang}|{value}" for lang, value in wanted)]):
        found[(lang, page_id if key == "page_id" else title)] = {
            "wiki": wiki or f"{lang}wiki", "lang": lang, "page_id": page_id, "revision_id": revision_id,
            "title": title, "url": article_url(lang, title), "dump": dump}
    return found


def _documents(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The documents an instance shows, then the articles its item was written from (closed book: only those)."""
    return [*json.loads(row["documents"]), *json.loads(row.get("item_documents") or "[]")]


def attribute(wh: Warehouse, instances: Iterable[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per instance id, one source per article it shows or its question was written from, each once (see the
    module notes); ``instances`` hold ``instance_id``, ``documents`` and ``item_documents`` (JSON text) and
    ``sources`` (JSON text or None)."""
    rows = list(instances)
    wanted: dict[str, set[tuple[str, str | int]]] = {"page_id": set(), "title": set()}
    for row in rows:
        if row["sources"] is None:
            for document in _documents(row):
                if (named := _wanted(document)) is not None:
                    wanted[named[0]].add(named[1:])
    articles = {kind: _lookup(wh, kind, keys) for kind, keys in wanted.items()}
    sources = {}
    for row in rows:
        if row["sources"] is not None:
            sources[row["instance_id"]] = json.loads(row["sources"])
            continue
        found = [_source(document, articles) for document in _documents(row)]
        sources[row["instance_id"]] = list({json.dumps(s, sort_keys=True): s for s in found}.values())
    return sources


def _source(document: Mapping[str, Any], articles: Mapping[str, Mapping[tuple[str, str | int], dict]]) -> dict:
    """The article of one document, or what the document says of itself when the corpus does not have it."""
    named = _wanted(document)
    if named is not None and (found := articles[named[0]].get(named[1:])) is not None:
        return found
    return {"wiki": None, "lang": document.get("lang"), "page_id": document.get("page_id"), "revision_id": None,
            "title": document.get("title") or None, "url": document.get("url"), "dump": None}
