"""Sitelink parsers: page_props SQL dumps and the Wikidata entity JSON dump, on hand-written samples."""

from __future__ import annotations

import bz2
import gzip
from pathlib import Path

import pytest

from tasks.dumps.records import SITELINK_COLUMNS
from tasks.dumps.sitelinks import iter_page_props_sitelinks, iter_wikidata_sitelinks
from tasks.errors import InputFormatError, TruncatedInputError

SQL_HEAD = r"""-- MySQL dump 10.19  Distrib 10.11.6-MariaDB, for debian-linux-gnu (x86_64)
--
-- Host: db1234    Database: enwiki
-- ------------------------------------------------------
DROP TABLE IF EXISTS `page_props`;
CREATE TABLE `page_props` (
  `pp_page` int(10) unsigned NOT NULL,
  `pp_propname` varbinary(60) NOT NULL,
  `pp_value` blob NOT NULL,
  `pp_sortkey` float DEFAULT NULL,
  PRIMARY KEY (`pp_page`,`pp_propname`)
) ENGINE=InnoDB DEFAULT CHARSET=binary;
"""
# Row by row, what a correct reader must see:
#   (10,'defaultsort',"O'Brien, Pat),(x")          quote escaped, "),(" inside the value
#   (10,'wikibase_item','Q42')                      kept
#   (11,'displaytitle',"fake),(99,'wikibase_item','Q666',NULL")   a whole fake row inside a value
#   (12,'wikibase_item','Q7')                       kept
#   (15,'page_image_free','A_(b),(c).jpg')
#   (15,'wikibase_item','Q1000')                    kept, second INSERT statement
#   (16,'wikibase-shortdesc','Say "hi"; \ ok', 1.5)  escaped double quotes and backslash, a sort key
SQL_ROWS = (
    r"INSERT INTO `page_props` VALUES (10,'defaultsort','O\'Brien, Pat),(x',NULL),(10,'wikibase_item','Q42',NULL),"
    r"(11,'displaytitle','fake),(99,\'wikibase_item\',\'Q666\',NULL',NULL),(12,'wikibase_item','Q7',NULL);"
    "\n"
    r"INSERT INTO `page_props` VALUES (15,'page_image_free','A_(b),(c).jpg',NULL),(15,'wikibase_item','Q1000',NULL),"
    r"(16,'wikibase-shortdesc','Say \"hi\"; \\ ok',1.5);"
    "\n"
)
SQL_TAIL = "-- Dump completed on 2024-05-02  1:23:45\n"


def _link(qid: str | None, page_id: int, source: str, disambiguation: bool = False) -> dict[str, object]:
    return {"qid": qid, "lang": "en", "page_id": page_id, "title": None, "source": source,
            "is_disambiguation": disambiguation}


def test_page_props_keeps_wikibase_items_through_escapes_and_several_statements(tmp_path: Path) -> None:
    path = tmp_path / "enwiki-20240501-page_props.sql.gz"
    path.write_bytes(gzip.compress((SQL_HEAD + SQL_ROWS + SQL_TAIL).encode(), mtime=0))
    issues: list[dict] = []

    rows = list(iter_page_props_sitelinks(path, "en", on_issue=issues.append))

    assert rows == [_link("Q42", 10, path.name), _link("Q7", 12, path.name), _link("Q1000", 15, path.name)]
    assert all(tuple(row) == SITELINK_COLUMNS for row in rows)
    assert issues == []


def test_page_props_rows_before_a_cut_are_kept(tmp_path: Path) -> None:
    cut = SQL_ROWS.index("(16,")  # the second statement stops before its last row
    path = tmp_path / "enwiki-20240501-page_props.sql"
    path.write_text(SQL_HEAD + SQL_ROWS[: cut + 5], encoding="utf-8")

    rows = []
    with pytest.raises(TruncatedInputError) as caught:
        for row in iter_page_props_sitelinks(path, "en"):
            rows.append(row)

    assert [row["qid"] for row in rows] == ["Q42", "Q7", "Q1000"]
    assert caught.value.position.startswith("line 14, byte ")
    assert caught.value.last_item == "15"


def test_page_props_malformed_statement_is_reported_and_the_next_one_read(tmp_path: Path) -> None:
    broken = "INSERT INTO `page_props` VALUES (20,'wikibase_item','Q5',NULL),(21,wikibase_item,'Q6',NULL);\n"
    path = tmp_path / "enwiki-20240501-page_props.sql"
    path.write_text(SQL_HEAD + broken + SQL_ROWS, encoding="utf-8")
    issues: list[dict] = []

    qids = [row["qid"] for row in iter_page_props_sitelinks(path, "en", on_issue=issues.append)]

    assert qids == ["Q5", "Q42", "Q7", "Q1000"]
    assert len(issues) == 1
    assert issues[0]["position"] == f"line 13, byte {broken.index('(21')}"
    assert issues[0]["item"] == "20"


