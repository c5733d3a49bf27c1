"""XML page dumps: small hand-written dumps for each behaviour, and the four real truncated samples."""

from __future__ import annotations

import bz2
import gzip
import logging
import lzma
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import pytest

from tasks.dumps.records import DOCUMENT_COLUMNS
from tasks.dumps.xml_pages import iter_xml_pages, read_xml_siteinfo
from tasks.errors import ConfigError, InputFormatError, TruncatedInputError
from tests.conftest import TEST_DATA, shared_data

SCHEMA_010 = "http://www.mediawiki.org/xml/export-0.10/"
SCHEMA_011 = "http://www.mediawiki.org/xml/export-0.11/"
UK_NAMESPACES = {-1: "Спеціальна", 0: "", 1: "Обговорення", 6: "Файл", 10: "Шаблон", 14: "Категорія"}
RESIDUE = ("{{", "[[", "<ref", "'''")


# -- building small dumps (also used by test_multistream) ---------------------------------------
def siteinfo_xml(namespaces: dict[int, str], dbname: str = "ukwiki") -> str:
    entries = "\n".join(
        f'      <namespace key="{key}" case="first-letter">{escape(name)}</namespace>' if name else f'      <namespace key="{key}" case="first-letter" />'
        for key, name in namespaces.items()
    )
    return (
        "  <siteinfo>\n"
        f"    <sitename>Test wiki</sitename>\n    <dbname>{dbname}</dbname>\n"
        "    <base>https://test.example/wiki/Main</base>\n    <generator>MediaWiki 1.41</generator>\n"
        f"    <case>first-letter</case>\n    <namespaces>\n{entries}\n    </namespaces>\n  </siteinfo>\n"
    )


def page_xml(
    title: str | None, page_id: int | None, text: str, *, ns: int = 0, redirect: str | None = None,
    timestamp: str = "2023-05-01T12:00:00Z",
) -> str:
    parts = ["  <page>\n"]
    if title is not None:
        parts.append(f"    <title>{escape(title)}</title>\n")
    parts.append(f"    <ns>{ns}</ns>\n")
    if page_id is not None:
        parts.append(f"    <id>{page_id}</id>\n")
    if redirect is not None:
        parts.append(f"    <redirect title={quoteattr(redirect)} />\n")
    parts.append(
        f"    <revision>\n      <id>{(page_id or 0) + 1000}</id>\n      <timestamp>{timestamp}</timestamp>\n"
        "      <contributor>\n        <username>Tester</username>\n        <id>7</id>\n      </contributor>\n"
        f'      <model>wikitext</model>\n      <format>text/x-wiki</format>\n'
        f'      <text bytes="{len(text.encode())}" xml:space="preserve">{escape(text)}</text>\n'
        "    </revision>\n  </page>\n"
    )
    return "".join(parts)


def dump_xml(pages: list[str], namespaces: dict[int, str] = UK_NAMESPACES, schema: str = SCHEMA_010) -> str:
    head = f'<mediawiki xmlns="{schema}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" version="0.10" xml:lang="uk">\n'
    return head + siteinfo_xml(namespaces) + "".join(pages) + "</mediawiki>\n"


def write(path: Path, text: str) -> Path:
    data = text.encode()
    compress = {".bz2": bz2.compress, ".gz": gzip.compress, ".xz": lzma.compress}.get(path.suffix, lambda raw: raw)
    path.write_bytes(compress(data))
    return path


def line_of(text: str, needle: str, start: int = 0) -> int:
    """1-based line on which ``needle`` first occurs (at or after ``start``), counted on the raw text."""
    return text[: text.index(needle, start)].count("\n") + 1


