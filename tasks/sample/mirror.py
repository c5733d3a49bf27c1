"""Build the bundled sample: a small, self-made Wikimedia dump mirror.

The demo and the tests must run offline, yet exercise the same discovery,
download and parsing code as a real mirror.  So the sample is written from the
YAML under ``articles/`` into the real dumps.wikimedia.org layout and formats:
CirrusSearch bulk files, multistream XML dumps with their index, page_props SQL
dumps, dumpstatus.json and checksum files, and a Wikidata entity dump whose
sitelinks tie the articles of six wikis together.

Expected counts come from the YAML, not from reading the files back, so tests
elsewhere can compare what a parser ingests with what the sample holds.
Output is byte-for-byte reproducible (fixed gzip mtime, derived ids and
timestamps), which keeps the published checksums stable.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import hashlib
import json
import logging
import re
import shutil
import tempfile
import uuid
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import MappingProxyType
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import mwparserfromhell
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tasks.errors import ConfigError
from tasks.warehouse.atomic import atomic_write_bytes

log = logging.getLogger(__name__)

CONTENT_DIR = Path(__file__).with_name("articles")
SITE_FILE = "wikis.yaml"
TOPIC_FILES = "topics-*.yaml"
DEFAULT_DATE = "20261101"
#: The earlier dump of the two-date sample (:func:`build_live_mirror`): the wikis a month before, with fewer articles.
EARLIER_DATE = "20261001"
LOCAL_TOPICS = "topics-local.yaml"
#: The topics the earlier dump of the two-date sample lacks entirely: a football league, its clubs and their derby,
#: which mention each other, so the later dump adds articles that make related XRAG pairs among themselves.
NEW_TOPICS = "topics-sports.yaml"
# Real dumps put 100 pages in a stream; a few per stream gives the sample several streams.
PAGES_PER_STREAM = 4
# dewiki gets a newer date whose dump is still running, so discovery has a date to skip.
IN_PROGRESS_WIKI = "dewiki"
IN_PROGRESS_DELAY = timedelta(days=19)
DISAMBIGUATION_CLASS = "Q4167410"

_EXPORT_NS = "http://www.mediawiki.org/xml/export-0.11/"
_GENERATOR = "MediaWiki 1.46.0-wmf.3"
_CONTRIBUTOR = ("Kelda sample editor", 4021)
_QID = re.compile(r"^Q91000\d\d$")
_QID_BASE = 9_100_000
_DATE = re.compile(r"^\d{8}$")
_DISAMBIGUATOR = re.compile(r"\s*\([^()]*\)$")
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


# --- the YAML content ------------------------------------------------------


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ReferencesSpec(_Spec):
    heading: str
    markup: str


class DisambiguationSpec(_Spec):
    """The template a wiki marks disambiguation pages with, and the categories it adds."""

    template: str
    categories: tuple[str, ...]


class OtherPageSpec(_Spec):
    namespace: int = Field(gt=0)
    name: str
    text: str


class WikiSpec(_Spec):
    lang: str
    dbname: str
    sitename: str
    base: str
    page_id_base: int = Field(gt=0)
    revision_id_base: int = Field(gt=0)
    redirect_magic_word: str
    references: ReferencesSpec
    disambiguation: DisambiguationSpec
    namespaces: dict[int, str]
    other_pages: tuple[OtherPageSpec, ...]


class KindSpec(_Spec):
    instance_of: str | None
    infobox: dict[str, str]
    category: dict[str, str]


class ArticleSpec(_Spec):
    title: str
    description: str
    body: str
    redirects: tuple[str, ...] = ()


class TopicSpec(_Spec):
    qid: str = Field(pattern=_QID.pattern)
    kind: str
    image: str | None = None
    facts: dict[str, int | float | str] = {}
    articles: dict[str, ArticleSpec]


class ExtraItemSpec(_Spec):
    id: str
    labels: dict[str, str]
    descriptions: dict[str, str]
    sitelinks: dict[str, str]


class _SiteFile(_Spec):
    wikis: tuple[WikiSpec, ...]
    kinds: dict[str, KindSpec]
    extra_items: tuple[ExtraItemSpec, ...]


class _TopicFile(_Spec):
    topics: tuple[TopicSpec, ...]


@dataclass(frozen=True)
class SampleContent:
    """The validated YAML: wikis, topic kinds, topics (QID order) and extra Wikidata items."""

    wikis: tuple[WikiSpec, ...]
    kinds: Mapping[str, KindSpec]
    topics: tuple[TopicSpec, ...]
    extra_items: tuple[ExtraItemSpec, ...]


def _read_yaml(path: Path, model: type[_Spec]) -> Any:
    try:
        return model.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(step) for step in first["loc"])
        raise ConfigError(f"{path}: {where}: {first['msg']}") from exc


def load_content(directory: Path = CONTENT_DIR) -> SampleContent:
    """Read and cross-check the sample's YAML, so a typo fails here, naming its file.

    Cross-checks are the ones the formats rely on: a topic's kind must define an
    infobox and a category for each of its languages, QIDs are unique, and no
    two pages of one wiki share a title.
    """
    site = _read_yaml(directory / SITE_FILE, _SiteFile)
    langs = {spec.lang for spec in site.wikis}
    topics: dict[str, TopicSpec] = {}
    for path in sorted(directory.glob(TOPIC_FILES)):
        for topic in _read_yaml(path, _TopicFile).topics:
            _check_topic(path, topic, site.kinds, langs, topics)
            topics[topic.qid] = topic
    for spec in site.wikis:
        titles = [article.title for topic in topics.values() if (article := topic.articles.get(spec.lang))]
        titles += [alias for topic in topics.values() for alias in _redirects(topic, spec.lang)]
        duplicates = sorted({title for title in titles if titles.count(title) > 1})
        if duplicates:
            raise ConfigError(f"{directory}: {spec.dbname} has several pages titled {', '.join(duplicates)}")
    return SampleContent(site.wikis, MappingProxyType(dict(site.kinds)), tuple(topics[q] for q in sorted(topics)), site.extra_items)


def _check_topic(path: Path, topic: TopicSpec, kinds: Mapping[str, KindSpec], langs: set[str], seen: Mapping[str, TopicSpec]) -> None:
    if topic.qid in seen:
        raise ConfigError(f"{path}: {topic.qid} is defined twice")
    kind = kinds.get(topic.kind)
    if kind is None:
        raise ConfigError(f"{path}: {topic.qid}: unknown kind {topic.kind!r} (kinds are listed in {SITE_FILE})")
    for lang in topic.articles:
        if lang not in langs:
            raise ConfigError(f"{path}: {topic.qid}: article in {lang!r}, which is not one of the sample's wikis")
        if not _is_disambiguation(kind) and (lang not in kind.infobox or lang not in kind.category):
            raise ConfigError(f"{path}: {topic.qid}: kind {topic.kind!r} has no infobox or category for {lang!r}")


def _is_disambiguation(kind: KindSpec) -> bool:
    return kind.instance_of == DISAMBIGUATION_CLASS


def _redirects(topic: TopicSpec, lang: str) -> tuple[str, ...]:
    article = topic.articles.get(lang)
    return article.redirects if article else ()


# --- the mirror's layout ---------------------------------------------------


def cirrus_name(wiki: str, date: str, part: str = "content") -> str:
    return f"{wiki}-{date}-cirrussearch-{part}.json.gz"


def multistream_name(wiki: str, date: str) -> str:
    return f"{wiki}-{date}-pages-articles-multistream.xml.bz2"


def multistream_index_name(wiki: str, date: str) -> str:
    return f"{wiki}-{date}-pages-articles-multistream-index.txt.bz2"


def page_props_name(wiki: str, date: str) -> str:
    return f"{wiki}-{date}-page_props.sql.gz"


def wikidata_name(date: str) -> str:
    return f"wikidata-{date}-all.json.bz2"


@dataclass(frozen=True)
class WikiCounts:
    """What one wiki's dumps hold, counted from the YAML.

    ``articles`` are main-namespace pages that are neither redirects nor
    disambiguation pages, i.e. the documents a collection keeps.
    """

    articles: int
    redirects: int
    disambiguation: int
    other_namespaces: int

    @property
    def pages(self) -> int:
        """Every ``<page>`` of the XML dump."""
        return self.articles + self.redirects + self.disambiguation + self.other_namespaces


@dataclass(frozen=True)
class SampleMirror:
    """Where the sample was written and what it holds, for tests and the demo."""

    root: Path
    date: str
    langs: tuple[str, ...]
    wikis: Mapping[str, str]  # dbname → language code
    counts: Mapping[str, WikiCounts]  # dbname → counts
    in_progress: Mapping[str, str]  # dbname → a newer date whose dump is not finished

    def cirrus_path(self, wiki: str, part: str = "content") -> Path:
        return self.root / "other" / "cirrussearch" / self.date / cirrus_name(wiki, self.date, part)

    def dump_dir(self, wiki: str) -> Path:
        return self.root / wiki / self.date

    def multistream_path(self, wiki: str) -> Path:
        return self.dump_dir(wiki) / multistream_name(wiki, self.date)

    def multistream_index_path(self, wiki: str) -> Path:
        return self.dump_dir(wiki) / multistream_index_name(wiki, self.date)

    def page_props_path(self, wiki: str) -> Path:
        return self.dump_dir(wiki) / page_props_name(wiki, self.date)

    def dumpstatus_path(self, wiki: str) -> Path:
        return self.dump_dir(wiki) / "dumpstatus.json"

    def wikidata_path(self) -> Path:
        return self.root / "wikidatawiki" / "entities" / self.date / wikidata_name(self.date)


# --- pages of one wiki -----------------------------------------------------


@dataclass(frozen=True)
class _Page:
    """One page of one wiki, with everything the formats derive from it."""

    page_id: int
    namespace: int
    title: str  # full title, localised namespace prefix included
    wikitext: str
    redirect_target: str | None = None
    topic: TopicSpec | None = None
    article: ArticleSpec | None = None


def _qid_number(qid: str) -> int:
    """Position of a synthetic QID in the sample's range; page ids and entity ids derive from it."""
    return int(qid[1:]) - _QID_BASE