def test_page_props_rejects_another_table(tmp_path: Path) -> None:
    path = tmp_path / "enwiki-20240501-langlinks.sql"
    path.write_text("INSERT INTO `langlinks` VALUES (10,'de','Douglas Adams');\n", encoding="utf-8")

    with pytest.raises(InputFormatError, match="langlinks"):
        list(iter_page_props_sitelinks(path, "en"))


def test_page_props_file_without_a_page_props_statement_is_not_a_page_props_dump(tmp_path: Path) -> None:
    path = tmp_path / "enwiki-20240501-page_props.sql.gz"
    path.write_bytes(gzip.compress(b"<html><body>Not Found</body></html>\n", mtime=0))

    with pytest.raises(InputFormatError) as caught:
        list(iter_page_props_sitelinks(path, "en"))

    assert (caught.value.position, caught.value.reason) == (
        "line 1 (the end)", "not a page_props SQL dump: no CREATE TABLE or INSERT INTO `page_props`")


def test_page_props_table_without_rows_is_an_empty_page_props_dump(tmp_path: Path) -> None:
    path = tmp_path / "enwiki-20240501-page_props.sql.gz"
    path.write_bytes(gzip.compress((SQL_HEAD + SQL_TAIL).encode(), mtime=0))

    assert list(iter_page_props_sitelinks(path, "en")) == []


ENTITIES = [
    "[",
    '{"type":"item","id":"Q1","labels":{"en":{"language":"en","value":"universe"}},"claims":{},'
    '"sitelinks":{"dewiki":{"site":"dewiki","title":"Universum","badges":[]},'
    '"enwiki":{"site":"enwiki","title":"Universe","badges":["Q17437796"]},'
    '"frwiki":{"site":"frwiki","title":"Univers","badges":[]}}},',
    '{"type":"item","id":"Q2","labels":{"en":{"language":"en","value":"enwiki"}},"sitelinks":{}},',
    '{"type":"property","id":"P31","datatype":"wikibase-item","labels":{"en":{"language":"en","value":"instance of"}}},',
    '{"type":"item","id":"Q3","sitelinks":{"jawiki":{"site":"jawiki","title":"生命","badges":[]}}},',
    '{"type":"item","id":"Q4","sitelinks":{"enwiki":{"site":"enwiki","title":"Death"',
    '{"type":"item","id":"Q5","sitelinks":{"enwiki":{"site":"enwiki","title":"Human","badges":[]}}}',
    "]",
]
WIKIS = {"enwiki": "en", "dewiki": "de"}


def _title(qid: str, lang: str, title: str, source: str, disambiguation: bool = False) -> dict[str, object]:
    return {"qid": qid, "lang": lang, "page_id": None, "title": title, "source": source,
            "is_disambiguation": disambiguation}


def test_wikidata_keeps_wanted_wikis_and_reports_a_malformed_line(tmp_path: Path) -> None:
    path = tmp_path / "latest-all.json.bz2"
    path.write_bytes(bz2.compress(("\n".join(ENTITIES) + "\n").encode("utf-8")))
    issues: list[dict] = []

    rows = list(iter_wikidata_sitelinks(path, WIKIS, on_issue=issues.append))

    assert rows == [
        _title("Q1", "en", "Universe", path.name),
        _title("Q1", "de", "Universum", path.name),
        _title("Q5", "en", "Human", path.name),
    ]
    assert all(tuple(row) == SITELINK_COLUMNS for row in rows)
    assert [(i["source"], i["position"]) for i in issues] == [(str(path), "line 6")]


def _claim(item: str) -> str:
    return ('{"mainsnak":{"snaktype":"value","property":"P31","datavalue":{"value":{"entity-type":"item",'
            f'"numeric-id":{item[1:]},"id":"{item}"}},"type":"wikibase-entityid"}}}},"type":"statement","rank":"normal"}}')