BASIC_PAGES = [
    page_xml("Київ", 10, "'''Київ''' — [[столиця]] [[Україна|України]].{{Infobox city|name=Київ}}\n[[Категорія:Міста]]",
             timestamp="2023-04-02T10:20:30Z"),
    page_xml("Kyiv", 11, "#REDIRECT [[Київ]]", redirect="Київ"),
    page_xml("Обговорення:Київ", 12, "Talk {{tmpl}}", ns=1),
    page_xml("Шаблон:Infobox city", 13, "{{{name}}}", ns=10),
    page_xml("Львів & Co", 14, "Місто<ref>джерело</ref> на заході.\n== Історія ==\nДавня."),
]
BASIC_EXPECTED = [
    {"lang": "uk", "page_id": 10, "title": "Київ", "text": "Київ — столиця України.", "qid": None, "namespace": 0,
     "is_redirect": False, "redirect_target": None, "is_disambiguation": False, "timestamp": "2023-04-02T10:20:30Z"},
    {"lang": "uk", "page_id": 11, "title": "Kyiv", "text": "", "qid": None, "namespace": 0,
     "is_redirect": True, "redirect_target": "Київ", "is_disambiguation": False, "timestamp": "2023-05-01T12:00:00Z"},
    {"lang": "uk", "page_id": 14, "title": "Львів & Co", "text": "Місто на заході.\n\nІсторія\n\nДавня.", "qid": None,
     "namespace": 0, "is_redirect": False, "redirect_target": None, "is_disambiguation": False,
     "timestamp": "2023-05-01T12:00:00Z"},
]


def expected_rows(source_name: str) -> list[dict[str, Any]]:
    # page_xml gives each page's revision the id page id + 1000
    return [row | {"source": source_name, "revision_id": row["page_id"] + 1000} for row in BASIC_EXPECTED]


# -- small dumps ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["dump.xml", "dump.xml.bz2", "dump.xml.gz", "dump.xml.xz"])
def test_main_namespace_pages_in_every_compression(tmp_path: Path, name: str) -> None:
    path = write(tmp_path / name, dump_xml(BASIC_PAGES))
    rows = list(iter_xml_pages(path, "uk"))
    assert rows == expected_rows(name)
    assert all(tuple(row) == DOCUMENT_COLUMNS for row in rows)


def test_schema_0_11_reads_like_0_10(tmp_path: Path) -> None:
    path = write(tmp_path / "new.xml", dump_xml(BASIC_PAGES, schema=SCHEMA_011))
    assert list(iter_xml_pages(path, "uk")) == expected_rows("new.xml")


def test_compression_is_detected_from_magic_bytes(tmp_path: Path) -> None:
    path = tmp_path / "unlabelled.xml"
    path.write_bytes(bz2.compress(dump_xml(BASIC_PAGES).encode()))
    assert [row["page_id"] for row in iter_xml_pages(path, "uk")] == [10, 11, 14]


def test_suffix_that_contradicts_the_content_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "lies.xml.bz2"
    path.write_text(dump_xml(BASIC_PAGES), encoding="utf-8")
    with pytest.raises(InputFormatError, match="lies.xml.bz2") as caught:
        list(iter_xml_pages(path, "uk"))
    assert caught.value.reason == "not a bz2 file: the suffix says bz2 but the content starts like plain"


def test_corrupt_archive_is_an_input_error_naming_the_file(tmp_path: Path) -> None:
    data = bytearray(lzma.compress(dump_xml(BASIC_PAGES).encode()))
    middle = len(data) // 2
    data[middle : middle + 16] = bytes(16)
    path = tmp_path / "corrupt.xml.xz"
    path.write_bytes(bytes(data))
    with pytest.raises(InputFormatError, match="corrupt.xml.xz") as caught:
        list(iter_xml_pages(path, "uk"))
    assert not isinstance(caught.value, TruncatedInputError)
    assert "corrupt compressed data" in caught.value.reason