def _page_id(site: WikiSpec, qid: str, offset: int = 0) -> int:
    return site.page_id_base + 10 * _qid_number(qid) + offset


def _label(title: str) -> str:
    """Wikidata labels and infobox names drop a title's disambiguating parenthesis."""
    return _DISAMBIGUATOR.sub("", title)


def _article_wikitext(site: WikiSpec, kind: KindSpec, topic: TopicSpec, article: ArticleSpec) -> str:
    if _is_disambiguation(kind):
        return f"{article.body}\n\n{{{{{site.disambiguation.template}}}}}\n"
    params = {"name": _label(article.title)}
    if topic.image:
        params["image"] = topic.image
    params.update({key: str(value) for key, value in topic.facts.items()})
    infobox = "\n".join([f"{{{{{kind.infobox[site.lang]}", *(f"| {key} = {value}" for key, value in params.items()), "}}"])
    return (
        f"{infobox}\n{article.body}\n\n== {site.references.heading} ==\n{site.references.markup}\n\n"
        f"[[{site.namespaces[14]}:{kind.category[site.lang]}]]\n"
    )


def _wiki_pages(content: SampleContent, site: WikiSpec) -> list[_Page]:
    """All pages of one wiki in page-id order, as the dumps list them."""
    pages = []
    for topic in content.topics:
        article = topic.articles.get(site.lang)
        if article is None:
            continue
        wikitext = _article_wikitext(site, content.kinds[topic.kind], topic, article)
        pages.append(_Page(_page_id(site, topic.qid), 0, article.title, wikitext, topic=topic, article=article))
        for offset, alias in enumerate(article.redirects, start=1):
            text = f"{site.redirect_magic_word} [[{article.title}]]\n"
            pages.append(_Page(_page_id(site, topic.qid, offset), 0, alias, text, redirect_target=article.title))
    for number, other in enumerate(site.other_pages):
        title = f"{site.namespaces[other.namespace]}:{other.name}"
        pages.append(_Page(site.page_id_base + 1000 + number, other.namespace, title, other.text + "\n"))
    return sorted(pages, key=lambda page: page.page_id)


