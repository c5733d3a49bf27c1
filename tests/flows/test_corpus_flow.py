"""The corpus flow on the bundled sample mirror: counts, QID links, cache hits, backfill, force, faults."""

from __future__ import annotations

import bz2
import gzip
import json
import shutil
import zlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli import app
from flows.corpus import CorpusParams, corpus_flow
from tasks.dumps import ingest
from tasks.dumps.ingest import SitelinkMethod, ingest_documents, ingest_sitelinks
from tasks.dumps.xml_pages import iter_xml_pages
from tasks.errors import InputFormatError, TruncatedInputError
from tasks.sample.mirror import SampleMirror, build_sample_mirror, load_content
from tasks.stage import StageOutput
from tasks.text.languages import reload_rules
from tasks.warehouse.db import Warehouse

pytestmark = pytest.mark.usefixtures("prefect_api")
LANGS = ["en", "de", "fr", "ja"]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> SampleMirror:
    return build_sample_mirror(tmp_path_factory.mktemp("mirror"))


def _expected_qids() -> dict[str, dict[str, str]]:
    """lang → title → QID, from the sample's YAML (the source of truth, not a parser)."""
    truth: dict[str, dict[str, str]] = {}
    for topic in load_content().topics:
        for lang, article in topic.articles.items():
            truth.setdefault(lang, {})[article.title] = topic.qid
    return truth


def _run(mirror: SampleMirror, home: Path, langs: list[str], **extra: object) -> list[dict]:
    return corpus_flow(CorpusParams(langs=langs, source=mirror.root.as_uri(), home=str(home), progress=False, **extra))


def _statuses(home: Path, run_index: int) -> dict[tuple[str, str], str]:
    """(stage, cell) → status of the artifacts rows written by the n-th flow run of this home."""
    with Warehouse(home) as wh:
        run_id = wh.query("SELECT run_id FROM runs ORDER BY started_at")[run_index][0]
        return {(s, c): st for s, c, st in wh.query("SELECT stage, cell, status FROM artifacts WHERE run_id = ?", [run_id])}