def test_xml_that_is_not_a_mediawiki_export_is_an_input_error(tmp_path: Path) -> None:
    path = write(tmp_path / "dump.xml.gz", '<?xml version="1.0"?>\n<rss version="2.0"><channel><title>News</title></channel></rss>\n')
    expected = (str(path), "line 2, column 0 (decompressed byte 22)", "not a MediaWiki XML dump: the root element is <rss>, not <mediawiki>")
    with pytest.raises(InputFormatError) as pages:
        list(iter_xml_pages(path, "uk"))
    with pytest.raises(InputFormatError) as siteinfo:
        read_xml_siteinfo(path)
    assert (pages.value.source, pages.value.position, pages.value.reason) == expected
    assert (siteinfo.value.source, siteinfo.value.position, siteinfo.value.reason) == expected


@pytest.mark.parametrize(("name", "content", "position", "reason"), [
    ("empty.xml", b"", "byte 0", "the file is empty"),
    ("empty.xml.gz", gzip.compress(b"", mtime=0), "decompressed byte 0", "the archive decompresses to nothing"),
])
def test_an_empty_file_is_an_input_error(tmp_path: Path, name: str, content: bytes, position: str, reason: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputFormatError) as caught:
        list(iter_xml_pages(path, "uk"))
    assert (caught.value.position, caught.value.reason) == (position, reason)
    assert not isinstance(caught.value, TruncatedInputError)


def test_siteinfo_is_read_with_localised_namespaces(tmp_path: Path) -> None:
    path = write(tmp_path / "dump.xml.gz", dump_xml(BASIC_PAGES))
    info = read_xml_siteinfo(path)
    assert (info.dbname, info.base_url, info.case) == ("ukwiki", "https://test.example/wiki/Main", "first-letter")
    assert info.namespaces == UK_NAMESPACES