def _revision_id(site: WikiSpec, page: _Page) -> int:
    return site.revision_id_base + page.page_id


def _seed(site: WikiSpec, page: _Page, salt: str) -> int:
    return zlib.crc32(f"{site.dbname}:{page.page_id}:{salt}".encode())


def _revision_time(date: str, site: WikiSpec, page: _Page) -> datetime:
    """A last-edit time within the 45 days before the dump, fixed by the page so rebuilds agree."""
    dump_day = datetime.strptime(date, "%Y%m%d").replace(tzinfo=UTC)
    return dump_day - timedelta(seconds=3600 + _seed(site, page, "edit") % (45 * 86400))


def _creation_time(date: str, site: WikiSpec, page: _Page) -> datetime:
    return _revision_time(date, site, page) - timedelta(seconds=86400 + _seed(site, page, "create") % (15 * 365 * 86400))


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _normalise_title(title: str) -> str:
    """MediaWiki's first-letter case and underscore-as-space rules, enough to resolve sample links."""
    title = title.replace("_", " ").strip()
    return title[:1].upper() + title[1:]


class _Wikitext:
    """What CirrusSearch derives from a page's wikitext: visible text, links, categories, templates."""

    def __init__(self, site: WikiSpec, prose: str, full: str) -> None:
        category_prefix = f"{site.namespaces[14]}:"
        code = mwparserfromhell.parse(prose)
        for tag in code.filter_tags(matches=lambda node: str(node.tag).strip().lower() == "ref"):
            code.remove(tag)
        links = [str(link.title).strip() for link in code.filter_wikilinks()]
        for link in code.filter_wikilinks(matches=lambda node: str(node.title).strip().startswith(category_prefix)):
            code.remove(link)
        self.links = [_normalise_title(link) for link in links if not link.startswith(category_prefix)]
        paragraphs = [_one_line(part) for part in code.strip_code().split("\n\n")]
        self.paragraphs = [paragraph for paragraph in paragraphs if paragraph]
        whole = mwparserfromhell.parse(full)
        self.categories = [
            str(link.title).strip()[len(category_prefix) :]
            for link in whole.filter_wikilinks()
            if str(link.title).strip().startswith(category_prefix)
        ]
        self.templates = [f"{site.namespaces[10]}:{_normalise_title(str(t.name))}" for t in whole.filter_templates()]
        self.headings = [_one_line(heading.title.strip_code()) for heading in whole.filter_headings()]

    @property
    def text(self) -> str:
        return " ".join(self.paragraphs)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _parsed(site: WikiSpec, page: _Page) -> _Wikitext:
    prose = page.article.body if page.article else page.wikitext
    return _Wikitext(site, prose, page.wikitext)