@pytest.fixture(scope="module")
def cirrus_home(mirror: SampleMirror, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("cirrus-home")
    _run(mirror, home, LANGS)
    return home


def test_documents_match_the_sample_counts(mirror: SampleMirror, cirrus_home: Path) -> None:
    with Warehouse(cirrus_home) as wh:
        got = {lang: (a, r, d) for lang, a, r, d in wh.query(
            "SELECT lang, count(*) FILTER (WHERE NOT is_redirect AND NOT is_disambiguation),"
            " count(*) FILTER (WHERE is_redirect), count(*) FILTER (WHERE is_disambiguation) FROM documents GROUP BY lang")}
    expected = {lang: (mirror.counts[f"{lang}wiki"].articles, mirror.counts[f"{lang}wiki"].redirects,
                       mirror.counts[f"{lang}wiki"].disambiguation) for lang in LANGS}
    assert got == expected


def test_sitelinks_carry_the_sample_qids_across_languages(cirrus_home: Path) -> None:
    truth = _expected_qids()
    with Warehouse(cirrus_home) as wh:
        links = {(lang, title): qid for qid, lang, title in wh.query("SELECT qid, lang, title FROM sitelinks")}
        shared = wh.scalar("SELECT count(*) FROM (SELECT qid FROM sitelinks WHERE lang IN ('en', 'ja')"
                           " GROUP BY qid HAVING count(DISTINCT lang) = 2)")
    for lang in LANGS:
        for title, qid in truth[lang].items():
            assert links[(lang, title)] == qid
    topics_in_both = sum(1 for t in load_content().topics if {"en", "ja"} <= set(t.articles))
    assert shared == topics_in_both


def test_downloads_are_verified_against_published_checksums(cirrus_home: Path) -> None:
    with Warehouse(cirrus_home) as wh:
        rows = wh.query("SELECT lang, kind, verified FROM dumps ORDER BY lang")
    assert rows == [(lang, "cirrus", True) for lang in sorted(LANGS)]


def test_the_run_is_recorded_in_the_warehouse_and_not_in_mlflow(cirrus_home: Path) -> None:
    """An ingest used no model: its parameters, code version and cells are warehouse rows; MLflow is left alone."""
    with Warehouse(cirrus_home) as wh:
        mlflow_run_id, params, code, run_id = wh.query(
            "SELECT mlflow_run_id, params, code_version, run_id FROM runs ORDER BY started_at LIMIT 1")[0]
        cells = wh.query("SELECT stage, count(*), min(seconds) FROM artifacts WHERE run_id = ? AND status = 'computed'"
                         " GROUP BY stage ORDER BY stage", [run_id])
        en_docs = wh.scalar("SELECT count(*) FROM documents WHERE lang = 'en'")
        documents = wh.scalar("SELECT rows FROM stage_runs WHERE stage = 'documents' AND cell = 'en'")
    assert json.loads(params)["langs"] == LANGS and code
    assert mlflow_run_id is None and not (cirrus_home / "mlflow.db").exists()
    # download, documents, sitelinks and appearance, once per language, each timed
    assert [(stage, count) for stage, count, _ in cells] == [
        (stage, len(LANGS)) for stage in sorted(("appearance", "documents", "download", "sitelinks"))]
    assert all(seconds > 0 for _, _, seconds in cells)
    assert documents == en_docs


def test_rerun_is_all_cache_hits_and_backfill_computes_only_the_new_language(mirror: SampleMirror, cirrus_home: Path) -> None:
    _run(mirror, cirrus_home, LANGS)
    assert set(_statuses(cirrus_home, 1).values()) == {"cached"}
    assert len(_statuses(cirrus_home, 1)) == 4 * len(LANGS)  # download, documents, appearance, sitelinks
    _run(mirror, cirrus_home, LANGS + ["zh"])
    backfill = _statuses(cirrus_home, 2)
    assert {k for k, v in backfill.items() if v == "computed"} == {("download", "zh"), ("documents", "zh"),
                                                                      ("appearance", "zh"), ("sitelinks", "zh")}
    assert {v for k, v in backfill.items() if k[1] != "zh"} == {"cached"}


def test_force_recomputes_the_stage_and_its_descendants_only(mirror: SampleMirror, tmp_path: Path) -> None:
    _run(mirror, tmp_path, ["en"])
    _run(mirror, tmp_path, ["en"], force=["documents"])
    assert _statuses(tmp_path, 1) == {("download", "en"): "cached", ("documents", "en"): "computed",
                                      ("appearance", "en"): "computed", ("sitelinks", "en"): "computed"}


def test_xml_multistream_on_dask_with_page_props_gives_the_same_qids(
        mirror: SampleMirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BABELBENCH_COMPUTE", "dask")
    monkeypatch.setattr(ingest, "CHUNK_BYTES", 2_000)  # several byte ranges per file → several Dask units
    rows = _run(mirror, tmp_path, ["en", "ja"], kind="xml")
    assert {r["status"] for r in rows} == {"computed"}
    truth = _expected_qids()
    with Warehouse(tmp_path) as wh:
        got = {(lang, title): qid for lang, title, qid in wh.query(
            "SELECT lang, title, qid FROM documents WHERE NOT is_redirect")}
        methods = {json.loads(c)["method"] for (c,) in wh.query("SELECT config FROM artifacts WHERE stage = 'sitelinks'")}
        units = wh.scalar("SELECT count(*) FROM lake_shards WHERE table_name = 'documents_raw' AND cell = 'en'")
    assert got == {(lang, title): qid for lang in ["en", "ja"] for title, qid in truth[lang].items()}
    assert methods == {"page_props"}
    assert units > 1


@pytest.mark.parametrize(("kind", "sitelinks"), [("xml", "page_props"), ("cirrus", "wikidata")])
def test_disambiguation_pages_are_found_without_the_wikis_template_names(
        mirror: SampleMirror, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, sitelinks: str) -> None:
    # the home's rules know no template of frwiki's: only the page property or the Wikidata class can tell
    (tmp_path / "languages.csv").write_text("lang,disambiguation_markers\nfr,No such template\n", encoding="utf-8")
    monkeypatch.setenv("BABELBENCH_HOME", str(tmp_path))
    try:
        _run(mirror, tmp_path, ["fr"], kind=kind, sitelinks=sitelinks)  # the flow run reads its home's rules
    finally:
        monkeypatch.undo()
        reload_rules()  # later tests in this process see the built-in rules again
    with Warehouse(tmp_path) as wh:
        by_parser = wh.scalar("SELECT count(*) FROM documents_raw WHERE is_disambiguation")
        flagged = wh.scalar("SELECT count(*) FROM documents WHERE is_disambiguation")
        articles = wh.scalar("SELECT count(*) FROM documents WHERE NOT is_redirect AND NOT is_disambiguation")
    counts = mirror.counts["frwiki"]
    assert by_parser == 0  # the sample's pages use the template, which the parser no longer recognises
    assert (flagged, articles) == (counts.disambiguation, counts.articles)


def test_sitelinks_from_the_wikidata_dump_resolve_page_ids(mirror: SampleMirror, tmp_path: Path) -> None:
    _run(mirror, tmp_path, ["de", "zh"], sitelinks="wikidata")
    with Warehouse(tmp_path) as wh:
        from_wikidata = set(wh.query("SELECT qid, lang, page_id FROM sitelinks"))
        from_cirrus = set(wh.query("SELECT qid, lang, page_id FROM documents WHERE qid IS NOT NULL AND NOT is_redirect"))
        download_cells = {c for (c,) in wh.query("SELECT cell FROM artifacts WHERE stage = 'download'")}
    assert from_wikidata == from_cirrus and len(from_wikidata) > 50
    assert download_cells == {"de", "zh", "wikidata"}


def test_a_checksum_mismatch_fails_that_language_only_and_registers_nothing(
        mirror: SampleMirror, tmp_path: Path) -> None:
    broken = tmp_path / "broken-mirror"
    shutil.copytree(mirror.root, broken)
    cirrus = SampleMirror(broken, mirror.date, mirror.langs, mirror.wikis, mirror.counts, mirror.in_progress).cirrus_path("frwiki")
    cirrus.write_bytes(cirrus.read_bytes()[:-10] + b"corrupted!")
    home = tmp_path / "home"
    rows = corpus_flow(CorpusParams(langs=["en", "fr"], source=broken.as_uri(), home=str(home), progress=False))
    by_cell = {(r["stage"], r["cell"]): r for r in rows}
    assert by_cell[("download", "fr")]["status"] == "failed"
    assert "checksum mismatch" in by_cell[("download", "fr")]["message"]
    assert {by_cell[(s, "en")]["status"] for s in ("download", "documents", "sitelinks")} == {"computed"}
    assert by_cell[("documents", "fr")]["status"] == "failed"
    with Warehouse(home) as wh:
        assert wh.query("SELECT lang FROM dumps") == [("en",)]
        assert wh.scalar("SELECT count(*) FROM documents WHERE lang = 'fr'") == 0
        status, message = wh.query("SELECT status, message FROM runs")[0]
    assert status == "failed" and "download[fr]" in message
    assert not list((home / "dumps" / "frwiki").rglob("*.json.gz"))


# -- bad input: which cell fails, with what reason, where it shows ----------------------------------------
def _printed_table(stdout: str) -> dict[tuple[str, str], dict[str, str]]:
    """The stage table the CLI printed, (stage, cell) → column → text, cut at the header's column starts."""
    lines = stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.split()[:2] == ["stage", "cell"])
    header = lines[first]
    names = header.split()
    starts = [header.index(f" {name}") + 1 if i else 0 for i, name in enumerate(names)]
    table = {}
    for line in lines[first + 1:]:
        columns = {name: line[start:end].strip() for name, start, end in zip(names, starts, [*starts[1:], None])}
        table[(columns["stage"], columns["cell"])] = columns
    return table


def test_cli_fails_a_corrupt_file_and_a_missing_dump_in_their_own_rows(
        mirror: SampleMirror, tmp_path: Path, home: Path) -> None:
    source = tmp_path / "dumps"
    source.mkdir()
    shutil.copy(mirror.cirrus_path("enwiki"), source)
    fr = source / mirror.cirrus_path("frwiki").name
    fr.write_bytes(gzip.decompress(mirror.cirrus_path("frwiki").read_bytes()))  # fr's name, but its plain JSON lines, not gzip
    # and ja has no file at all

    result = CliRunner().invoke(app, ["--home", str(home), "corpus", "ingest", "--lang", "en,fr,ja", "--source", str(source)])

    iso_date = f"{mirror.date[:4]}-{mirror.date[4:6]}-{mirror.date[6:]}"
    fr_error = f"InputFormatError: {fr} at byte 0: not a gz file: the suffix says gz but the content starts like plain"
    ja_error = f"ConfigError: --source {source}: no CirrusSearch or XML dump named jawiki-… found"
    en = mirror.counts["enwiki"]
    en_articles = en.articles + en.disambiguation  # main-namespace pages that are not redirects
    assert result.exit_code == 1, result.output
    printed = {cell: (row["status"], row["message"]) for cell, row in _printed_table(result.stdout).items()}
    assert printed == {
        ("download", "en"): ("computed", ""), ("documents", "en"): ("computed", ""), ("sitelinks", "en"): ("computed", ""),
        ("appearance", "en"): ("computed", f"earliest dump: {en_articles} articles dated on or before {iso_date}"),
        ("download", "fr"): ("computed", ""), ("documents", "fr"): ("failed", fr_error),
        ("sitelinks", "fr"): ("failed", f"not run: documents[fr] failed: {fr_error}"),
        ("appearance", "fr"): ("failed", f"not run: documents[fr] failed: {fr_error}"),
        ("download", "ja"): ("failed", ja_error),
        ("documents", "ja"): ("failed", f"not run: download[ja] failed: {ja_error}"),
        ("appearance", "ja"): ("failed", f"not run: download[ja] failed: {ja_error}"),
        ("sitelinks", "ja"): ("failed", f"not run: download[ja] failed: {ja_error}"),
    }
    with Warehouse(home) as wh:
        artifacts = set(wh.query("SELECT stage, cell, status, message FROM artifacts"))
        documents = dict(wh.query("SELECT lang, count(*) FROM documents GROUP BY lang"))
        run_status, run_message = wh.query("SELECT status, message FROM runs")[0]
    assert artifacts == {
        ("download", "en", "computed", None), ("documents", "en", "computed", None), ("sitelinks", "en", "computed", None),
        ("appearance", "en", "computed", f"earliest dump: {en_articles} articles dated on or before {iso_date}"),
        ("download", "fr", "computed", None), ("documents", "fr", "failed", fr_error), ("download", "ja", "failed", ja_error),
    }
    assert documents == {"en": en.articles + en.redirects + en.disambiguation}
    assert run_status == "failed"
    assert f"documents[fr]: {fr_error}" in run_message and f"download[ja]: {ja_error}" in run_message


def test_a_dump_missing_on_the_mirror_fails_its_download_and_names_it_downstream(
        mirror: SampleMirror, tmp_path: Path) -> None:
    broken = tmp_path / "mirror"
    shutil.copytree(mirror.root, broken)
    mirror_of_broken = SampleMirror(broken, mirror.date, mirror.langs, mirror.wikis, mirror.counts, mirror.in_progress)
    mirror_of_broken.wikidata_path().unlink()  # and kowiki was never on the sample mirror
    base, date = broken.as_uri(), mirror.date
    iso_date = f"{date[:4]}-{date[4:6]}-{date[6:]}"
    de = mirror.counts["dewiki"]

    rows = corpus_flow(CorpusParams(langs=["de", "ko"], source=base, home=str(tmp_path / "home"), sitelinks="wikidata",
                                    progress=False))

    wikidata_error = (
        f"PermanentDownloadError: {base}/wikidatawiki/entities: no complete wikidata entity dump among 1 date(s) "
        f"({date} to {date}; newest {date}: {base}/wikidatawiki/entities/{date} has no wikidata-{date}-all.json.bz2); "
        "check the wiki name, wait for a running dump to finish, or use another mirror")
    ko_error = (
        f"PermanentDownloadError: {base}/other/cirrussearch: no complete cirrus dump of kowiki among 1 date(s) "
        f"({date} to {date}; newest {date}: {base}/other/cirrussearch/{date} has no kowiki-{date}-cirrussearch-content.json.gz); "
        "check the wiki name, wait for a running dump to finish, or use another mirror")
    assert {(r["stage"], r["cell"]): (r["status"], r["message"]) for r in rows} == {
        ("download", "de"): ("computed", ""), ("documents", "de"): ("computed", ""),
        ("appearance", "de"): ("computed", f"earliest dump: {de.articles + de.disambiguation} articles dated on or before {iso_date}"),
        ("sitelinks", "de"): ("failed", f"not run: download[wikidata] failed: {wikidata_error}"),
        ("download", "ko"): ("failed", ko_error),
        ("documents", "ko"): ("failed", f"not run: download[ko] failed: {ko_error}"),
        ("appearance", "ko"): ("failed", f"not run: download[ko] failed: {ko_error}"),
        ("sitelinks", "ko"): ("failed", f"not run: download[ko] failed: {ko_error}"),
        ("download", "wikidata"): ("failed", wikidata_error),
    }
    with Warehouse(tmp_path / "home") as wh:
        failed = {(stage, cell): (message, json.loads(config)) for stage, cell, message, config in wh.query(
            "SELECT stage, cell, message, config FROM artifacts WHERE status = 'failed'")}
    assert failed == {
        ("download", "ko"): (ko_error, {"source": base, "wiki": "kowiki", "kind": None, "date": None, "page_props": False}),
        ("download", "wikidata"): (wikidata_error, {"source": base, "wiki": "wikidatawiki", "kind": "wikidata", "date": None,
                                                    "page_props": False}),
    }


# The policy of tasks.dumps.ingest.settle_breaks, stage by stage: a file cut short keeps what came before the
# cut and says so; a file that is not its format, or is corrupt, fails the cell and keeps nothing.
PAGES = [(1, "Alpha"), (2, "Beta"), (3, "Gamma")]
CIRRUS = "".join(json.dumps({"index": {"_id": str(i)}}) + "\n" + json.dumps({"title": t, "text": f"{t} text.", "namespace": 0}) + "\n"
                 for i, t in PAGES).encode()
XML_HEAD = '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/">'  # 61 characters: errors quote the first 60
XML = (XML_HEAD + "\n"
       '<siteinfo><dbname>enwiki</dbname><namespaces><namespace key="0" /></namespaces></siteinfo>\n'
       + "".join(f"<page><title>{t}</title><ns>0</ns><id>{i}</id><revision><id>{i}0</id>"
                 f"<timestamp>2024-05-01T10:00:00Z</timestamp><text>{t} text.</text></revision></page>\n" for i, t in PAGES)
       + "</mediawiki>\n").encode()
CIRRUS_NAME = "enwiki-20240501-cirrussearch-content.json"
XML_NAME = "enwiki-20240501-pages-articles.xml"
GAMMA_LINE = CIRRUS.index(b'{"index": {"_id": "3"}}')  # where Gamma's action line starts: line 5 of the dump
GAMMA_TEXT = XML.index(b"Gamma text.")  # inside Gamma's <text>, on line 5 of the XML
GAMMA_COLUMN = GAMMA_TEXT - XML.rindex(b"\n", 0, GAMMA_TEXT) - 1
FINGERPRINT = "0" * 64


def _documents(home: Path, files: dict[str, Path]) -> tuple[StageOutput, list[str]]:
    """Ingest en's documents from ``files``: the stage output and the titles that became the cell's content."""
    with Warehouse(home) as wh:
        output = ingest_documents(wh, "en", files, FINGERPRINT, max_docs=None)
        titles = [t for (t,) in wh.query("SELECT title FROM documents_raw WHERE lang = 'en' ORDER BY page_id")]
    return output, titles


def _gzip_crc_broken(data: bytes) -> bytes:
    broken = bytearray(gzip.compress(data, mtime=0))
    broken[-8:-4] = bytes(4)  # the member's CRC-32, checked only after all its data was handed over
    return bytes(broken)


@pytest.mark.parametrize(("role", "name", "content", "position", "reason"), [
    ("cirrus", CIRRUS_NAME + ".gz", CIRRUS, "byte 0", "not a gz file: the suffix says gz but the content starts like plain"),
    ("cirrus", CIRRUS_NAME + ".gz", _gzip_crc_broken(CIRRUS), f"decompressed byte {len(CIRRUS)}",
     f"corrupt compressed data (CRC check failed 0x0 != {zlib.crc32(CIRRUS):#x})"),
    ("cirrus", CIRRUS_NAME, XML, "line 1",
     f"not a CirrusSearch bulk dump: the first line is not an {{\"index\": …}} action line ({XML_HEAD[:60]!r})"),
    ("xml", XML_NAME + ".bz2", XML, "byte 0", "not a bz2 file: the suffix says bz2 but the content starts like plain"),
    ("xml", XML_NAME, CIRRUS, "line 1, column 0 (decompressed byte 0)", "malformed XML (not well-formed (invalid token))"),
    ("xml", XML_NAME, b"<html><body>404 Not Found</body></html>\n", "line 1, column 0 (decompressed byte 0)",
     "not a MediaWiki XML dump: the root element is <html>, not <mediawiki>"),
    ("xml", XML_NAME + ".bz2", b"", "byte 0", "the file is empty"),
])
def test_a_file_that_is_not_its_format_fails_the_documents_cell_and_keeps_nothing(
        home: Path, tmp_path: Path, role: str, name: str, content: bytes, position: str, reason: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)

    with pytest.raises(InputFormatError) as caught:
        _documents(home, {role: path})

    assert (caught.value.source, caught.value.position, caught.value.reason) == (str(path), position, reason)
    assert not isinstance(caught.value, TruncatedInputError)
    with Warehouse(home) as wh:
        assert wh.scalar("SELECT count(*) FROM documents_raw") == 0


@pytest.mark.parametrize(("role", "name", "content", "position", "reason"), [
    # Two gzip members, the second cut right after its 10-byte header: a download killed part-way.
    ("cirrus", CIRRUS_NAME + ".gz",
     gzip.compress(CIRRUS[:GAMMA_LINE], mtime=0) + gzip.compress(CIRRUS[GAMMA_LINE:], mtime=0)[:10],
     f"line 5; decompressed byte {GAMMA_LINE}",
     "truncated: compressed stream ends early (Compressed file ended before the end-of-stream marker was reached)"),
    ("xml", XML_NAME, XML[:GAMMA_TEXT],
     f"line 5, column {GAMMA_COLUMN} (decompressed byte {GAMMA_TEXT})",
     "truncated: input ends inside page 'Gamma' (no element found)"),
])
def test_a_cut_file_keeps_the_records_before_the_cut_and_says_so(
        home: Path, tmp_path: Path, role: str, name: str, content: bytes, position: str, reason: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)

    output, titles = _documents(home, {role: path})

    assert (output.rows, titles) == (2, ["Alpha", "Beta"])
    assert [(i["position"], i["reason"]) for i in output.issues] == [(position, reason)]
    assert output.message == f"{reason} ({name} at {position})"


def test_a_cut_with_nothing_before_it_fails_the_cell(home: Path, tmp_path: Path) -> None:
    path = tmp_path / (CIRRUS_NAME + ".gz")
    path.write_bytes(gzip.compress(CIRRUS, mtime=0)[:10])  # the gzip header only

    with pytest.raises(TruncatedInputError) as caught:
        _documents(home, {"cirrus": path})

    assert (caught.value.position, caught.value.reason) == (
        "line 1; decompressed byte 0", "compressed stream ends early (Compressed file ended before the end-of-stream "
        "marker was reached); nothing could be kept from before the cut")


def test_skipped_items_are_counted_in_the_stage_message(home: Path, tmp_path: Path) -> None:
    path = tmp_path / CIRRUS_NAME
    lines = CIRRUS.split(b"\n")
    path.write_bytes(b"\n".join([*lines[:3], b'{"title": "Beta", "text": "brok', *lines[4:]]))

    output, titles = _documents(home, {"cirrus": path})

    assert titles == ["Alpha", "Gamma"]
    assert output.message == ("1 item(s) skipped, see ingest_issues; first: malformed JSON (unexpected end of data: "
                              f"line 1 column 32 (char 31)) ({CIRRUS_NAME} at line 4)")


@pytest.mark.parametrize(("extra", "reason"), [
    (0, "input ends between pages, without the dump's closing </mediawiki>"),
    (50, "byte range ends at {cut}, inside this stream"),
])
def test_a_cut_multistream_dump_keeps_the_streams_before_the_cut(
        mirror: SampleMirror, home: Path, tmp_path: Path, extra: int, reason: str) -> None:
    source, index = mirror.multistream_path("enwiki"), mirror.multistream_index_path("enwiki")
    entries = [line.split(":", 2) for line in bz2.decompress(index.read_bytes()).decode().splitlines()]
    offsets = sorted({int(offset) for offset, _, _ in entries})
    cut = offsets[3] + extra  # three page streams whole; the fourth missing (extra 0) or begun (extra 50)
    xml = tmp_path / source.name
    xml.write_bytes(source.read_bytes()[:cut])
    main_namespace = {row["page_id"] for row in iter_xml_pages(source, "en")}
    before_cut = {int(page) for offset, page, _ in entries if int(offset) < offsets[3]}

    output, _ = _documents(home, {"xml": xml, "xml_index": index})

    with Warehouse(home) as wh:
        kept = {page for (page,) in wh.query("SELECT page_id FROM documents_raw WHERE lang = 'en'")}
    assert kept == before_cut & main_namespace and kept
    assert [i["reason"] for i in output.issues] == ["truncated: " + reason.format(cut=cut)]
    assert output.message.startswith("truncated: " + reason.format(cut=cut) + f" ({source.name} at bz2 stream at byte ")


def test_a_multistream_index_that_is_not_its_format_fails_the_cell(mirror: SampleMirror, home: Path, tmp_path: Path) -> None:
    index = tmp_path / mirror.multistream_index_path("enwiki").name
    index.write_bytes(bz2.decompress(mirror.multistream_index_path("enwiki").read_bytes()))  # the lines, not bz2

    with pytest.raises(InputFormatError) as caught:
        _documents(home, {"xml": mirror.multistream_path("enwiki"), "xml_index": index})

    assert (caught.value.source, caught.value.position, caught.value.reason) == (
        str(index), "byte 0", "not a bz2 file: the suffix says bz2 but the content starts like plain")


def test_a_multistream_dump_cut_before_its_first_page_fails_the_cell(mirror: SampleMirror, home: Path, tmp_path: Path) -> None:
    source, index = mirror.multistream_path("enwiki"), mirror.multistream_index_path("enwiki")
    first_page_stream = min(int(line.split(":", 1)[0]) for line in bz2.decompress(index.read_bytes()).decode().splitlines())
    xml = tmp_path / source.name
    xml.write_bytes(source.read_bytes()[:first_page_stream - 10])  # inside the siteinfo stream

    with pytest.raises(TruncatedInputError) as caught:
        _documents(home, {"xml": xml, "xml_index": index})

    assert (caught.value.source, caught.value.position, caught.value.reason) == (
        str(xml), f"byte {first_page_stream - 10}",
        f"the file ends before its first page stream (byte {first_page_stream} by {index.name})")


@pytest.mark.parametrize(("method", "name", "content", "position", "reason"), [
    ("page_props", "enwiki-20240501-page_props.sql.gz", b"INSERT INTO `page_props` VALUES (1,'wikibase_item','Q1',NULL);\n",
     "byte 0", "not a gz file: the suffix says gz but the content starts like plain"),
    ("page_props", "enwiki-20240501-page_props.sql.gz", gzip.compress(CIRRUS, mtime=0), "line 6 (the end)",
     "not a page_props SQL dump: no CREATE TABLE or INSERT INTO `page_props`"),
    ("wikidata", "wikidata-20240501-all.json.bz2", bz2.compress(XML), "line 1",
     f"not a Wikidata entity dump: it does not open with a [ line ({XML_HEAD[:60]!r})"),
])
def test_a_sitelinks_dump_that_is_not_its_format_fails_the_cell(
        home: Path, tmp_path: Path, method: SitelinkMethod, name: str, content: bytes, position: str, reason: str) -> None:
    path = tmp_path / name
    path.write_bytes(content)

    with Warehouse(home) as wh, pytest.raises(InputFormatError) as caught:
        ingest_sitelinks(wh, "en", "enwiki", method, FINGERPRINT, source_file=path)

    assert (caught.value.source, caught.value.position, caught.value.reason) == (str(path), position, reason)


def test_a_cut_page_props_dump_keeps_the_rows_before_the_cut(home: Path, tmp_path: Path) -> None:
    path = tmp_path / "enwiki-20240501-page_props.sql"
    path.write_text("INSERT INTO `page_props` VALUES (1,'wikibase_item','Q1',NULL),(2,'wikibase_item','Q2',NULL);\n"
                    "INSERT INTO `page_props` VALUES (3,'wikibase_item','Q3',NULL),(4,'wikibase_it", encoding="utf-8")

    with Warehouse(home) as wh:
        output = ingest_sitelinks(wh, "en", "enwiki", "page_props", FINGERPRINT, source_file=path)
        qids = [q for (q,) in wh.query("SELECT qid FROM sitelinks ORDER BY page_id")]

    assert (output.rows, qids) == (3, ["Q1", "Q2", "Q3"])
    assert output.message == f"truncated: the file ends inside an INSERT statement ({path.name} at line 2, byte 62)"