def test_wikidata_marks_sitelinks_of_disambiguation_items(tmp_path: Path) -> None:
    entities = [
        "[",
        # instance of human (Q5) and of Wikimedia disambiguation page (Q4167410): flagged in every wiki
        '{"type":"item","id":"Q10","claims":{"P31":[' + _claim("Q5") + "," + _claim("Q4167410") + "]},"
        '"sitelinks":{"enwiki":{"site":"enwiki","title":"Mercury","badges":[]},'
        '"dewiki":{"site":"dewiki","title":"Merkur","badges":[]}}},',
        # a statement without a value (somevalue) and a P31 of another class: not flagged
        '{"type":"item","id":"Q11","claims":{"P31":[{"mainsnak":{"snaktype":"somevalue","property":"P31"}},'
        + _claim("Q4022") + ']},"sitelinks":{"enwiki":{"site":"enwiki","title":"Velna","badges":[]}}},',
        # the class named in another property is not an instance-of statement
        '{"type":"item","id":"Q12","claims":{"P279":[' + _claim("Q4167410").replace("P31", "P279") + "]},"
        '"sitelinks":{"enwiki":{"site":"enwiki","title":"Dab","badges":[]}}}',
        "]",
    ]
    path = tmp_path / "latest-all.json"
    path.write_text("\n".join(entities) + "\n", encoding="utf-8")

    rows = list(iter_wikidata_sitelinks(path, WIKIS))

    assert rows == [
        _title("Q10", "en", "Mercury", path.name, True), _title("Q10", "de", "Merkur", path.name, True),
        _title("Q11", "en", "Velna", path.name), _title("Q12", "en", "Dab", path.name),
    ]


def test_page_props_disambiguation_property_marks_the_page(tmp_path: Path) -> None:
    rows_sql = (
        # page 30: the property, then its item (primary-key order); page 31: item only; page 32: the property only;
        # page 33: the property inside another property's value is no property; page 34: item, then (out of order) flag
        r"INSERT INTO `page_props` VALUES (30,'disambiguation','',NULL),(30,'wikibase_item','Q30',NULL),"
        r"(31,'wikibase_item','Q31',NULL),(32,'disambiguation','',NULL),"
        r"(33,'displaytitle','x\',\'disambiguation',NULL),(33,'wikibase_item','Q33',NULL),"
        r"(34,'wikibase_item','Q34',NULL),(34,'zz_disambiguation_late','',NULL),(35,'disambiguation','',NULL);"
        "\n"
        r"INSERT INTO `page_props` VALUES (34,'disambiguation','',NULL);"
        "\n"
    )
    path = tmp_path / "xxwiki-20240501-page_props.sql"
    path.write_text(SQL_HEAD + rows_sql + SQL_TAIL, encoding="utf-8")

    rows = list(iter_page_props_sitelinks(path, "en"))

    assert rows == [
        _link("Q30", 30, path.name, True), _link("Q31", 31, path.name), _link("Q33", 33, path.name),
        _link("Q34", 34, path.name),
        # flagged pages whose item row did not follow the flag: rows of their own, no QID
        _link(None, 32, path.name, True), _link(None, 34, path.name, True), _link(None, 35, path.name, True),
    ]


def test_wikidata_truncated_bz2_yields_complete_entities_then_raises(tmp_path: Path) -> None:
    # Multi-stream bz2 (as Wikidata publishes): the first stream is whole, the second is cut.
    first = bz2.compress(("\n".join(ENTITIES[:2]) + "\n").encode("utf-8"))
    second = bz2.compress(("\n".join(ENTITIES[6:]) + "\n").encode("utf-8"))
    path = tmp_path / "latest-all.json.bz2"
    path.write_bytes(first + second[: len(second) - 20])

    rows = []
    with pytest.raises(TruncatedInputError) as caught:
        for row in iter_wikidata_sitelinks(path, WIKIS):
            rows.append(row)

    assert [(row["qid"], row["title"]) for row in rows] == [("Q1", "Universe"), ("Q1", "Universum")]
    assert caught.value.source == str(path)
    assert caught.value.last_item == "Q1"


def test_wikidata_plain_file_without_closing_bracket_is_truncated(tmp_path: Path) -> None:
    path = tmp_path / "latest-all.json"
    path.write_text("\n".join(ENTITIES[:2]) + "\n", encoding="utf-8")

    with pytest.raises(TruncatedInputError) as caught:
        list(iter_wikidata_sitelinks(path, WIKIS))

    assert caught.value.position == "line 2"
    assert caught.value.last_item == "Q1"


def test_wikidata_file_that_does_not_open_the_entity_array_is_not_a_wikidata_dump(tmp_path: Path) -> None:
    path = tmp_path / "latest-all.json.bz2"
    path.write_bytes(bz2.compress(("\n".join(ENTITIES[1:]) + "\n").encode("utf-8")))  # the entities without their "["

    with pytest.raises(InputFormatError) as caught:
        list(iter_wikidata_sitelinks(path, WIKIS))

    assert not isinstance(caught.value, TruncatedInputError)
    assert (caught.value.position, caught.value.reason) == (
        "line 1", f"not a Wikidata entity dump: it does not open with a [ line ({ENTITIES[1][:60]!r})")