# --- CirrusSearch ----------------------------------------------------------


def _cirrus_files(content: SampleContent, site: WikiSpec, pages: Sequence[_Page], date: str) -> tuple[bytes, bytes]:
    """The content dump (main namespace) and the general dump (everything else) of one wiki."""
    parsed = {page.page_id: _parsed(site, page) for page in pages if page.redirect_target is None}
    aliases = {_normalise_title(page.title): page.redirect_target for page in pages if page.redirect_target}
    linkers: dict[str, set[int]] = {}
    for page_id, wikitext in parsed.items():
        for link in wikitext.links:
            linkers.setdefault(aliases.get(link, link), set()).add(page_id)
    content_lines: list[str] = []
    general_lines: list[str] = []
    for page in pages:
        if page.redirect_target is not None:
            continue
        wikitext = parsed[page.page_id]
        incoming = len(linkers.get(page.title, set()) - {page.page_id})
        doc: dict[str, Any] = {
            "title": page.title.split(":", 1)[1] if page.namespace else page.title,
            "namespace": page.namespace,
            "namespace_text": site.namespaces[page.namespace],
            "text": wikitext.text,
            "opening_text": wikitext.paragraphs[0] if wikitext.paragraphs else None,
            "source_text": page.wikitext,
            "text_bytes": len(page.wikitext.encode()),
            "content_model": "wikitext",
            "heading": wikitext.headings,
            "category": wikitext.categories + _implied_categories(site, content, page),
            "template": wikitext.templates,
            "outgoing_link": sorted(set(wikitext.links)),
            "redirect": [{"namespace": 0, "title": alias} for alias in page.article.redirects] if page.article else [],
            "incoming_links": incoming,
            # made up, but monotone in incoming links like the real score's effect on ranking
            "popularity_score": round((incoming + 1) * 1e-6, 9),
            "timestamp": _iso(_revision_time(date, site, page)),
            "create_timestamp": _iso(_creation_time(date, site, page)),
            "version": _revision_id(site, page),
            "language": site.lang,
            "wiki": site.dbname,
        }
        if page.topic is not None:
            doc["wikibase_item"] = page.topic.qid
        action = {"index": {"_type": "page", "_id": str(page.page_id)}}
        lines = content_lines if page.namespace == 0 else general_lines
        lines += [_json_line(action), _json_line(doc)]
    return _gzip(content_lines), _gzip(general_lines)


def _implied_categories(site: WikiSpec, content: SampleContent, page: _Page) -> list[str]:
    """Categories a disambiguation template adds when rendered (they are not in the wikitext)."""
    if page.topic is not None and _is_disambiguation(content.kinds[page.topic.kind]):
        return list(site.disambiguation.categories)
    return []