def test_unknown_language_fails_before_reading(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'xx'"):
        iter_xml_pages(tmp_path / "does-not-exist.xml", "xx")


def test_pages_without_id_or_title_are_reported_and_skipped(tmp_path: Path) -> None:
    text = dump_xml([page_xml("Перша", 1, "Один."), page_xml("Без номера", None, "Два."), page_xml(None, 3, "Три."),
                     page_xml("Четверта", 4, "Чотири.")])
    path = write(tmp_path / "gaps.xml", text)
    issues: list[dict[str, Any]] = []
    rows = list(iter_xml_pages(path, "uk", on_issue=issues.append))
    assert [row["title"] for row in rows] == ["Перша", "Четверта"]
    assert [(issue["source"], issue["item"]) for issue in issues] == [(str(path), "Без номера"), (str(path), "3")]
    second_page = text.index("<page>", text.index("<page>") + 1)
    assert issues[0]["position"].startswith(f"line {line_of(text, '<page>', second_page)}, ")
    assert "id" in issues[0]["reason"] and "title" in issues[1]["reason"]


def test_skipped_pages_are_logged_when_nobody_collects_issues(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = write(tmp_path / "gaps.xml", dump_xml([page_xml("Без номера", None, "Два.")]))
    with caplog.at_level(logging.WARNING, logger="tasks.dumps.xml_pages"):
        assert list(iter_xml_pages(path, "uk")) == []
    assert "Без номера" in caplog.text and "gaps.xml" in caplog.text


def test_last_revision_gives_text_timestamp_and_revision_id(tmp_path: Path) -> None:
    page = page_xml("Історія", 5, "Стара версія.", timestamp="2001-01-01T00:00:00Z")
    newer = ('    <revision>\n      <id>99</id>\n      <timestamp>2022-02-02T02:02:02Z</timestamp>\n'
             '      <text xml:space="preserve">Нова версія.</text>\n    </revision>\n  </page>\n')
    page = page.removesuffix("  </page>\n") + newer
    rows = list(iter_xml_pages(write(tmp_path / "history.xml", dump_xml([page])), "uk"))
    assert [(row["text"], row["timestamp"], row["revision_id"]) for row in rows] == [
        ("Нова версія.", "2022-02-02T02:02:02Z", 99)]


def test_file_cut_inside_a_page_keeps_complete_pages_then_names_the_cut(tmp_path: Path) -> None:
    full = dump_xml([page_xml("First", 1, "One."), page_xml("Second", 2, "Two."), page_xml("Third", 3, "Three and more text")])
    text = full[: full.index("and more")]
    path = write(tmp_path / "cut.xml.xz", text)
    rows = []
    with pytest.raises(TruncatedInputError) as caught:
        for row in iter_xml_pages(path, "uk"):
            rows.append(row)
    assert [row["title"] for row in rows] == ["First", "Second"]
    error = caught.value
    assert error.last_item == "Third"
    assert error.source == str(path)
    last_line = text.rsplit("\n", 1)[1]
    expected_position = f"line {text.count(chr(10)) + 1}, column {len(last_line)} (decompressed byte {len(text.encode())})"
    assert error.position == expected_position
    assert str(path) in str(error) and expected_position in str(error)


@pytest.mark.parametrize(
    ("cut_after", "reason"),
    [("</page>\n</mediawiki>", "between elements"), ("<page>\n    <title>Third</title>", "before its <title>")],
)
def test_file_cut_where_no_title_is_open_has_no_cut_page(tmp_path: Path, cut_after: str, reason: str) -> None:
    full = dump_xml([page_xml("First", 1, "One."), page_xml("Second", 2, "Two."), page_xml("Third", 3, "Three.")])
    # Cut just before the last "</mediawiki>", or just after the third "<page>" opens.
    cut = full.rindex(cut_after) + (len("</page>\n") if cut_after.startswith("</page>") else len("<page>\n"))
    path = write(tmp_path / "cut.xml", full[:cut])
    rows = []
    with pytest.raises(TruncatedInputError) as caught:
        for row in iter_xml_pages(path, "uk"):
            rows.append(row)
    assert len(rows) == (3 if cut_after.startswith("</page>") else 2)
    assert caught.value.last_item is None
    assert reason in caught.value.reason


def test_malformed_xml_in_the_middle_is_a_format_error_with_its_line(tmp_path: Path) -> None:
    broken = page_xml("Broken", 2, "Two.").replace("<ns>0</ns>", "<ns>0</nss>")
    text = dump_xml([page_xml("First", 1, "One."), broken, page_xml("Third", 3, "Three.")])
    path = write(tmp_path / "bad.xml", text)
    rows = []
    with pytest.raises(InputFormatError) as caught:
        for row in iter_xml_pages(path, "uk"):
            rows.append(row)
    assert not isinstance(caught.value, TruncatedInputError)
    assert [row["title"] for row in rows] == ["First"]
    assert caught.value.position is not None
    assert caught.value.position.startswith(f"line {line_of(text, '</nss>')}, ")
    assert "mismatched tag" in caught.value.reason


def test_cut_archive_keeps_complete_pages_and_names_the_cut_page(tmp_path: Path) -> None:
    # Varied text so gzip cannot squeeze it much: cutting the archive in half
    # then cuts the XML somewhere inside the pages, after several complete ones.
    titles = [f"Page {n}" for n in range(40)]
    pages = [page_xml(title, n + 1, " ".join(f"w{(n * 7919 + k * 104729) % 1000003}" for k in range(300)))
             for n, title in enumerate(titles)]
    data = gzip.compress(dump_xml(pages).encode())
    path = tmp_path / "half.xml.gz"
    path.write_bytes(data[: len(data) // 2])
    rows = []
    with pytest.raises(TruncatedInputError) as caught:
        for row in iter_xml_pages(path, "uk"):
            rows.append(row)
    assert 5 < len(rows) < 40
    assert [row["title"] for row in rows] == titles[: len(rows)]
    assert caught.value.last_item == titles[len(rows)]
    assert "decompressed byte" in str(caught.value) and "half.xml.gz" in str(caught.value)


@pytest.mark.parametrize(
    ("lang", "wikitext", "expected"),
    [
        ("en", "'''Mercury''' may refer to:\n* [[Mercury (planet)]]\n{{Disambiguation}}", True),
        ("en", "Mercury may refer to: ...\n{{template:disambiguation|geo}}", True),
        ("en", "Lists.\n{{ set_index_article }}", True),
        ("en", "Mercury.\n[[Category:Disambiguation pages]]", True),
        ("en", "Mercury.\n[[category:disambiguation_pages|Mercury]]", True),
        ("en", "Mercury.\n__DISAMBIG__", True),
        ("en", "The word disambiguation appears in prose only.", False),
        ("en", "See [[:Category:Disambiguation pages]].", False),
        ("en", "{{Disambiguation needed}} is another template.", False),
        ("uk", "Ядро може означати:\n{{неоднозначність}}", True),
        ("uk", "Ядро.\n[[Категорія:Багатозначні терміни]]", True),
        ("uk", "Ядро.\n{{Шаблон:Disambig}}", True),
        ("uk", "Ядро клітини — органела.", False),
    ],
)
def test_disambiguation_detection(tmp_path: Path, lang: str, wikitext: str, expected: bool) -> None:
    path = write(tmp_path / "dab.xml", dump_xml([page_xml("Mercury", 1, wikitext)]))
    [row] = iter_xml_pages(path, lang)
    assert row["is_disambiguation"] is expected


# -- the real truncated samples: excerpts in tests/data (every clone), the whole files in ../shared when present --
@dataclass(frozen=True)
class Sample:
    lang: str
    file: str
    articles: int  # complete ns-0 pages without <redirect>
    redirects: int  # complete ns-0 pages with <redirect>
    disambiguations: int
    cut_title: str  # <title> of the page the file ends inside
    category_namespace: str  # key 14 in <siteinfo>
    lines: int  # decompressed lines; each file ends with a newline
    shared: bool  # in ../shared/data (optional) rather than tests/data

    @property
    def path(self) -> Path:
        return shared_data("wikipedia-xml", self.file) if self.shared else TEST_DATA / "wikipedia-xml" / self.file


# Counted by hand, independently of the parser: the decompressed text was split
# into lines and a one-off awk script tracked each "  <page>" … "  </page>" block
# (its <ns> line and whether a "<redirect " line occurs), counting only blocks
# that reach "  </page>"; the cut-off title is the last <title> line. The
# disambiguation counts came from a one-off regex over each complete ns-0
# non-redirect <page> block for "{{marker}}"/"{{marker|", "[[Category:marker]]"
# (localised or canonical) or "__DISAMBIG__", with the markers of languages.csv.
# The excerpts (tests/data/wikipedia-xml/README.md) keep every disambiguation page
# and redirect of the whole files, so those two counts are the same there; their
# articles and lines were counted by the same awk script on the excerpts.
SAMPLES = {
    "bn": Sample("bn", "bnwiki-truncated-100k.xml.xz", 380, 69, 2, "মিডিয়াউইকি:Common.css", "বিষয়শ্রেণী", 100_000, True),
    "el": Sample("el", "elwiki-truncated-100k.xml.xz", 524, 21, 23, "18 Μαρτίου", "Κατηγορία", 100_000, True),
    "ja": Sample("ja", "jawiki-truncated-100k.xml.xz", 189, 15, 6, "プロジェクト:プロジェクト関連文書", "Category", 100_000, True),
    "uk": Sample("uk", "ukwiki-truncated-100k.xml.xz", 512, 13, 3, "1702", "Категорія", 100_000, True),
    "bn-excerpt": Sample("bn", "bnwiki-excerpt.xml.xz", 15, 69, 2, "মিডিয়াউইকি:Common.css", "বিষয়শ্রেণী", 5_880, False),
    "el-excerpt": Sample("el", "elwiki-excerpt.xml.xz", 38, 21, 23, "18 Μαρτίου", "Κατηγορία", 4_160, False),
    "ja-excerpt": Sample("ja", "jawiki-excerpt.xml.xz", 13, 15, 6, "プロジェクト:プロジェクト関連文書", "Category", 4_522, False),
    "uk-excerpt": Sample("uk", "ukwiki-excerpt.xml.xz", 21, 13, 3, "1702", "Категорія", 4_119, False),
}


@dataclass
class Parsed:
    lang: str
    sample: Sample
    path: Path
    rows: list[dict[str, Any]]
    issues: list[dict[str, Any]]
    error: BaseException | None


@pytest.fixture(scope="module", params=sorted(SAMPLES))
def parsed(request: pytest.FixtureRequest) -> Parsed:
    """Each real sample parsed once per session (cleaning dominates: a few seconds for a whole file)."""
    sample = SAMPLES[request.param]
    path = sample.path
    rows: list[dict[str, Any]] = []
    issues: list[dict[str, Any]] = []
    error = None
    try:
        for row in iter_xml_pages(path, sample.lang, on_issue=issues.append):
            rows.append(row)
    except TruncatedInputError as exc:
        error = exc
    return Parsed(sample.lang, sample, path, rows, issues, error)


@pytest.mark.slow
def test_sample_yields_every_complete_main_page(parsed: Parsed) -> None:
    articles = [row for row in parsed.rows if not row["is_redirect"]]
    redirects = [row for row in parsed.rows if row["is_redirect"]]
    assert len(articles) == parsed.sample.articles
    assert len(redirects) == parsed.sample.redirects
    assert parsed.issues == []
    assert all(row["redirect_target"] for row in redirects)
    assert all(row["namespace"] == 0 and row["lang"] == parsed.lang and row["source"] == parsed.sample.file for row in parsed.rows)
    assert len({row["page_id"] for row in parsed.rows}) == len(parsed.rows)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", row["timestamp"]) for row in parsed.rows)
    assert sum(row["is_disambiguation"] for row in articles) == parsed.sample.disambiguations


@pytest.mark.slow
def test_sample_truncation_is_reported_after_the_complete_pages(parsed: Parsed) -> None:
    error = parsed.error
    assert isinstance(error, TruncatedInputError)
    assert error.last_item == parsed.sample.cut_title
    decompressed_size = len(lzma.decompress(parsed.path.read_bytes()))
    assert error.position == f"line {parsed.sample.lines + 1}, column 0 (decompressed byte {decompressed_size})"
    assert str(parsed.path) in str(error) and error.position in str(error)


@pytest.mark.slow
def test_sample_text_has_no_markup_residue(parsed: Parsed) -> None:
    leftovers = [(row["title"], token) for row in parsed.rows for token in RESIDUE if token in row["text"]]
    assert leftovers == []


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sample_siteinfo_has_the_localised_namespaces(name: str) -> None:
    sample = SAMPLES[name]
    info = read_xml_siteinfo(sample.path)
    assert info.dbname == f"{sample.lang}wiki"
    assert info.namespaces[0] == ""
    assert info.namespaces[14] == sample.category_namespace
    if sample.lang == "ja":
        assert (info.namespaces[6], info.namespaces[1], info.namespaces[828]) == ("ファイル", "ノート", "モジュール")


@pytest.mark.slow
def test_known_redirect_in_the_ukrainian_sample(parsed: Parsed) -> None:
    if parsed.lang != "uk":
        pytest.skip("the hand-checked redirect is in the Ukrainian sample")
    # The sample's first page: <title>Esperanto</title> <id>2</id> <redirect title="Есперанто" />.
    first = parsed.rows[0]
    assert (first["page_id"], first["title"], first["is_redirect"], first["redirect_target"]) == (2, "Esperanto", True, "Есперанто")
