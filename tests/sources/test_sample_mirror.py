"""The bundled sample mirror: every file readable with the standard library, linked by QIDs.

Expected values come from the YAML, read here with yaml.safe_load, and from the
page-id rule documented in wikis.yaml — never from the builder's own output.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tasks.errors import ConfigError
from tasks.sample.mirror import CONTENT_DIR, EARLIER_DATE, build_live_mirror, build_sample_mirror, load_content, main
from tasks.text.languages import all_rules

DATE = "20261101"
WIKIS = ("enwiki", "dewiki", "frwiki", "jawiki", "zhwiki", "swwiki")
NS = "{http://www.mediawiki.org/xml/export-0.11/}"
MARKUP = ("[[", "]]", "'''", "<ref", "</ref>", "{{", "}}")
LINK = re.compile(r"\[\[([^\[\]|]+)(?:\|([^\[\]]*))?\]\]")
SQL_ROW = re.compile(r"\((\d+),'((?:[^'\\]|\\.)*)','((?:[^'\\]|\\.)*)',(NULL|[-0-9.e]+)\)")
# facts that are years, which every language writes with the same four digits
YEAR_FACT = re.compile(r"year|founded|opened|established|completed|built|published|created|first_|start|electrified|automated|designated|recorded|charter|listing|since|fire|mentioned")


# --- what the YAML says, read independently of the builder ------------------


@dataclass
class WikiExpectation:
    lang: str
    site: dict
    articles: dict[str, str] = field(default_factory=dict)  # title → QID (not disambiguation)
    disambiguation: dict[str, str] = field(default_factory=dict)  # title → QID
    redirects: dict[str, str] = field(default_factory=dict)  # alias → target title
    page_ids: dict[str, int] = field(default_factory=dict)  # full title → page id
    bodies: dict[str, str] = field(default_factory=dict)  # title → body wikitext
    infoboxes: dict[str, str] = field(default_factory=dict)  # title → infobox template name
    other_titles: list[str] = field(default_factory=list)

    @property
    def content_titles(self) -> dict[str, str]:
        return {**self.articles, **self.disambiguation}


def _yaml(name: str) -> dict:
    return yaml.safe_load((CONTENT_DIR / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def site_yaml() -> dict:
    return _yaml("wikis.yaml")


@pytest.fixture(scope="module")
def topics() -> list[dict]:
    return [topic for path in sorted(CONTENT_DIR.glob("topics-*.yaml")) for topic in _yaml(path.name)["topics"]]


@pytest.fixture(scope="module")
def expected(site_yaml: dict, topics: list[dict]) -> dict[str, WikiExpectation]:
    result = {}
    for site in site_yaml["wikis"]:
        wiki = WikiExpectation(site["lang"], site)
        for topic in topics:
            article = topic["articles"].get(site["lang"])
            if article is None:
                continue
            base_id = site["page_id_base"] + 10 * (int(topic["qid"][1:]) - 9100000)
            target = wiki.disambiguation if topic["kind"] == "disambiguation" else wiki.articles
            target[article["title"]] = topic["qid"]
            wiki.page_ids[article["title"]] = base_id
            wiki.bodies[article["title"]] = article["body"]
            wiki.infoboxes[article["title"]] = site_yaml["kinds"][topic["kind"]]["infobox"].get(site["lang"], "")
            for offset, alias in enumerate(article.get("redirects", []), start=1):
                wiki.redirects[alias] = article["title"]
                wiki.page_ids[alias] = base_id + offset
        for number, other in enumerate(site["other_pages"]):
            title = f"{site['namespaces'][other['namespace']]}:{other['name']}"
            wiki.other_titles.append(title)
            wiki.page_ids[title] = site["page_id_base"] + 1000 + number
        result[site["dbname"]] = wiki
    return result


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory):
    return build_sample_mirror(tmp_path_factory.mktemp("sample") / "mirror", DATE)


# --- readers built on the standard library only -----------------------------


def read_cirrus(path: Path) -> list[tuple[dict, dict]]:
    lines = gzip.decompress(path.read_bytes()).decode("utf-8").splitlines()
    assert len(lines) % 2 == 0, f"{path.name}: odd number of bulk lines"
    pairs = []
    for action_line, source_line in zip(lines[::2], lines[1::2]):
        action, source = json.loads(action_line), json.loads(source_line)
        assert set(action) == {"index"}, f"expected an action line, got {action_line[:80]}"
        assert "index" not in source, "two action lines in a row"
        pairs.append((action, source))
    return pairs


def read_page_props(path: Path) -> list[tuple[int, str, str]]:
    rows = []
    for line in gzip.decompress(path.read_bytes()).decode("utf-8").splitlines():
        if line.startswith("INSERT INTO `page_props` VALUES "):
            body = line[len("INSERT INTO `page_props` VALUES ") :]
            assert body.endswith(";")
            matches = list(SQL_ROW.finditer(body))
            assert ",".join(m.group(0) for m in matches) + ";" == body, "rows do not cover the whole INSERT"
            rows += [(int(m.group(1)), m.group(2), re.sub(r"\\(.)", r"\1", m.group(3))) for m in matches]
    return rows


def read_sums(path: Path) -> dict[str, str]:
    sums = {}
    for line in path.read_text().splitlines():
        digest, name = line.split("  ", 1)
        sums[name] = digest
    return sums


def read_wikidata(path: Path) -> list[dict]:
    return json.loads(bz2.decompress(path.read_bytes()).decode("utf-8"))


def content_docs(mirror, wiki: str) -> dict[str, dict]:
    return {source["title"]: source for _, source in read_cirrus(mirror.cirrus_path(wiki))}


def xml_pages(mirror, wiki: str) -> list[ET.Element]:
    root = ET.fromstring(bz2.decompress(mirror.multistream_path(wiki).read_bytes()))
    return root.findall(f"{NS}page")


def page_text(page: ET.Element) -> str:
    return page.find(f"{NS}revision/{NS}text").text or ""


# --- layout -----------------------------------------------------------------


def test_layout_is_the_dumps_wikimedia_org_one(mirror) -> None:
    root = mirror.root
    for wiki in WIKIS:
        for name in (
            f"other/cirrussearch/{DATE}/{wiki}-{DATE}-cirrussearch-content.json.gz",
            f"{wiki}/{DATE}/{wiki}-{DATE}-pages-articles-multistream.xml.bz2",
            f"{wiki}/{DATE}/{wiki}-{DATE}-pages-articles-multistream-index.txt.bz2",
            f"{wiki}/{DATE}/{wiki}-{DATE}-page_props.sql.gz",
            f"{wiki}/{DATE}/dumpstatus.json",
            f"{wiki}/{DATE}/{wiki}-{DATE}-sha1sums.txt",
            f"{wiki}/{DATE}/{wiki}-{DATE}-md5sums.txt",
        ):
            assert (root / name).is_file(), name
    assert (root / f"other/cirrussearch/{DATE}/sha1sums.txt").is_file()
    assert (root / f"wikidatawiki/entities/{DATE}/wikidata-{DATE}-all.json.bz2").is_file()
    assert (root / f"wikidatawiki/entities/{DATE}/wikidata-{DATE}-md5sums.txt").is_file()
    assert mirror.cirrus_path("jawiki") == root / f"other/cirrussearch/{DATE}/jawiki-{DATE}-cirrussearch-content.json.gz"
    assert mirror.wikidata_path() == root / f"wikidatawiki/entities/{DATE}/wikidata-{DATE}-all.json.bz2"
    assert not list(root.rglob("*.tmp")), "temp files left behind"


def test_mirror_describes_languages_and_counts_from_the_yaml(mirror, expected) -> None:
    assert mirror.date == DATE
    assert mirror.langs == ("en", "de", "fr", "ja", "zh", "sw")
    assert dict(mirror.wikis) == {wiki: wiki[:2] for wiki in WIKIS}
    for wiki, exp in expected.items():
        counts = mirror.counts[wiki]
        assert (counts.articles, counts.redirects, counts.disambiguation, counts.other_namespaces) == (
            len(exp.articles),
            len(exp.redirects),
            len(exp.disambiguation),
            len(exp.other_titles),
        )
        assert counts.pages == len(exp.page_ids)
    # the brief's shape: 2 redirects, 1 disambiguation page and 1 other page per wiki
    assert all((c.redirects, c.disambiguation, c.other_namespaces) == (2, 1, 1) for c in mirror.counts.values())


# --- CirrusSearch -----------------------------------------------------------


@pytest.mark.parametrize("wiki", WIKIS)
def test_cirrus_content_dump_holds_the_main_namespace_pages(mirror, expected, wiki) -> None:
    exp = expected[wiki]
    pairs = read_cirrus(mirror.cirrus_path(wiki))
    docs = {}
    for action, source in pairs:
        assert action["index"]["_type"] == "page"
        assert int(action["index"]["_id"]) == exp.page_ids[source["title"]]
        docs[source["title"]] = source
    assert {title: doc["wikibase_item"] for title, doc in docs.items()} == exp.content_titles
    redirects_by_target: dict[str, list[str]] = {}
    for alias, target in exp.redirects.items():
        redirects_by_target.setdefault(target, []).append(alias)
    for title, doc in docs.items():
        assert doc["namespace"] == 0 and doc["language"] == exp.lang and doc["wiki"] == wiki
        assert sorted(r["title"] for r in doc["redirect"]) == sorted(redirects_by_target.get(title, []))
        assert all(r["namespace"] == 0 for r in doc["redirect"])
        assert doc["timestamp"].endswith("Z") and doc["create_timestamp"] < doc["timestamp"] < f"{DATE[:4]}-{DATE[4:6]}-{DATE[6:]}"
        assert doc["text"].startswith(doc["opening_text"])
        prefix = exp.site["namespaces"][10] + ":"
        assert doc["template"] and all(t.startswith(prefix) for t in doc["template"])
        assert isinstance(doc["incoming_links"], int) and doc["popularity_score"] > 0
    disambiguation = exp.site["disambiguation"]
    for title in exp.disambiguation:
        assert set(disambiguation["categories"]) <= set(docs[title]["category"])
        assert f"{exp.site['namespaces'][10]}:{disambiguation['template']}" in docs[title]["template"]
    for title in exp.articles:
        assert not set(disambiguation["categories"]) & set(docs[title]["category"])


@pytest.mark.parametrize("wiki", WIKIS)
def test_cirrus_text_is_the_visible_text_without_markup(mirror, expected, wiki) -> None:
    docs = content_docs(mirror, wiki)
    for title, body in expected[wiki].bodies.items():
        text = docs[title]["text"]
        assert not [m for m in MARKUP if m in text], f"{wiki} {title}: markup left in {text[:80]}"
        assert "\n" not in text
        for target, label in LINK.findall(body):
            assert (label or target) in text, f"{wiki} {title}: link text {label or target!r} missing"
        bold = re.search(r"'''(.+?)'''", body).group(1).strip("'")
        assert bold in text
        ref = re.search(r"<ref>(.+?)</ref>", body)
        if ref:
            assert ref.group(1).replace("''", "") not in text, "reference text leaked into the body text"


@pytest.fixture(scope="module")
def hand_docs(mirror) -> dict[str, dict[str, dict]]:
    return {wiki: content_docs(mirror, wiki) for wiki in ("enwiki", "jawiki", "frwiki")}


def test_plain_text_of_short_articles_matches_a_hand_rendering(hand_docs) -> None:
    """Plain text written out by hand from the YAML bodies."""
    assert hand_docs["enwiki"]["Brennmoor Athletic"]["text"] == (
        "Brennmoor Athletic is a football club from Brennmoor, founded in 1911 by workers of the town's glassworks. "
        "It plays in green and white at the Glassworks Ground, which holds 8,500 spectators. "
        "The club won the Velna League once, in 1979."
    )
    assert hand_docs["jawiki"]["ミラ・パーク"]["text"] == (
        "ミラ・パークは、タルスクにあるサッカー専用スタジアムで、FCタルスクの本拠地である。"
        "1931年にミラ川の右岸に開場し、収容人数は2万2000人。"
        "2006年から2008年にかけて改修が行われ、全席が屋根で覆われた。"
    )
    assert hand_docs["frwiki"]["Velna (homonymie)"]["text"] == (
        "Velna peut désigner : la Velna, fleuve de la région de Kelda ; "
        "la Symphonie Velna, symphonie no 3 de Jonas Halvar."
    )
    assert hand_docs["enwiki"]["Velna"]["category"] == ["Rivers of the Kelda region"]
    assert hand_docs["enwiki"]["Velna"]["heading"] == ["References"]


@pytest.mark.parametrize("wiki", WIKIS)
def test_cirrus_general_dump_holds_only_the_other_namespaces(mirror, expected, wiki) -> None:
    pairs = read_cirrus(mirror.cirrus_path(wiki, "general"))
    exp = expected[wiki]
    titles = [f"{source['namespace_text']}:{source['title']}" for _, source in pairs]
    assert titles == exp.other_titles
    assert all(source["namespace"] == 14 and "wikibase_item" not in source for _, source in pairs)


def test_cirrus_sha1sums_match_the_files(mirror) -> None:
    directory = mirror.cirrus_path("enwiki").parent
    sums = read_sums(directory / "sha1sums.txt")
    assert set(sums) == {p.name for p in directory.glob("*.json.gz")}
    assert len(sums) == 2 * len(WIKIS)
    for name, digest in sums.items():
        assert hashlib.sha1((directory / name).read_bytes()).hexdigest() == digest


# --- XML multistream --------------------------------------------------------


@pytest.mark.parametrize("wiki", WIKIS)
def test_multistream_decompresses_stream_by_stream_at_the_index_offsets(mirror, expected, wiki) -> None:
    data = mirror.multistream_path(wiki).read_bytes()
    index_lines = bz2.decompress(mirror.multistream_index_path(wiki).read_bytes()).decode("utf-8").splitlines()
    by_offset: dict[int, list[tuple[int, str]]] = {}
    for line in index_lines:
        offset, page_id, title = line.split(":", 2)
        by_offset.setdefault(int(offset), []).append((int(page_id), title))
    assert len(by_offset) >= 3, "several page streams expected"
    exp = expected[wiki]
    assert {title: page_id for pairs in by_offset.values() for page_id, title in pairs} == exp.page_ids

    header = bz2.BZ2Decompressor()
    head = header.decompress(data).decode("utf-8")
    assert header.eof and len(data) - len(header.unused_data) == min(by_offset)
    siteinfo = ET.fromstring(head + "</mediawiki>").find(f"{NS}siteinfo")
    assert siteinfo.findtext(f"{NS}dbname") == wiki
    names = {int(ns.get("key")): ns.text or "" for ns in siteinfo.iter(f"{NS}namespace")}
    assert names == {int(k): v for k, v in exp.site["namespaces"].items()}

    for offset, listed in by_offset.items():
        stream = bz2.BZ2Decompressor()
        block = stream.decompress(data[offset:]).decode("utf-8")
        assert stream.eof
        pages = ET.fromstring(f"<stream>{block}</stream>").findall("page")
        assert 0 < len(pages) <= 100
        assert [(int(p.findtext("id")), p.findtext("title")) for p in pages] == listed
        if offset == max(by_offset):
            assert bz2.decompress(stream.unused_data) == b"</mediawiki>\n"


@pytest.mark.parametrize("wiki", WIKIS)
def test_xml_pages_carry_redirects_namespaces_and_revision_fields(mirror, expected, wiki) -> None:
    exp = expected[wiki]
    pages = xml_pages(mirror, wiki)
    assert [int(p.findtext(f"{NS}id")) for p in pages] == sorted(exp.page_ids.values())
    for page in pages:
        title, text = page.findtext(f"{NS}title"), page_text(page)
        redirect = page.find(f"{NS}redirect")
        assert (redirect.get("title") if redirect is not None else None) == exp.redirects.get(title)
        assert int(page.findtext(f"{NS}ns")) == (14 if title in exp.other_titles else 0)
        revision = page.find(f"{NS}revision")
        assert revision.findtext(f"{NS}model") == "wikitext" and revision.findtext(f"{NS}format") == "text/x-wiki"
        text_element = revision.find(f"{NS}text")
        assert int(text_element.get("bytes")) == len(text.encode("utf-8"))
        assert text_element.get("{http://www.w3.org/XML/1998/namespace}space") == "preserve"
        assert revision.findtext(f"{NS}sha1") == base36_sha1(text)
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", revision.findtext(f"{NS}timestamp"))
        if title in exp.redirects:
            assert text.startswith(exp.site["redirect_magic_word"] + " [[")


def base36_sha1(text: str) -> str:
    number, digits = int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16), ""
    while number:
        number, digit = divmod(number, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[digit] + digits
    return digits.zfill(31)


@pytest.mark.parametrize("wiki", WIKIS)
def test_article_wikitext_has_realistic_markup_and_links_that_resolve(mirror, expected, wiki) -> None:
    exp = expected[wiki]
    category = exp.site["namespaces"][14]
    known = {*exp.content_titles, *exp.redirects}
    texts = {p.findtext(f"{NS}title"): page_text(p) for p in xml_pages(mirror, wiki)}
    for title in exp.articles:
        text = texts[title]
        assert text.startswith("{{" + exp.infoboxes[title] + "\n"), title
        assert "'''" in text, title
        assert "<ref>" in text and "</ref>" in text, title
        assert f"[[{category}:" in text, title
    for title in exp.disambiguation:
        assert "{{" + exp.site["disambiguation"]["template"] + "}}" in texts[title]
    for title in exp.content_titles:
        targets = [target for target, _ in LINK.findall(texts[title]) if not target.startswith(category + ":")]
        assert targets, f"{wiki} {title}: no links to other sample articles"
        for target in targets:
            assert target[:1].upper() + target[1:] in known, f"{wiki} {title}: link to unknown page {target!r}"


# --- page_props -------------------------------------------------------------


@pytest.mark.parametrize("wiki", WIKIS)
def test_page_props_link_page_ids_to_qids(mirror, expected, wiki) -> None:
    exp = expected[wiki]
    rows = read_page_props(mirror.page_props_path(wiki))
    items = {page: value for page, name, value in rows if name == "wikibase_item"}
    assert items == {exp.page_ids[title]: qid for title, qid in exp.content_titles.items()}
    disambiguation = {page for page, name, _ in rows if name == "disambiguation"}
    assert disambiguation == {exp.page_ids[title] for title in exp.disambiguation}
    assert {name for _, name, _ in rows} > {"wikibase_item", "page_image_free"}
    # an escaped quote in a value survives the round trip
    assert "The_Ferryman's_Daughter_first_edition.jpg" in {value for _, name, value in rows if name == "page_image_free"}
    assert rows == sorted(rows)


# --- dumpstatus and checksums -----------------------------------------------


@pytest.mark.parametrize("wiki", WIKIS)
def test_dumpstatus_and_sums_files_match_the_files(mirror, wiki) -> None:
    directory = mirror.dump_dir(wiki)
    status = json.loads((directory / "dumpstatus.json").read_text())
    assert status["version"] == "0.8"
    assert set(status["jobs"]) == {"articlesmultistreamdump", "pagepropstable"}
    listed = {}
    for job in status["jobs"].values():
        assert job["status"] == "done"
        assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", job["updated"])
        listed.update(job["files"])
    assert set(listed) == {
        mirror.multistream_path(wiki).name,
        mirror.multistream_index_path(wiki).name,
        mirror.page_props_path(wiki).name,
    }
    sha1sums = read_sums(directory / f"{wiki}-{DATE}-sha1sums.txt")
    md5sums = read_sums(directory / f"{wiki}-{DATE}-md5sums.txt")
    assert set(sha1sums) == set(md5sums) == set(listed)
    for name, entry in listed.items():
        data = (directory / name).read_bytes()
        assert entry["size"] == len(data)
        assert entry["url"] == f"/{wiki}/{DATE}/{name}"
        assert entry["sha1"] == sha1sums[name] == hashlib.sha1(data).hexdigest()
        assert entry["md5"] == md5sums[name] == hashlib.md5(data).hexdigest()


def test_a_newer_unfinished_dump_date_is_left_for_discovery_to_skip(mirror) -> None:
    (wiki, later), = mirror.in_progress.items()
    assert later > DATE
    status = json.loads((mirror.root / wiki / later / "dumpstatus.json").read_text())
    assert status["jobs"]["articlesmultistreamdump"]["status"] != "done"
    assert status["jobs"]["pagepropstable"]["status"] != "done"
    assert [p.name for p in (mirror.root / wiki / later).iterdir()] == ["dumpstatus.json"]


# --- Wikidata ---------------------------------------------------------------


def test_wikidata_dump_is_a_json_array_with_one_entity_per_line(mirror) -> None:
    path = mirror.wikidata_path()
    lines = bz2.decompress(path.read_bytes()).decode("utf-8").splitlines()
    assert lines[0] == "[" and lines[-1] == "]"
    entities = [json.loads(line.removesuffix(",")) for line in lines[1:-1]]
    assert all(line.endswith(",") for line in lines[1:-2]) and not lines[-2].endswith(",")
    assert entities == read_wikidata(path)
    md5sums = read_sums(path.parent / f"wikidata-{DATE}-md5sums.txt")
    assert md5sums == {path.name: hashlib.md5(path.read_bytes()).hexdigest()}


def test_wikidata_sitelinks_match_the_yaml_and_mark_disambiguation(mirror, topics, site_yaml) -> None:
    entities = {entity["id"]: entity for entity in read_wikidata(mirror.wikidata_path())}
    dbname = {site["lang"]: site["dbname"] for site in site_yaml["wikis"]}
    for topic in topics:
        entity = entities[topic["qid"]]
        assert entity["type"] == "item"
        sitelinks = {wiki: link["title"] for wiki, link in entity["sitelinks"].items() if wiki in WIKIS}
        assert sitelinks == {dbname[lang]: article["title"] for lang, article in topic["articles"].items()}
        assert all(link["site"] == wiki and link["badges"] == [] for wiki, link in entity["sitelinks"].items())
        classes = [c["mainsnak"]["datavalue"]["value"]["id"] for c in entity["claims"].get("P31", [])]
        assert ("Q4167410" in classes) == (topic["kind"] == "disambiguation")
        for lang, label in entity["labels"].items():
            assert label == {"language": lang, "value": label["value"]}
    for extra in site_yaml["extra_items"]:
        entity = entities[extra["id"]]
        assert entity["sitelinks"] and not set(entity["sitelinks"]) & set(WIKIS)
    assert any(entity["type"] == "property" and "sitelinks" not in entity for entity in entities.values())


def test_the_same_qid_links_cirrus_page_props_and_wikidata(mirror, expected) -> None:
    entities = read_wikidata(mirror.wikidata_path())
    for wiki, exp in expected.items():
        cirrus = {int(a["index"]["_id"]): s["wikibase_item"] for a, s in read_cirrus(mirror.cirrus_path(wiki))}
        props = {page: value for page, name, value in read_page_props(mirror.page_props_path(wiki)) if name == "wikibase_item"}
        wikidata = {
            exp.page_ids[entity["sitelinks"][wiki]["title"]]: entity["id"]
            for entity in entities
            if wiki in entity.get("sitelinks", {})
        }
        assert cirrus == props == wikidata
        assert len(cirrus) == len(exp.content_titles)


# --- the content itself -----------------------------------------------------


def test_topics_cover_all_languages_with_a_few_local_ones(topics) -> None:
    spread = [len(topic["articles"]) for topic in topics]
    assert len(topics) >= 34
    assert spread.count(6) >= 20  # the five original languages and Swahili
    # Swahili covers exactly the topics every original language has (a later language, a subset of the world)
    everywhere = {topic["qid"] for topic in topics if {"en", "de", "fr", "ja", "zh"} <= set(topic["articles"])}
    assert {topic["qid"] for topic in topics if "sw" in topic["articles"]} == everywhere
    assert 2 <= sum(1 for n in spread if n in (2, 3))
    local = [next(iter(topic["articles"])) for topic in topics if len(topic["articles"]) == 1]
    assert len(local) == 6 and set(local) == {"en", "de", "fr", "ja", "zh"}
    qids = [topic["qid"] for topic in topics]
    assert len(set(qids)) == len(qids) and all(re.fullmatch(r"Q91000\d\d", q) for q in qids)


def test_single_language_topics_have_exactly_one_sample_sitelink(mirror, topics) -> None:
    entities = {entity["id"]: entity for entity in read_wikidata(mirror.wikidata_path())}
    local = [topic["qid"] for topic in topics if len(topic["articles"]) == 1]
    for qid in local:
        assert len(set(entities[qid]["sitelinks"]) & set(WIKIS)) == 1


def test_every_language_states_the_same_years(mirror, topics, site_yaml) -> None:
    texts = {site["lang"]: content_docs(mirror, site["dbname"]) for site in site_yaml["wikis"]}
    for topic in topics:
        years = [v for k, v in topic.get("facts", {}).items() if YEAR_FACT.search(k) and isinstance(v, int) and 1000 <= v <= 2100]
        for lang, article in topic["articles"].items():
            text = texts[lang][article["title"]]["text"]
            missing = [year for year in years if str(year) not in text]
            assert not missing, f"{topic['qid']} {lang}: years {missing} not in the text"


@pytest.mark.parametrize("lang", ["en", "de", "fr", "ja", "zh", "sw"])
def test_disambiguation_markers_are_known_to_the_language_rules(site_yaml, lang) -> None:
    rule = all_rules()[lang]
    site = next(site for site in site_yaml["wikis"] if site["lang"] == lang)
    markers = {marker.casefold() for marker in rule.disambiguation_markers}
    names = {site["disambiguation"]["template"], *site["disambiguation"]["categories"]}
    assert {name.casefold() for name in names} & markers


# --- reproducibility and errors ---------------------------------------------


def test_two_builds_are_byte_identical(mirror, tmp_path) -> None:
    assert main([str(tmp_path / "again"), "--date", DATE]) == 0
    first = {p.relative_to(mirror.root): p.read_bytes() for p in mirror.root.rglob("*") if p.is_file()}
    second = {p.relative_to(tmp_path / "again"): p.read_bytes() for p in (tmp_path / "again").rglob("*") if p.is_file()}
    assert first.keys() == second.keys()
    assert [name for name in first if first[name] != second[name]] == []


def test_a_bad_date_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="YYYYMMDD"):
        build_sample_mirror(tmp_path, "2026-11-01")
    assert not any(tmp_path.iterdir())


def test_a_content_error_names_the_file_and_the_topic(tmp_path) -> None:
    shutil.copytree(CONTENT_DIR, tmp_path / "articles")
    broken = tmp_path / "articles" / "topics-sports.yaml"
    broken.write_text(broken.read_text(encoding="utf-8").replace("kind: rivalry", "kind: feud"), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"topics-sports\.yaml: Q9100025: unknown kind 'feud'"):
        load_content(tmp_path / "articles")


def test_a_duplicate_title_is_refused(tmp_path) -> None:
    shutil.copytree(CONTENT_DIR, tmp_path / "articles")
    broken = tmp_path / "articles" / "topics-science.yaml"
    broken.write_text(broken.read_text(encoding="utf-8").replace("redirects: [Tarsk University]", "redirects: [Velna]"), encoding="utf-8")
    with pytest.raises(ConfigError, match="enwiki has several pages titled Velna"):
        load_content(tmp_path / "articles")


def test_the_live_mirror_s_later_dump_adds_every_second_local_topic_and_the_sports_topics(tmp_path: Path) -> None:
    mirror, added = build_live_mirror(tmp_path / "mirror")
    local = sorted(t["qid"] for t in _yaml("topics-local.yaml")["topics"] if t["kind"] != "disambiguation")
    sports = [t["qid"] for t in _yaml("topics-sports.yaml")["topics"]]
    assert added == sorted(local[1::2] + sports)  # every second local topic, in QID order, and the whole league

    def items(date: str) -> set[str]:
        root = tmp_path / "mirror" / "other" / "cirrussearch" / date
        return {source.get("wikibase_item") for path in root.glob("*-content.json.gz") for _, source in read_cirrus(path)}

    assert mirror.date == "20261101"
    assert items("20261101") - items(EARLIER_DATE) == set(added)  # nothing else is new, nothing went away
    assert items(EARLIER_DATE) <= items("20261101")