def _json_line(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _gzip(lines: Iterable[str]) -> bytes:
    return gzip.compress("".join(line + "\n" for line in lines).encode(), compresslevel=9, mtime=0)


# --- XML multistream -------------------------------------------------------


def _xml_header(site: WikiSpec) -> str:
    schema = f"{_EXPORT_NS} http://www.mediawiki.org/xml/export-0.11.xsd"
    lines = [
        f'<mediawiki xmlns="{_EXPORT_NS}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        f'xsi:schemaLocation="{schema}" version="0.11" xml:lang="{site.lang}">',
        "  <siteinfo>",
        f"    <sitename>{escape(site.sitename)}</sitename>",
        f"    <dbname>{site.dbname}</dbname>",
        f"    <base>{escape(site.base)}</base>",
        f"    <generator>{_GENERATOR}</generator>",
        "    <case>first-letter</case>",
        "    <namespaces>",
    ]
    for key, name in sorted(site.namespaces.items()):
        if name:
            lines.append(f'      <namespace key="{key}" case="first-letter">{escape(name)}</namespace>')
        else:
            lines.append(f'      <namespace key="{key}" case="first-letter" />')
    lines += ["    </namespaces>", "  </siteinfo>"]
    return "\n".join(lines) + "\n"


def _text(value: str) -> str:
    return escape(value, {'"': "&quot;"})


def _base36_sha1(text: str) -> str:
    """MediaWiki's revision sha1: the SHA-1 as a 31-digit base-36 number."""
    number = int(hashlib.sha1(text.encode()).hexdigest(), 16)
    digits = ""
    while number:
        number, remainder = divmod(number, 36)
        digits = _BASE36[remainder] + digits
    return digits.rjust(31, "0")


def _page_xml(site: WikiSpec, page: _Page, date: str) -> str:
    revision = _revision_id(site, page)
    lines = [
        "  <page>",
        f"    <title>{_text(page.title)}</title>",
        f"    <ns>{page.namespace}</ns>",
        f"    <id>{page.page_id}</id>",
    ]
    if page.redirect_target is not None:
        lines.append(f"    <redirect title={quoteattr(page.redirect_target)} />")
    lines += ["    <revision>", f"      <id>{revision}</id>"]
    if page.article is not None:
        lines.append(f"      <parentid>{revision - 1 - _seed(site, page, 'parent') % 5000}</parentid>")
    lines += [
        f"      <timestamp>{_iso(_revision_time(date, site, page))}</timestamp>",
        "      <contributor>",
        f"        <username>{_CONTRIBUTOR[0]}</username>",
        f"        <id>{_CONTRIBUTOR[1]}</id>",
        "      </contributor>",
        "      <model>wikitext</model>",
        "      <format>text/x-wiki</format>",
        f'      <text bytes="{len(page.wikitext.encode())}" xml:space="preserve">{_text(page.wikitext)}</text>',
        f"      <sha1>{_base36_sha1(page.wikitext)}</sha1>",
        "    </revision>",
        "  </page>",
    ]
    return "\n".join(lines) + "\n"


def _multistream(site: WikiSpec, pages: Sequence[_Page], date: str) -> tuple[bytes, bytes]:
    """The dump (header stream, page streams, closing stream) and its ``offset:id:title`` index."""
    streams = [bz2.compress(_xml_header(site).encode())]
    offset = len(streams[0])
    index = []
    for start in range(0, len(pages), PAGES_PER_STREAM):
        chunk = pages[start : start + PAGES_PER_STREAM]
        stream = bz2.compress("".join(_page_xml(site, page, date) for page in chunk).encode())
        index += [f"{offset}:{page.page_id}:{page.title}\n" for page in chunk]
        streams.append(stream)
        offset += len(stream)
    streams.append(bz2.compress(b"</mediawiki>\n"))
    return b"".join(streams), bz2.compress("".join(index).encode())


# --- page_props SQL --------------------------------------------------------

_SQL_ESCAPES = str.maketrans({"\\": "\\\\", "'": "\\'", '"': '\\"', "\n": "\\n", "\r": "\\r", "\0": "\\0"})
_SQL_ROWS_PER_INSERT = 20


def _page_props_rows(content: SampleContent, site: WikiSpec, pages: Sequence[_Page]) -> list[tuple[int, str, str]]:
    rows = []
    for page in pages:
        if page.topic is None or page.article is None:
            continue
        rows.append((page.page_id, "wikibase_item", page.topic.qid))
        if _is_disambiguation(content.kinds[page.topic.kind]):
            rows.append((page.page_id, "disambiguation", ""))
        if page.topic.image:
            rows.append((page.page_id, "page_image_free", page.topic.image))
        if site.lang == "en":  # enwiki keeps short descriptions locally
            rows.append((page.page_id, "wikibase-shortdesc", page.article.description))
    return sorted(rows)


def _page_props_sql(content: SampleContent, site: WikiSpec, pages: Sequence[_Page], date: str) -> bytes:
    rows = [f"({page},'{name}','{value.translate(_SQL_ESCAPES)}',NULL)" for page, name, value in _page_props_rows(content, site, pages)]
    inserts = [
        "INSERT INTO `page_props` VALUES " + ",".join(rows[start : start + _SQL_ROWS_PER_INSERT]) + ";"
        for start in range(0, len(rows), _SQL_ROWS_PER_INSERT)
    ]
    dumped = datetime.strptime(date, "%Y%m%d") + timedelta(hours=3, minutes=8, seconds=38)
    text = "\n".join(
        [
            "-- MySQL dump 10.19  Distrib 10.11.6-MariaDB, for debian-linux-gnu (x86_64)",
            "--",
            f"-- Host: db-sample    Database: {site.dbname}",
            "-- ------------------------------------------------------",
            "-- Server version\t10.11.6-MariaDB-log",
            "",
            "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;",
            "/*!40101 SET NAMES utf8mb4 */;",
            "/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;",
            "",
            "--",
            "-- Table structure for table `page_props`",
            "--",
            "",
            "DROP TABLE IF EXISTS `page_props`;",
            "CREATE TABLE `page_props` (",
            "  `pp_page` int(10) unsigned NOT NULL,",
            "  `pp_propname` varbinary(60) NOT NULL,",
            "  `pp_value` blob NOT NULL,",
            "  `pp_sortkey` float DEFAULT NULL,",
            "  PRIMARY KEY (`pp_page`,`pp_propname`),",
            "  UNIQUE KEY `pp_propname_page` (`pp_propname`,`pp_page`),",
            "  UNIQUE KEY `pp_propname_sortkey_page` (`pp_propname`,`pp_sortkey`,`pp_page`)",
            ") ENGINE=InnoDB DEFAULT CHARSET=binary ROW_FORMAT=COMPRESSED;",
            "",
            "--",
            "-- Dumping data for table `page_props`",
            "--",
            "",
            "LOCK TABLES `page_props` WRITE;",
            "/*!40000 ALTER TABLE `page_props` DISABLE KEYS */;",
            *inserts,
            "/*!40000 ALTER TABLE `page_props` ENABLE KEYS */;",
            "UNLOCK TABLES;",
            "",
            "/*!40014 SET UNIQUE_CHECKS=@OLD_UNIQUE_CHECKS */;",
            "/*!40101 SET CHARACTER_SET_CLIENT=@OLD_CHARACTER_SET_CLIENT */;",
            "",
            f"-- Dump completed on {dumped:%Y-%m-%d %H:%M:%S}",
            "",
        ]
    )
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)


# --- dump status and checksums ---------------------------------------------


def _status_time(date: str, hours: int) -> str:
    return f"{datetime.strptime(date, '%Y%m%d') + timedelta(hours=hours, minutes=14, seconds=9):%Y-%m-%d %H:%M:%S}"


def _file_entry(wiki: str, date: str, name: str, data: bytes) -> dict[str, Any]:
    return {
        "size": len(data),
        "url": f"/{wiki}/{date}/{name}",
        "md5": hashlib.md5(data).hexdigest(),
        "sha1": hashlib.sha1(data).hexdigest(),
    }


def _dumpstatus(wiki: str, date: str, jobs: Mapping[str, Mapping[str, bytes]]) -> bytes:
    status = {
        "jobs": {
            job: {
                "status": "done",
                "updated": _status_time(date, 20 + number),
                "files": {name: _file_entry(wiki, date, name, data) for name, data in sorted(files.items())},
            }
            for number, (job, files) in enumerate(jobs.items())
        },
        "version": "0.8",
    }
    return json.dumps(status).encode()


def _in_progress_status(date: str) -> bytes:
    status = {
        "jobs": {
            "articlesmultistreamdump": {"status": "in-progress", "updated": _status_time(date, 5), "files": {}},
            "pagepropstable": {"status": "waiting", "updated": _status_time(date, 1), "files": {}},
        },
        "version": "0.8",
    }
    return json.dumps(status).encode()


def _sums(files: Mapping[str, bytes], algorithm: str) -> bytes:
    return "".join(f"{hashlib.new(algorithm, data).hexdigest()}  {name}\n" for name, data in sorted(files.items())).encode()


# --- Wikidata --------------------------------------------------------------


def _statement(subject: str, prop: str, value: str) -> dict[str, Any]:
    statement_id = str(uuid.uuid5(uuid.NAMESPACE_URL, f"babelbench-sample/{subject}/{prop}/{value}")).upper()
    return {
        "mainsnak": {
            "snaktype": "value",
            "property": prop,
            "datavalue": {"value": {"entity-type": "item", "numeric-id": int(value[1:]), "id": value}, "type": "wikibase-entityid"},
            "datatype": "wikibase-item",
        },
        "type": "statement",
        "id": f"{subject}${statement_id}",
        "rank": "normal",
    }


def _monolingual(values: Mapping[str, str]) -> dict[str, dict[str, str]]:
    return {lang: {"language": lang, "value": value} for lang, value in sorted(values.items())}


def _entity_meta(entity_id: str, number: int, date: str, *, ns: int = 0, title: str | None = None) -> dict[str, Any]:
    modified = datetime.strptime(date, "%Y%m%d").replace(tzinfo=UTC) - timedelta(days=3, seconds=number * 977)
    return {"pageid": 9_000_000 + number, "ns": ns, "title": title or entity_id, "lastrevid": 2_300_000_000 + number, "modified": _iso(modified)}


def _topic_entity(content: SampleContent, topic: TopicSpec, date: str) -> dict[str, Any]:
    by_lang = {site.lang: site for site in content.wikis}
    kind = content.kinds[topic.kind]
    articles = sorted(topic.articles.items())
    return {
        "type": "item",
        "id": topic.qid,
        "labels": _monolingual({lang: _label(article.title) for lang, article in articles}),
        "descriptions": _monolingual({lang: article.description for lang, article in articles}),
        "aliases": {
            lang: [{"language": lang, "value": alias} for alias in article.redirects] for lang, article in articles if article.redirects
        },
        "claims": {"P31": [_statement(topic.qid, "P31", kind.instance_of)]} if kind.instance_of else {},
        "sitelinks": {
            by_lang[lang].dbname: {"site": by_lang[lang].dbname, "title": article.title, "badges": []}
            for lang, article in sorted(articles, key=lambda item: by_lang[item[0]].dbname)
        },
        **_entity_meta(topic.qid, _qid_number(topic.qid), date),
    }


def _extra_entity(item: ExtraItemSpec, date: str) -> dict[str, Any]:
    return {
        "type": "item",
        "id": item.id,
        "labels": _monolingual(item.labels),
        "descriptions": _monolingual(item.descriptions),
        "aliases": {},
        "claims": {},
        "sitelinks": {wiki: {"site": wiki, "title": title, "badges": []} for wiki, title in sorted(item.sitelinks.items())},
        **_entity_meta(item.id, _qid_number(item.id), date),
    }


def _instance_of_property(date: str) -> dict[str, Any]:
    """A property entity: real dumps mix them in, and they have no sitelinks at all."""
    return {
        "type": "property",
        "datatype": "wikibase-item",
        "id": "P31",
        "labels": _monolingual({"en": "instance of"}),
        "descriptions": _monolingual({"en": "class of which this item is one member"}),
        "aliases": {},
        "claims": {},
        **_entity_meta("P31", 0, date, ns=120, title="Property:P31"),
    }


def _wikidata_dump(content: SampleContent, date: str) -> bytes:
    entities = [_instance_of_property(date)]
    entities += [_topic_entity(content, topic, date) for topic in content.topics]
    entities += [_extra_entity(item, date) for item in content.extra_items]
    lines = ",\n".join(json.dumps(entity, ensure_ascii=False, separators=(",", ":")) for entity in entities)
    return bz2.compress(f"[\n{lines}\n]\n".encode())


# --- writing ---------------------------------------------------------------


def _write_all(directory: Path, files: Mapping[str, bytes]) -> None:
    for name, data in files.items():
        atomic_write_bytes(directory / name, data)


def _counts(content: SampleContent, site: WikiSpec) -> WikiCounts:
    topics = [topic for topic in content.topics if site.lang in topic.articles]
    disambiguation = sum(_is_disambiguation(content.kinds[topic.kind]) for topic in topics)
    return WikiCounts(
        articles=len(topics) - disambiguation,
        redirects=sum(len(topic.articles[site.lang].redirects) for topic in topics),
        disambiguation=disambiguation,
        other_namespaces=len(site.other_pages),
    )


def build_sample_mirror(dest: Path, date: str = DEFAULT_DATE, *, content_dir: Path = CONTENT_DIR) -> SampleMirror:
    """Write the sample mirror under ``dest`` and describe it.

    Files are replaced one by one atomically, so rebuilding over an existing
    mirror never leaves a half-written file behind.
    """
    if not _DATE.match(date):
        raise ConfigError(f"sample date {date!r}: expected YYYYMMDD, as in the mirror's directory names")
    content = load_content(content_dir)
    dest = Path(dest)
    cirrus: dict[str, bytes] = {}
    for site in content.wikis:
        pages = _wiki_pages(content, site)
        cirrus[cirrus_name(site.dbname, date)], cirrus[cirrus_name(site.dbname, date, "general")] = _cirrus_files(content, site, pages, date)
        multistream, index = _multistream(site, pages, date)
        jobs = {
            "articlesmultistreamdump": {multistream_name(site.dbname, date): multistream, multistream_index_name(site.dbname, date): index},
            "pagepropstable": {page_props_name(site.dbname, date): _page_props_sql(content, site, pages, date)},
        }
        dumped = {name: data for files in jobs.values() for name, data in files.items()}
        _write_all(dest / site.dbname / date, dumped)
        _write_all(
            dest / site.dbname / date,
            {
                "dumpstatus.json": _dumpstatus(site.dbname, date, jobs),
                f"{site.dbname}-{date}-sha1sums.txt": _sums(dumped, "sha1"),
                f"{site.dbname}-{date}-md5sums.txt": _sums(dumped, "md5"),
            },
        )
    _write_all(dest / "other" / "cirrussearch" / date, {**cirrus, "sha1sums.txt": _sums(cirrus, "sha1")})
    wikidata = {wikidata_name(date): _wikidata_dump(content, date)}
    _write_all(dest / "wikidatawiki" / "entities" / date, {**wikidata, f"wikidata-{date}-md5sums.txt": _sums(wikidata, "md5")})
    later = f"{datetime.strptime(date, '%Y%m%d') + IN_PROGRESS_DELAY:%Y%m%d}"
    atomic_write_bytes(dest / IN_PROGRESS_WIKI / later / "dumpstatus.json", _in_progress_status(later))
    log.info("wrote the sample mirror for %s (%s) to %s", ", ".join(site.dbname for site in content.wikis), date, dest)
    return SampleMirror(
        root=dest,
        date=date,
        langs=tuple(site.lang for site in content.wikis),
        wikis=MappingProxyType({site.dbname: site.lang for site in content.wikis}),
        counts=MappingProxyType({site.dbname: _counts(content, site) for site in content.wikis}),
        in_progress=MappingProxyType({IN_PROGRESS_WIKI: later}),
    )


def build_live_mirror(dest: Path, *, earlier: str = EARLIER_DATE, later: str = DEFAULT_DATE) -> tuple[SampleMirror, list[str]]:
    """The sample mirror with two dump dates, as a wiki grows between dumps: the ``earlier`` dump lacks every
    second local topic (the ECLEKTIC-style facts, in QID order) and every topic of ``NEW_TOPICS`` (related
    articles in every language, which XRAG pairs), and the ``later`` one adds them.  Returns the mirror (its
    ``date`` the later dump) and the QIDs new in the later dump, in order."""
    with tempfile.TemporaryDirectory() as scratch:
        content = Path(scratch) / "articles"
        shutil.copytree(CONTENT_DIR, content)
        document = yaml.safe_load((content / LOCAL_TOPICS).read_text(encoding="utf-8"))
        local = sorted((t for t in document["topics"] if t.get("kind") != "disambiguation"), key=lambda t: t["qid"])
        added = [topic["qid"] for topic in local[1::2]]
        document["topics"] = [t for t in document["topics"] if t["qid"] not in added]
        (content / LOCAL_TOPICS).write_text(yaml.safe_dump(document, allow_unicode=True, sort_keys=False), encoding="utf-8")
        news = yaml.safe_load((content / NEW_TOPICS).read_text(encoding="utf-8"))["topics"]
        added += [topic["qid"] for topic in news]
        (content / NEW_TOPICS).unlink()
        build_sample_mirror(dest, earlier, content_dir=content)
    return build_sample_mirror(dest, later), sorted(added)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tasks.sample.mirror", description="Write babelbench's bundled sample dump mirror.")
    parser.add_argument("dest", type=Path, help="directory to write the mirror into (created if missing)")
    parser.add_argument("--date", default=DEFAULT_DATE, help=f"dump date YYYYMMDD (default {DEFAULT_DATE})")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        mirror = build_sample_mirror(args.dest, args.date)
    except ConfigError as exc:
        parser.exit(2, f"error: {exc}\n")
    for wiki, counts in mirror.counts.items():
        print(f"{wiki}: {counts.articles} articles, {counts.redirects} redirects, {counts.disambiguation} disambiguation, {counts.other_namespaces} other")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
